//go:build !linux

package netproxy

import (
	"errors"
	"net"
	"os"
)

// errNotLinux is every answer here: the allowlist proxy serves the Linux
// bubblewrap backend only.
var errNotLinux = errors.New("the network allowlist needs Linux")

// Pair is not available here.
func Pair() (host *net.UnixConn, box *os.File, err error) { return nil, nil, errNotLinux }

// Channel is not available here.
func Channel(f *os.File) (*net.UnixConn, error) { return nil, errNotLinux }

// Relay is not available here.
func Relay(ln net.Listener, c *net.UnixConn, tag byte) error { return errNotLinux }

// Serve is not available here.
func (p *Proxy) Serve(c *net.UnixConn) error { return errNotLinux }
