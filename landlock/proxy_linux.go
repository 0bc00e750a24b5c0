package landlock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/netproxy"
	"github.com/agentbox/agentbox/plan"
)

// startProxy starts the host side of network mode allowlist under
// Landlock: the box has no network of its own, so agentbox's proxy listens
// on the host's loopback and the box may connect by TCP only to its port
// (Apply). Only connections of the box's user are served
// (netproxy.SameUser).
func startProxy(p *plan.Plan, c *backend.Context) (*netproxy.Loopback, error) {
	return netproxy.StartLoopback(p.Network, c.NetLog, func(d netproxy.Decided) {
		c.Emit(event.Event{Kind: event.Net, Allowed: event.Bool(d.Allowed), Proto: d.Proto, Target: d.Target, Reason: d.Reason,
			Unreachable: d.Unreachable})
	}, netproxy.SameUser(os.Getuid()))
}

// startRelays listens on the host's end of each published port that is
// not the box's own and connects each connection to the box's server at
// 127.0.0.1:BOXPORT: the box shares the host's network under Landlock, so
// agentbox itself dials it, and the box opens nothing.
func startRelays(relays []plan.Publish) ([]*netproxy.Publisher, error) {
	var pubs []*netproxy.Publisher
	for _, r := range relays {
		ln, err := net.Listen("tcp", net.JoinHostPort(r.Addr, strconv.Itoa(r.Port)))
		if err != nil {
			for _, pb := range pubs {
				pb.Close()
			}
			return nil, fmt.Errorf("publishing port %d of the box: %w", r.BoxPort, err)
		}
		to := "127.0.0.1:" + strconv.Itoa(r.BoxPort)
		pubs = append(pubs, netproxy.Publish(ln, func(ctx context.Context) (net.Conn, error) {
			return (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, "tcp4", to)
		}))
	}
	return pubs, nil
}

// writeBundle writes the box's certificate bundle at path, a new file (a
// file or link there already is refused: the folder may be shared), and
// returns what removes it after the run.
func writeBundle(path string, base []string, ca *netproxy.Authority) (func(), error) {
	if ca == nil {
		return nil, errors.New("the run has no certificate authority")
	}
	bundle, err := netproxy.Bundle(base, ca)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, fmt.Errorf("writing the box's certificate bundle: %w", err)
	}
	_, err = f.Write(bundle)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("writing the box's certificate bundle: %w", err)
	}
	return func() { os.Remove(path) }, nil
}
