// Package seccomp builds the syscall filter agentbox hands to bubblewrap
// with --add-seccomp-fd.
//
// The filter is a classic BPF program written by hand from
// golang.org/x/sys/unix constants, so every comparison it makes is visible
// here: it refuses every foreign architecture (and, on x86-64, the x32
// ABI), then refuses the syscalls of each blocked Group, and allows
// everything else. A policy can reopen a group by name with
// `[seccomp] allow = ["userns"]`.
//
// What belongs here: the group table (each with why it is blocked and the
// errno it returns), the BPF compiler, and the bytes and memfd bwrap reads.
// What does not: deciding which groups a run reopens (policy resolution),
// showing them (plan) and putting the fd on bwrap's command line (mount).
//
// The filter is built for linux/amd64 and linux/arm64 only; elsewhere Build
// returns an error wrapping ErrUnsupported, and Groups and Check still work
// so policies are validated the same way on every OS.
package seccomp
