package netproxy

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"
)

// Publisher serves a published port: the host's end, a listener on the
// host's loopback (or an address the user named), whose connections are
// each joined to one into the box. Only connections come in this way; the
// box's side of each is made by agentbox (Proxy.DialBox under bubblewrap:
// a socket from the box's init, connected by agentbox to the box's own
// loopback port), so a box can answer through a published port but never
// open anything with it.
type Publisher struct {
	ln   net.Listener
	dial func(context.Context) (net.Conn, error)

	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
	once   sync.Once
}

// maxPublished bounds the connections open at once through one published
// port: agentbox serves them on the host, outside the box's limits.
const maxPublished = 512

// Publish serves ln until Close: each connection accepted there is joined,
// both ways, to one dial makes. A connection dial cannot make (nothing
// listens in the box yet) is closed at once, as a closed port would be.
func Publish(ln net.Listener, dial func(context.Context) (net.Conn, error)) *Publisher {
	pb := &Publisher{ln: ln, dial: dial, conns: map[net.Conn]struct{}{}}
	pb.ctx, pb.cancel = context.WithCancel(context.Background())
	pb.wg.Add(1)
	go pb.serve()
	return pb
}

func (pb *Publisher) serve() {
	defer pb.wg.Done()
	for {
		c, err := pb.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || pb.ctx.Err() != nil {
				return
			}
			if retry(err) {
				continue
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if !pb.track(c) {
			c.Close()
			continue
		}
		go func() {
			defer pb.wg.Done()
			defer pb.untrack(c)
			in, err := pb.dial(pb.ctx)
			if err != nil {
				return
			}
			if !pb.track(in) {
				in.Close()
				return
			}
			defer pb.wg.Done()
			defer pb.untrack(in)
			pipe(c, in)
		}()
	}
}

// track registers c so Close reaches it; false once closed or full.
func (pb *Publisher) track(c net.Conn) bool {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	if pb.ctx.Err() != nil || len(pb.conns) >= 2*maxPublished {
		return false
	}
	pb.conns[c] = struct{}{}
	pb.wg.Add(1)
	return true
}

func (pb *Publisher) untrack(c net.Conn) {
	c.Close()
	pb.mu.Lock()
	delete(pb.conns, c)
	pb.mu.Unlock()
}

// Addr is the host's end.
func (pb *Publisher) Addr() net.Addr { return pb.ln.Addr() }

// Close stops the published port: the listener and every connection, and
// waits for the goroutines.
func (pb *Publisher) Close() error {
	pb.once.Do(func() {
		pb.mu.Lock()
		pb.cancel()
		pb.ln.Close()
		for c := range pb.conns {
			c.Close()
		}
		pb.mu.Unlock()
		pb.wg.Wait()
	})
	return nil
}
