package netproxy

import (
	"errors"
	"fmt"
	"net"
)

// maxListenConns bounds the connections served at once through
// ServeListener, as maxConns does for Serve: the proxy lives on the host,
// outside the box's limits.
const maxListenConns = 512

// ServeListener serves the connections accepted on ln, each only once
// allow has accepted its client; a refused connection is closed and counted
// as denied with allow's reason. This is how a box without a network
// namespace of its own (Windows: its user may reach only this loopback
// port) reaches the proxy; allow is what keeps every other local process
// out. It returns nil when ln is closed or the proxy is.
func (p *Proxy) ServeListener(ln net.Listener, allow func(net.Conn) error) error {
	if !p.track(ln) {
		ln.Close()
		return nil
	}
	defer p.untrack(ln)
	for {
		c, err := ln.Accept()
		if err != nil {
			if p.isClosed() || errors.Is(err, net.ErrClosed) {
				return nil
			}
			if retry(err) {
				continue
			}
			return fmt.Errorf("accepting: %w", err)
		}
		if err := allow(c); err != nil {
			c.Close()
			p.record("box", "", Decision{Reason: "refused client: " + err.Error()}, nil)
			continue
		}
		if p.serving.Add(1) > maxListenConns {
			p.serving.Add(-1)
			c.Close()
			p.record("box", "", Decision{Reason: fmt.Sprintf("more than %d connections open at once", maxListenConns)}, nil)
			continue
		}
		if !p.track(c) {
			p.serving.Add(-1)
			c.Close()
			return nil
		}
		go func() {
			defer p.serving.Add(-1)
			defer p.untrack(c)
			p.serveConn(c)
		}()
	}
}
