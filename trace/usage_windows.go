package trace

import (
	"time"

	"golang.org/x/sys/windows"
)

// usage is the CPU time of this process; Windows keeps no total for the
// children it waited for, so that is zero.
func usage() (self, kids time.Duration) {
	var c, e, k, u windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &c, &e, &k, &u); err != nil {
		return 0, 0
	}
	// Filetime counts 100 ns.
	t := func(f windows.Filetime) time.Duration {
		return time.Duration(int64(f.HighDateTime)<<32|int64(f.LowDateTime)) * 100
	}
	return t(k) + t(u), 0
}
