//go:build unix

package trace

import (
	"syscall"
	"time"
)

// usage is the CPU time of this process and of the children it has
// waited for.
func usage() (self, kids time.Duration) {
	var s, c syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &s)     //nolint:errcheck // cannot fail with these arguments
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &c) //nolint:errcheck
	return cpu(&s), cpu(&c)
}

func cpu(r *syscall.Rusage) time.Duration {
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}
