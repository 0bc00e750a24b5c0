package landlock

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	ll "github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/supervise"
)

// ABI returns the Landlock ABI version of the running kernel, 0 when
// Landlock is missing or disabled (landlock_create_ruleset with
// LANDLOCK_CREATE_RULESET_VERSION, see landlock(7)).
func ABI() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch errno {
	case 0:
		return int(v), nil
	case unix.ENOSYS:
		return 0, errors.New("the kernel has no Landlock (needs Linux 5.13 or later)")
	case unix.EOPNOTSUPP:
		return 0, errors.New("landlock is built into the kernel but not enabled: add it to the lsm= boot parameter")
	}
	return 0, fmt.Errorf("probing the landlock ABI: %w", errno)
}

// Apply confines the calling thread as a says, for good: call it in the
// child that is about to exec CMD, never in a process that goes on
// supervising. It drops capabilities first when a.DropCaps is set, then
// sets no_new_privs (without which a setuid program could escape the
// restriction) and restricts the thread with Landlock. Only the thread
// that calls execve(2) survives it, and CMD inherits that thread's
// restrictions.
//
// Apply locks the calling goroutine to its OS thread and leaves it locked:
// capabilities and the Landlock domain belong to a thread, so call
// syscall.Exec from the same goroutine.
//
// The ABI is pinned: the ruleset handles exactly the rights the assessment
// was made for, and Apply fails if the kernel has an older ABI than a.ABI
// rather than silently enforcing less than `agentbox plan` showed.
//
// Every rule is attached to a descriptor opened without following links
// (see carve): nothing a second box renames or swaps while this one starts
// can make a rule land on another file.
func Apply(a Assessment) error {
	return apply(a, supervise.NewPins())
}

// apply is Apply with the folders the supervisor prepared (pins), which
// are used as they were checked rather than opened again.
func apply(a Assessment, pins *supervise.Pins) error {
	runtime.LockOSThread()
	if a.DropCaps || os.Geteuid() == 0 {
		if err := dropCaps(); err != nil {
			return err
		}
	}
	ruleset, flags, err := newRuleset(a, pins)
	if err != nil {
		return err
	}
	defer unix.Close(ruleset)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	if err := llsys.LandlockRestrictSelf(ruleset, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}

// newRuleset builds a's rule set: a Landlock ruleset descriptor (close-on-
// exec) with every rule attached to a descriptor opened without following
// links, and the flags landlock_restrict_self takes with it.
func newRuleset(a Assessment, pins *supervise.Pins) (fd int, flags uint32, err error) {
	if a.ABI < 1 {
		return -1, 0, errors.New("landlock is not available on this kernel")
	}
	have, err := ABI()
	if err != nil {
		return -1, 0, err
	}
	if have < a.ABI {
		return -1, 0, fmt.Errorf("the kernel has landlock ABI %d, the plan was assessed for ABI %d", have, a.ABI)
	}
	cfg := ll.Config{HandledAccessFS: ll.AccessFSSet(a.HandledFS)}
	// With the TCP (and UDP) rights handled and nothing granted, every
	// connect and bind is refused; in allowlist mode, connecting to the
	// proxy's port and to the allowed host services' ports is granted.
	// The file system rules are added below, on descriptors.
	var lrules []ll.Rule
	if a.BlockTCP {
		cfg.HandledAccessNet |= ll.AccessNetSet(accessNetBindTCP | accessNetConnectTCP)
	}
	if a.Proxy {
		if a.ProxyPort < 1 || a.ProxyPort > 65535 {
			return -1, 0, errors.New("network allowlist: no proxy port to allow")
		}
		lrules = append(lrules, ll.ConnectTCP(uint16(a.ProxyPort)))
		for _, port := range a.ConnectPorts {
			lrules = append(lrules, ll.ConnectTCP(uint16(port)))
		}
	}
	for _, port := range a.BindPorts {
		lrules = append(lrules, ll.BindTCP(uint16(port)))
	}
	if a.BlockUDP {
		cfg.HandledAccessNet |= ll.AccessNetSet(accessNetBindUDP | accessNetConnectSendUDP)
	}
	if a.ScopeSignal {
		cfg.Scoped |= ll.ScopedSet(scopeSignal)
	}
	if a.ScopeAbstractUnix {
		cfg.Scoped |= ll.ScopedSet(scopeAbstractUnixSocket)
	}
	if a.Audit {
		// Landlock logs the denials of the process that restricts
		// itself, not those of the programs it then runs, unless told.
		cfg = cfg.EnableLoggingForSubprocesses()
	}
	ruleset, flags, err := cfg.NewRulesetFD(lrules...)
	if err != nil {
		return -1, 0, fmt.Errorf("landlock: %w", err)
	}
	err = carve(a.Grants, fdTree{pins: pins}, func(n node, r Rights) error {
		attr := llsys.PathBeneathAttr{ParentFd: n.fd, AllowedAccess: uint64(r)}
		if err := llsys.LandlockAddPathBeneathRule(ruleset, &attr, 0); err != nil {
			return fmt.Errorf("landlock rule %s on %s: %w", r, n.path, err)
		}
		return nil
	})
	if err != nil {
		unix.Close(ruleset)
		return -1, 0, err
	}
	grantTerminals(ruleset, a.HandledFS)
	return ruleset, flags, nil
}

// grantTerminals grants the terminal agentbox runs on, and no other: each
// terminal on descriptors 0, 1 and 2, by a rule on that descriptor itself
// (the node, by its identity, not a name that could be another by the time
// the box opens it). The host's /dev/pts holds every terminal of the
// machine, other sessions of the same user among them, and granting the
// folder would let the box open them, read what is typed there and turn
// their echo off. /dev/tty, the caller's controlling terminal, is granted
// with the other device nodes (devNodes).
func grantTerminals(ruleset int, handled Rights) {
	seen := map[[2]uint64]bool{}
	for fd := 0; fd <= 2; fd++ {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
			continue
		}
		if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
			continue // not a terminal
		}
		if seen[[2]uint64{st.Dev, st.Ino}] {
			continue
		}
		seen[[2]uint64{st.Dev, st.Ino}] = true
		// A rule the kernel refuses (a terminal on a filesystem Landlock
		// takes no rule for) grants nothing: the box still has the
		// terminal on its descriptors, only not by its path. Refused
		// access is the safe side, so the run goes on.
		attr := llsys.PathBeneathAttr{ParentFd: fd, AllowedAccess: uint64(terminalRights & handled)}
		llsys.LandlockAddPathBeneathRule(ruleset, &attr, 0)
	}
}

// dropCaps empties the bounding set (so exec cannot hand a root process its
// capabilities back), the ambient set, and the effective, permitted and
// inheritable sets, on the calling thread. bwrap does the same with
// --cap-drop ALL for root: a root process with CAP_SYS_MODULE could load a
// kernel module, which Landlock does not restrict.
func dropCaps() error {
	last := unix.CAP_LAST_CAP
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if err == unix.EPERM {
			// Without CAP_SETPCAP (root inside another box, a container
			// that dropped every capability) the bounding set cannot be
			// changed; it need not be: the permitted set is emptied below,
			// and no_new_privs, which the Landlock restriction sets right
			// after, keeps exec from granting anything beyond it.
			break
		}
		if err != nil && err != unix.EINVAL {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("dropping capabilities: %w", err)
	}
	return nil
}
