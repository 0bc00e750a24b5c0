package hostexec

import (
	"path"
	"strings"
)

// Mercurial's config grammar (mercurial/config.py), which Sapling shares.
// Its patterns are Python's over bytes, whose \s holds the vertical tab
// (\v) too; Go's does not, so the classes are spelled out: "%include x\v"
// includes "x" for hg.
var (
	hgSection  = lazyRegexp(`^\[([^\[]+)\]`)
	hgItem     = lazyRegexp(`^([^=\t\n\v\f\r ][^=]*?)[\t\n\v\f\r ]*=[\t\n\v\f\r ]*(.*[^\t\n\v\f\r ]|)`)
	hgCont     = lazyRegexp(`^[\t\n\v\f\r ]+([^\t\n\v\f\r ]|[^\t\n\v\f\r ].*[^\t\n\v\f\r ])[\t\n\v\f\r ]*$`)
	hgInclude  = lazyRegexp(`^%include[\t\n\v\f\r ]+([^\t\n\v\f\r ]|[^\t\n\v\f\r ].*[^\t\n\v\f\r ])[\t\n\v\f\r ]*$`)
	hgPyHook   = lazyRegexp(`^python:(.+):[^:]+$`)
	hgHookWord = lazyRegexp(`^(?:\.{0,2}/|~/|\$)`)
)

// HgrcRefs returns the files a Mercurial (or Sapling) config file in a
// repository's metadata folder makes hg read or run, relative to that
// folder unless absolute: the files it %includes (relative to it), the
// extensions it loads by path, the Python files of python: hooks and the
// path words of shell hooks (hg runs hooks and resolves extensions from
// the work tree's top, the folder above).
func HgrcRefs(data []byte) []string {
	var out []string
	section := ""
	item := ""
	values := map[string]string{} // section "\x00" item -> value
	var order []string
	set := func(k, v string) {
		if _, ok := values[k]; !ok {
			order = append(order, k)
		}
		values[k] = v
	}
	// Lines as Python's bytes.splitlines cuts them, which hg reads with:
	// at "\r\n", "\n" and a lone "\r" ("[hooks]\rx = ./y" is two lines).
	text := strings.ReplaceAll(strings.ReplaceAll(string(data), "\r\n", "\n"), "\r", "\n")
	for _, line := range strings.Split(text, "\n") {
		if item != "" {
			if m := hgCont().FindStringSubmatch(line); m != nil {
				set(item, values[item]+"\n"+m[1])
				continue
			}
		}
		item = ""
		trim := strings.TrimSpace(line)
		if trim == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if m := hgSection().FindStringSubmatch(line); m != nil {
			section = m[1]
			continue
		}
		if m := hgInclude().FindStringSubmatch(line); m != nil {
			out = append(out, m[1])
			continue
		}
		if m := hgItem().FindStringSubmatch(line); m != nil {
			item = section + "\x00" + m[1]
			set(item, m[2])
		}
	}
	top := func(p string) string {
		if path.IsAbs(p) || strings.HasPrefix(p, "~") || strings.HasPrefix(p, "$") {
			return p
		}
		return path.Join("..", p)
	}
	for _, k := range order {
		sec, _, _ := strings.Cut(k, "\x00")
		v := values[k]
		switch sec {
		case "extensions":
			if v != "" && !strings.HasPrefix(v, "!") {
				out = append(out, top(v))
			}
		case "hooks":
			if m := hgPyHook().FindStringSubmatch(v); m != nil {
				out = append(out, top(m[1]))
				continue
			}
			for _, w := range Words(v) {
				if strings.Contains(w, "/") || hgHookWord().MatchString(w) {
					out = append(out, top(w))
				}
			}
		}
	}
	return out
}
