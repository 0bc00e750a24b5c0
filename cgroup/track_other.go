//go:build !linux

package cgroup

import "fmt"

// Tracker is a run's cgroup on Linux; there is none elsewhere.
type Tracker struct{}

// Track always fails off Linux.
func Track(name string) (*Tracker, error) {
	return nil, fmt.Errorf("%w: cgroups exist only on Linux", ErrUnavailable)
}

// FD is -1: there is no cgroup.
func (t *Tracker) FD() int { return -1 }

// Dir is "": there is no cgroup.
func (t *Tracker) Dir() string { return "" }

// Kill does nothing off Linux.
func (t *Tracker) Kill() error { return nil }

// Close does nothing off Linux.
func (t *Tracker) Close() error { return nil }

// Kill does nothing off Linux.
func (g *Group) Kill() error { return nil }

// HasV2 is false off Linux.
func (g *Group) HasV2() bool { return false }
