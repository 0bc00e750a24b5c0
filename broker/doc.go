// Package broker decides, for a Landlock box, the calls that change a
// file's metadata: its mode (chmod, fchmod, fchmodat, fchmodat2), owner
// (chown, lchown, fchown, fchownat), times (utime, utimes, futimesat,
// utimensat), extended attributes (ACLs among them: setxattr, removexattr
// and their l-, f- and -at forms) and attribute flags (chattr's
// FS_IOC_SETFLAGS, FS_IOC_FSSETXATTR). Landlock has no right for any of
// them, so a box could otherwise change them on every file its user owns
// (as root: every file), outside its writable roots too: make a root-owned
// interpreter setuid, forge times, lock the user out of ~/.ssh with a mode.
//
// The box's seccomp filter hands each such call to the supervisor (seccomp
// user notification: package fslog carries the listener). The broker never
// lets the call go on: the path or descriptor the call names is resolved
// once, by the broker, to a descriptor (a path through the caller's root
// and working folder or its directory descriptor, with no magic link
// followed; a descriptor copied from the caller with pidfd_getfd), and
// everything after works on that descriptor: the check, then the change.
// So nothing the box renames or swaps afterwards can make the change land
// on another file than the one checked, and the kernel never looks the
// path up a second time.
//
// The check: the file, or a folder above it (found by "..", from the
// descriptor, never by name), is one the box's Landlock rule set grants
// write rights on (the writable roots, minus what is carved out of them;
// device nodes are not), by device and inode. A file the box cannot move
// into or out of its writable roots (Landlock refuses a rename or link that
// would change its rights) keeps the answer while the check runs. If it
// passes, the broker performs the call itself on a thread that has the
// caller's credentials and, for root, no capability (as the box's processes
// have none), so the kernel's own permission checks (owner, group
// membership, ...) are the ones the box would meet, and the call returns
// what the kernel answered. If it fails, the call fails with EACCES, as a
// Landlock refusal does.
//
// setuid and setgid bits never get here: the box's filter refuses them in
// every chmod (seccomp group setuid). file_setattr (Linux 6.17) and the
// rarer attribute ioctls are refused by the filter outright.
//
// One more call comes here that is no metadata: TIOCGPTPEER, the ioctl
// that opens the terminal of a pseudo-terminal master. The box may not
// open the host's /dev/pts (every session's terminal is there), and the
// kernel checks the peer's open against that path, so the broker opens
// the peer of a master the caller holds (copied with pidfd_getfd, never
// reopened by path) and installs it in the caller (ptyPeer).
//
// What does not belong here: carrying the notifications (package fslog),
// the write grant (package landlock works it out from its rule set).
package broker
