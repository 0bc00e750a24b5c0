//go:build !linux

package cgroup

import "fmt"

// Probe reports nothing available: cgroups are Linux only.
func Probe() Availability {
	r := Controller{Reason: "cgroups exist only on Linux"}
	return Availability{Pids: r, Memory: r}
}

// Enter always fails off Linux; the Windows backend limits a run with its
// job object instead.
func Enter(name string, l Limits) (*Group, error) {
	return nil, fmt.Errorf("%w: cgroups exist only on Linux", ErrUnavailable)
}

// Release does nothing off Linux.
func (g *Group) Release() error { return nil }

// Close does nothing off Linux.
func (g *Group) Close() error { return nil }

// Hits reports nothing off Linux.
func (g *Group) Hits() []Hit { return nil }

// Own fails: cgroups are Linux's.
func Own(c string) (string, uint64, error) { return "", 0, fmt.Errorf("cgroups exist only on Linux") }
