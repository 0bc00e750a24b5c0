//go:build !linux || !(amd64 || arm64)

package seccomp

import (
	"errors"
	"testing"
)

func TestBuildUnsupported(t *testing.T) {
	if _, err := Build(nil); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Build(nil) error = %v, want ErrUnsupported", err)
	}
	// A typo is still reported as a typo, not as the platform's fault.
	if _, err := Build([]string{"nope"}); err == nil || errors.Is(err, ErrUnsupported) {
		t.Errorf("Build(nope) error = %v, want an unknown group error", err)
	}
}
