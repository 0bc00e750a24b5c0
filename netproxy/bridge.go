package netproxy

import (
	"errors"
	"net"
)

// Bridge is the in-box end: it accepts on ln (127.0.0.1:PORT inside the
// box's network namespace) and forwards each connection byte for byte to the
// proxy's unix socket at socketPath, in both directions, with half-close.
// It does not parse anything; the proxy sees exactly what the client sent.
// It returns nil once ln is closed.
func Bridge(ln net.Listener, socketPath string) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			if retry(err) {
				continue
			}
			return err
		}
		go func() {
			u, err := net.Dial("unix", socketPath)
			if err != nil {
				c.Close() // the client sees a reset: no proxy, no network
				return
			}
			pipe(c, u)
		}()
	}
}
