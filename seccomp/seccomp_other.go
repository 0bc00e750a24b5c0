//go:build !linux || !(amd64 || arm64)

package seccomp

import (
	"fmt"
	"os"
	"runtime"
)

// Build validates allow and returns an error wrapping ErrUnsupported: seccomp
// is a Linux feature, and this package has syscall tables for linux/amd64
// and linux/arm64 only.
func Build(allow []string, extra ...Group) (*Filter, error) {
	if err := Check(allow); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: %s/%s (seccomp filters are built for linux/amd64 and linux/arm64)", ErrUnsupported, runtime.GOOS, runtime.GOARCH)
}

// BuildArgs validates args and returns an error wrapping ErrUnsupported.
func BuildArgs(args []string) (*Filter, error) {
	allow, extra, err := ParseArgs(args)
	if err != nil {
		return nil, err
	}
	return Build(allow, extra...)
}

// Memfd returns an error wrapping ErrUnsupported.
func (f *Filter) Memfd() (*os.File, error) {
	return nil, fmt.Errorf("%w: %s/%s", ErrUnsupported, runtime.GOOS, runtime.GOARCH)
}
