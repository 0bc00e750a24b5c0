// Package fslog is the filesystem violation log: for each operation a boxed
// process is refused because of the policy (a write to a read-only path, a
// create in a read-only folder, an open of a hidden or denied path) it
// records the process, the path, the errno and the rule that refused it.
// Recording never changes what the kernel decides: agentbox only looks,
// and the kernel alone enforces.
//
// It has three mechanisms; the plan names the one a run uses (plan.Log):
//
// The preloaded log (Preload), the default, for both Linux backends: a
// small library (preload/preload.c, built reproducibly and embedded)
// that agentbox loads into every dynamically linked program of the box
// through LD_PRELOAD wraps the C library's path calls that can be refused,
// calls the real one, and only when it fails with EROFS, EACCES, EPERM or
// EBUSY sends one datagram to a socket in the run's own folder (beside
// the library, which the box sees at the same path). A call that succeeds
// costs the program a compare and a branch; agentbox does nothing at all
// for it. Each record is a report, not evidence: the kernel names its
// sender (SCM_CREDENTIALS), and agentbox resolves the path in the box's
// view and asks the plan whether it refuses that operation there, as for
// seccomp notification; only then is it recorded. A process can unload
// the library, call the kernel directly, or send made-up records: none of
// that changes what the kernel enforces, and a made-up record can only be
// of an operation the plan really refuses. Static programs (Go binaries),
// direct system calls and programs started with LD_PRELOAD removed are
// not seen; the complete mode below sees them. Each process sends at most
// 1,000 records a second (after a burst of 256), agentbox judges at most
// 2,000 a second in all, and what is not sent or not judged is counted
// and said at the end.
//
// The complete mode ([log] filesystem = "complete") is one of these two:
//
// Seccomp user notification (Notify), for both Linux backends, as root and
// not. A second seccomp filter, installed by agentbox's own code in the
// box right before CMD starts, stops each filesystem call that may be
// refused and hands it to the supervisor on the host: every call that
// creates, removes, renames, links, truncates or changes a file's metadata
// by name, every open whose flags write, create or truncate, every
// openat2 (its flags are out of the filter's sight), and, only with reads
// (plan.Log.Reads), every open for reading too, since a read can be
// refused only by a hidden or denied path but reading is most of what a
// build does. Each stopped call costs a round trip between the box and the
// supervisor, two context switches at least (about 15 µs on a small VM
// with an empty handler), whatever the supervisor does with it; a filter
// cannot look at a path, so it cannot tell a call in a writable root from
// one that will be refused, and this cost is per call watched. The supervisor reads the path from the calling
// process, resolves it in the box's view of the filesystem as the kernel
// would (symbolic links included, through the process's own root, working
// folder and descriptors), asks the plan which rule covers what it
// resolves to and what the kernel answers for this call there, and lets the
// call continue unchanged (SECCOMP_USER_NOTIF_FLAG_CONTINUE). The call is
// never answered by the supervisor and never held on a decision of its
// own: the kernel makes the call exactly as it would have without the log.
//
// What this can and cannot guarantee: every such call that reaches the
// kernel is seen, by the kernel's own account of which process and which
// call it is: the box cannot hide a call from the supervisor (a filter of
// its own cannot take the notifications: the log's filter refuses new
// notification listeners, and a filter that refuses a call stops it before
// the kernel looks at any path, so nothing is refused by the policy then).
// But the record is of an attempt, judged before the call runs, not of its
// outcome: the path is read from memory the box controls, and the kernel
// reads it again after the supervisor let the call go on. A box that
// changes that memory (from a second thread, or a process sharing it) or
// the folders on the path (a second process swapping a link) in between
// can make the record name another path than the one the kernel used, or
// predict another outcome. That is the whole of what it can do: it can
// turn a refused call into a record of a different call, which it could
// have made for real, or into no record; it cannot make the kernel allow
// anything, cannot write the log, and cannot make records of calls it did
// not make. The errno recorded is what the kernel answers under the rule
// for the state the supervisor saw.
//
// Landlock's audit (Audit), for the Landlock backend run as root when the
// kernel's audit is on and Landlock has ABI 7. Landlock itself reports each
// denial to the kernel's audit subsystem with the path it resolved, and
// the kernel adds the call, its result and the process; the supervisor
// reads these records from the audit multicast group, which needs
// CAP_AUDIT_READ (root). These are the kernel's own records of outcomes:
// the box can neither fake nor alter them, and the kernel counts every
// denial of the run's Landlock domain even when its queue drops records,
// which the log then says.
//
// Flooding is bounded: identical refusals are recorded once, the audit log
// keeps a fixed number of events per run and counts the rest, the
// preloaded log's records are rate-limited and never block the program,
// and a box that makes many refused calls under seccomp notification only
// slows itself down.
//
// What does not belong here: which rule refuses what (package refusal
// judges an Attempt against the plan), the audit log itself (package
// event), starting the box (the backends).
package fslog
