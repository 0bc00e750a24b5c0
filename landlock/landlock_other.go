//go:build !linux

package landlock

import "errors"

// errNotLinux says what to use instead of Landlock on this OS.
var errNotLinux = errors.New("landlock is a Linux feature: use the windows or seatbelt backend on this system")

// ABI returns 0 and an error: there is no Landlock outside Linux.
func ABI() (int, error) { return 0, errNotLinux }

// Apply fails: there is no Landlock outside Linux.
func Apply(a Assessment) error { return errNotLinux }

// Exec fails: there is no Landlock outside Linux.
func Exec(a Assessment, argv, env []string) error { return errNotLinux }
