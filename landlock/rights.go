package landlock

import (
	"fmt"
	"slices"
	"strings"
)

// Rights is a set of Landlock filesystem access rights. The bits are the
// kernel's LANDLOCK_ACCESS_FS_* values (include/uapi/linux/landlock.h), which
// are a stable ABI, so the pure part of this package needs no x/sys.
type Rights uint64

// The kernel's filesystem access rights, in bit order.
const (
	rightExecute    Rights = 1 << iota // ABI 1
	rightWriteFile                     // ABI 1
	rightReadFile                      // ABI 1
	rightReadDir                       // ABI 1
	rightRemoveDir                     // ABI 1: checked on the parent folder
	rightRemoveFile                    // ABI 1: checked on the parent folder
	rightMakeChar                      // ABI 1: checked on the parent folder
	rightMakeDir                       // ABI 1
	rightMakeReg                       // ABI 1
	rightMakeSock                      // ABI 1
	rightMakeFifo                      // ABI 1
	rightMakeBlock                     // ABI 1
	rightMakeSym                       // ABI 1
	rightRefer                         // ABI 2: rename or link between folders
	rightTruncate                      // ABI 3
	rightIoctlDev                      // ABI 5: ioctl on opened device files
)

// The sets Assess grants.
const (
	// readRights: open and execute files, list folders.
	readRights = rightExecute | rightReadFile | rightReadDir
	// writeRights: everything that changes a file or a folder's entries.
	// Refer is included so that mv between writable folders keeps working:
	// once refer is handled (ABI 2+), cross-folder renames and links need it
	// on both sides, and the kernel still refuses a move that would give the
	// file more rights than it had.
	writeRights = rightWriteFile | rightRemoveDir | rightRemoveFile | rightMakeChar |
		rightMakeDir | rightMakeReg | rightMakeSock | rightMakeFifo | rightMakeBlock |
		rightMakeSym | rightRefer | rightTruncate
	// devRights: the allowed device nodes. Truncate because a shell's
	// "> /dev/null" opens with O_TRUNC; ioctl_dev because terminals need
	// TCGETS/TIOCGWINSZ, which are not in Landlock's always-allowed ioctl list.
	// read_dir means nothing on a file (grantNode leaves it out).
	devRights = rightReadFile | rightWriteFile | rightTruncate | rightIoctlDev | rightReadDir
	// terminalRights: the terminal agentbox runs on (grantTerminals).
	terminalRights = devRights & fileRights
	// fileRights are the only rights the kernel accepts on a rule for a
	// non-directory (landlock_add_rule fails with EINVAL otherwise).
	fileRights = rightExecute | rightWriteFile | rightReadFile | rightTruncate | rightIoctlDev
	// basicWrite is writeRights without the rights added after ABI 1.
	basicWrite = writeRights &^ (rightRefer | rightTruncate)
)

// handledFS returns the filesystem rights agentbox restricts at a Landlock
// ABI version. It stops at the ABI 5 set on purpose: ABI 9's resolve_unix
// would also refuse connect(2) to pathname UNIX sockets outside the sandbox
// (ssh-agent, the D-Bus session bus), which bubblewrap does not block either.
func handledFS(abi int) Rights {
	var r Rights
	if abi >= 1 {
		r |= readRights | basicWrite
	}
	if abi >= 2 {
		r |= rightRefer
	}
	if abi >= 3 {
		r |= rightTruncate
	}
	if abi >= 5 {
		r |= rightIoctlDev
	}
	return r
}

var rightNames = []string{
	"execute", "write_file", "read_file", "read_dir", "remove_dir", "remove_file",
	"make_char", "make_dir", "make_reg", "make_sock", "make_fifo", "make_block",
	"make_sym", "refer", "truncate", "ioctl_dev",
}

// String names the rights: "read" for execute+read_file+read_dir, "write" for
// write_file+remove_*+make_*, then any other right by its kernel name.
func (r Rights) String() string {
	var out []string
	if r&readRights == readRights {
		out = append(out, "read")
		r &^= readRights
	}
	if r&basicWrite == basicWrite {
		out = append(out, "write")
		r &^= basicWrite
	}
	for i, name := range rightNames {
		if r&(1<<i) != 0 {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ",")
}

// MarshalText makes Rights print as its String in JSON.
func (r Rights) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads what MarshalText wrote, so the child applies exactly
// the rights `agentbox plan --json` shows.
func (r *Rights) UnmarshalText(text []byte) error {
	var out Rights
	for _, name := range strings.Split(string(text), ",") {
		switch name {
		case "none", "":
		case "read":
			out |= readRights
		case "write":
			out |= basicWrite
		default:
			i := slices.Index(rightNames, name)
			if i < 0 {
				return fmt.Errorf("unknown landlock right %q", name)
			}
			out |= 1 << i
		}
	}
	*r = out
	return nil
}

// The kernel's network access rights (LANDLOCK_ACCESS_NET_*) and IPC scopes
// (LANDLOCK_SCOPE_*).
const (
	accessNetBindTCP        = 1 << 0 // ABI 4
	accessNetConnectTCP     = 1 << 1 // ABI 4
	accessNetBindUDP        = 1 << 2 // ABI 10
	accessNetConnectSendUDP = 1 << 3 // ABI 10

	scopeAbstractUnixSocket = 1 << 0 // ABI 6
	scopeSignal             = 1 << 1 // ABI 6
)
