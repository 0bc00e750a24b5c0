package refusal

import (
	"bufio"
	"os"
	"strings"
	"sync"
)

// hostMounts reads the mount table of this process's mount namespace
// (/proc/self/mountinfo) once.
var hostMounts = sync.OnceValues(func() ([]MountPoint, bool) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, false
	}
	defer f.Close()
	var out []MountPoint
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 5 || sep < 0 || sep+1 >= len(fields) {
			return nil, false
		}
		out = append(out, MountPoint{Path: unescapeMount(fields[4]), Type: fields[sep+1]})
	}
	if sc.Err() != nil {
		return nil, false
	}
	return out, true
})

// unescapeMount undoes the octal escapes mountinfo writes for space, tab,
// newline and backslash.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] >= '0' && s[i+1] <= '3' {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
