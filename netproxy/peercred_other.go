//go:build !linux

package netproxy

import (
	"errors"
	"net"
	"os"
)

// peerUID is not available here, so every connection is refused: the
// allowlist proxy serves the Linux bubblewrap backend only.
func peerUID(c *net.UnixConn) (int, error) {
	return -1, errors.New("peer credentials are not available on this OS; the network allowlist needs Linux")
}

// alive cannot be told here, so sweep leaves every folder alone.
func alive(pid int) bool { return true }

// ownedByUs cannot be told here either.
func ownedByUs(fi os.FileInfo) bool { return false }
