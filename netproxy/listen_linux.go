package netproxy

import (
	"fmt"
	"net"
)

// ServeListener serves the proxy on a TCP listener, for a box that has no
// network of its own (the Landlock backend: the box shares the host's
// network and may connect only to the listener's port). Every connection
// must pass peer first (agentbox checks that it comes from the box's user)
// or is closed unread. ServeListener returns when the listener is closed
// (Close closes it). Unlike Serve, any process on the host that passes
// peer can reach the proxy this way; it gets the same rules as the box.
func (p *Proxy) ServeListener(ln net.Listener, peer func(net.Conn) error) error {
	if !p.track(ln) {
		ln.Close()
		return nil
	}
	defer p.untrack(ln)
	for {
		c, err := ln.Accept()
		if err != nil {
			if p.isClosed() {
				return nil
			}
			if retry(err) {
				continue
			}
			return fmt.Errorf("accepting: %w", err)
		}
		if peer != nil {
			if err := peer(c); err != nil {
				c.Close()
				p.record("box", c.RemoteAddr().String(), Decision{Reason: "refused a connection from outside the box: " + err.Error()}, nil)
				continue
			}
		}
		if p.serving.Add(1) > maxConns {
			p.serving.Add(-1)
			c.Close()
			p.record("box", "", Decision{Reason: fmt.Sprintf("more than %d connections open at once", maxConns)}, nil)
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
