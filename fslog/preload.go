package fslog

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/plan"
)

// Preload is the preloaded log: a library agentbox preloads into the
// box's dynamically linked programs reports each call that failed with
// EROFS, EACCES, EPERM or EBUSY (see preload/preload.c), and agentbox
// judges each report against the plan.
const Preload = "preload"

// PreloadCommand is the hidden subcommand that writes the preloaded log's
// libraries into a folder (WritePreload), for `agentbox plan --argv`.
const PreloadCommand = "__fslog-preload"

// PlanPreload gives the run of p, which records its refusals with the
// preloaded log, the folder that holds the library and the socket: a
// fresh folder beside agentbox's temporary folders (in
// $XDG_RUNTIME_DIR/agentbox or agentbox's state folder), which the box
// sees at the same path, read-only. It returns why the preloaded log
// cannot run, and changes nothing then.
func PlanPreload(p *plan.Plan) string {
	if p.Tmp.Base == "" || p.RunID == "" {
		return "no folder of agentbox's own for it"
	}
	dir := filepath.Join(filepath.Dir(p.Tmp.Base), "fslog-"+p.RunID)
	// LD_PRELOAD is a list split at spaces and colons, and the dynamic
	// linker reads $ as the start of a name it substitutes.
	if i := strings.IndexAny(dir, " :$\t\n\\"); i >= 0 {
		return "its folder " + dir + " holds " + quoteChar(dir[i]) + ", which LD_PRELOAD cannot name"
	}
	if why := seenInBox(p, dir); why != "" {
		return why
	}
	p.Log.Preload = dir
	p.Prepare = append(p.Prepare, plan.Prepare{Path: dir, Mode: 0o700, Fresh: true, Private: true,
		Origin: plan.Origin{Key: "log.filesystem (the preloaded log's library and socket)"}})
	return ""
}

func quoteChar(c byte) string {
	switch c {
	case ' ':
		return "a space"
	case '\t':
		return "a tab"
	case '\n':
		return "a newline"
	}
	return "\"" + string(c) + "\""
}

// seenInBox says why the box would not see dir at its own path, read-only
// or writable: the last mount that holds it must be the host's root or a
// folder bound at its own path.
func seenInBox(p *plan.Plan, dir string) string {
	for i := len(p.Mounts) - 1; i >= 0; i-- {
		m := p.Mounts[i]
		if m.Op == plan.RemountRO || !plan.Within(dir, m.Path) {
			continue
		}
		if (m.Op == plan.ROBind || m.Op == plan.Bind || m.Op == plan.Pin) && m.Src() == m.Path && m.Access != plan.Hidden {
			return ""
		}
		return "its folder " + dir + " is not visible in the box (" + m.Path + " is " + string(m.Op) + ")"
	}
	return "its folder " + dir + " is not visible in the box"
}

// The operations of a record, in preload.c's order (OP_READ is 1).
var recordOps = []Op{Read, Write, Create, Mkdir, Remove, Rmdir, Rename, Link, Symlink, Truncate, Chmod, Chown, Utime, Xattr}

// The flags of a record (preload.c's F_*).
const (
	recNoFollow = 1 << iota
	recExcl
	recTrunc
)

// O_EXCL and O_TRUNC as Attempt.Flags holds them (asm-generic/fcntl.h, the
// same on x86-64, i386 and arm64).
const (
	openExcl  = 0o200
	openTrunc = 0o1000
)

// record is one report of the preloaded library.
type record struct {
	op       Op
	noFollow bool
	flags    uint64
	errno    uint32
	lost     uint32
	call     string
	// prog is the program's name as the process gives it (argv[0]'s
	// last part), for when the process is gone before agentbox looks.
	prog string
	base [2]string
	path [2]string
}

// maxRecordPath bounds each string of a record: the kernel refuses a
// longer path (PATH_MAX), so a longer one is no report of a real call.
const maxRecordPath = 4096

// parseRecord reads one datagram: a 16-byte header ("fsl1", the
// operation, its flags, two bytes of padding, the errno and the count of
// refusals not reported before it, in the machine's byte order, which is
// little-endian on every architecture the library is built for), then
// six NUL-terminated strings: the call, the folder the first path is
// relative to, the first path, the same two for the second path, and the
// program's name. A datagram that is anything else is no record.
func parseRecord(b []byte) (record, bool) {
	var r record
	if len(b) < 16 || string(b[:4]) != "fsl1" {
		return r, false
	}
	op := int(b[4])
	if op > len(recordOps) {
		return r, false
	}
	if op > 0 {
		r.op = recordOps[op-1]
	}
	fl := b[5]
	r.noFollow = fl&recNoFollow != 0
	if fl&recExcl != 0 {
		r.flags |= openExcl
	}
	if fl&recTrunc != 0 {
		r.flags |= openTrunc
	}
	r.errno = binary.LittleEndian.Uint32(b[8:])
	r.lost = binary.LittleEndian.Uint32(b[12:])
	fields := bytes.Split(b[16:], []byte{0})
	// Six strings, each ended by a NUL: seven fields, the last empty.
	if len(fields) != 7 || len(fields[6]) != 0 {
		return r, false
	}
	for _, f := range fields[:6] {
		if len(f) > maxRecordPath {
			return r, false
		}
	}
	if op == 0 {
		// Only a count of what was lost (a process that lost some, at
		// its exit): no call, no paths.
		for _, f := range fields[:6] {
			if len(f) != 0 {
				return record{}, false
			}
		}
		return record{lost: r.lost}, true
	}
	r.call = string(fields[0])
	if r.call == "" || len(r.call) > 32 || strings.Trim(r.call, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
		return r, false
	}
	r.base = [2]string{string(fields[1]), string(fields[3])}
	r.path = [2]string{string(fields[2]), string(fields[4])}
	if len(fields[5]) <= 64 {
		r.prog = string(fields[5])
	}
	if r.path[0] == "" {
		return r, false
	}
	two := r.op == Rename || r.op == Link
	if two != (r.path[1] != "") {
		return r, false
	}
	return r, true
}

// absolute is the record's i-th path made absolute: as it is when it
// starts with /, else relative to the folder the library named; "" when
// that folder is not known.
func (r record) absolute(i int) string {
	p := r.path[i]
	switch {
	case strings.HasPrefix(p, "/"):
		return p
	case r.base[i] == "/":
		return "/" + p
	case strings.HasPrefix(r.base[i], "/"):
		return r.base[i] + "/" + p
	}
	return ""
}

// key is what makes two records the same report: the call, what it did,
// and its paths.
func (r record) key() string {
	return r.call + "\x00" + string(r.op) + "\x00" + r.absolute(0) + "\x00" + r.absolute(1) + "\x00" + r.path[0] + "\x00" + r.path[1]
}
