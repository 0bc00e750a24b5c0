package fslog

import "github.com/agentbox/agentbox/event"

// The mechanisms, as plan.Log.Filesystem names them; "" is no log.
const (
	// Notify is seccomp user notification: attempts judged against the
	// plan before the kernel runs them.
	Notify = "seccomp-notify"
	// Audit is Landlock's own denial records, read from the kernel's audit.
	Audit = "landlock-audit"
)

// Op is what a filesystem call tries to do to a path.
type Op string

// The operations the log tells apart.
const (
	Read     Op = "read"     // open for reading, or list a folder
	Write    Op = "write"    // open an existing file to write or truncate it
	Create   Op = "create"   // make a new file (open with O_CREAT, mknod)
	Mkdir    Op = "mkdir"    // make a folder
	Remove   Op = "remove"   // remove a file
	Rmdir    Op = "rmdir"    // remove a folder
	Rename   Op = "rename"   // move an entry (the first target is its old place)
	Link     Op = "link"     // make a hard link (the second target is the new name)
	Symlink  Op = "symlink"  // make a symbolic link
	Truncate Op = "truncate" // truncate by name
	Chmod    Op = "chmod"    // change the mode
	Chown    Op = "chown"    // change the owner
	Utime    Op = "utime"    // change the times
	Xattr    Op = "xattr"    // set or remove an extended attribute
)

// Target is one path of a call, as the process gave it and as it resolves
// in the box's view when the supervisor looked.
type Target struct {
	// Given is the path as the process passed it (read from its memory).
	Given string
	// Real is where it leads: the resolved path of the object when it
	// exists, else the resolved parent folder joined with the last name,
	// else the path made absolute without resolving links.
	Real string
	// Exists says the object was there; Dir that it is a folder.
	Exists, Dir bool
	// Parent says the folder it would be in was there.
	Parent bool
	// Folder says Real is the folder an entry was to be made in or
	// removed from, without the entry's name: what Landlock's audit
	// records name for such a call.
	Folder bool
}

// Attempt is one filesystem call of a boxed process.
type Attempt struct {
	// Pid is the calling thread's ID on the host.
	Pid int
	// Syscall is the call's name (openat, mkdir, …).
	Syscall string
	// Op is what the call does.
	Op Op
	// Flags are the call's open flags, for the open calls.
	Flags uint64
	// Targets are its paths: one, or two for rename and link (the old
	// place, then the new one).
	Targets []Target
	// Errno is the kernel's own answer when the mechanism knows it
	// (Audit); "" when the judge predicts it (Notify).
	Errno string
}

// Judge decides whether the policy refuses an attempt, and if it does
// returns the Denied event that records it (Path, Op, Errno, Rule, and the
// smallest change that would allow it in Detail). The log fills in Process.
type Judge func(Attempt) (event.Event, bool)
