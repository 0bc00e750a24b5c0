//go:build !linux || !(amd64 || arm64)

package broker

import (
	"errors"

	"github.com/agentbox/agentbox/fslog"
)

// FileID is a file by device and inode.
type FileID struct{ Dev, Ino uint64 }

// Broker needs Linux (seccomp user notification) on amd64 or arm64.
type Broker struct{}

// New fails here.
func New(grant []FileID) (*Broker, error) {
	return nil, errors.New("the metadata broker needs Linux on amd64 or arm64")
}

// Prepare fails here.
func (b *Broker) Prepare() error { return errors.New("no broker here") }

// Close does nothing.
func (b *Broker) Close() {}

// Answer refuses: there is no broker here.
func (b *Broker) Answer(req fslog.Request, valid func() bool) (int64, int) { return 0, 1 }
