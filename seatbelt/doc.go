// Package seatbelt is the macOS backend: it turns the frozen plan into a
// Seatbelt (SBPL) profile that denies everything by default and allows
// reads of the host less what the plan hides, writes under the writable
// roots less their read-only paths, guards and control files, the exact
// device nodes a command needs, and the network the plan allows; then
// runs the command under /usr/bin/sandbox-exec with that profile.
//
// The translation (Translate, Profile, Complete) is plain data and is
// tested on every system; only running (run_darwin.go) needs a Mac.
// Seatbelt has no mount namespace: the box sees the real paths, a hidden
// path's name stays visible in its folder, and the box's temporary folder
// is a folder of its own named by TMPDIR rather than a new /tmp.
package seatbelt
