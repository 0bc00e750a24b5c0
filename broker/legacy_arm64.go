//go:build linux

package broker

import (
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/fslog"
)

// legacy: arm64 has only the *at calls.
func legacy(b *Broker, c *caller, req fslog.Request, valid func() bool) (int64, int) {
	return 0, int(unix.ENOSYS)
}
