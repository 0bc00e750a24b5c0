package landlock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/netproxy"
	"github.com/agentbox/agentbox/plan"
)

// proxyRun is the host side of network mode allowlist under Landlock: the
// box has no network of its own, so agentbox's proxy listens on the host's
// loopback and the box may connect by TCP only to its port (Apply). Only
// connections of the box's user are served (netproxy.SameUser).
type proxyRun struct {
	proxy *netproxy.Proxy
	ca    *netproxy.Authority // the run's own, when the proxy terminates TLS
	ln    net.Listener
	log   *os.File
	port  int
	env   []string // the proxy variables CMD gets
	done  chan struct{}
}

// startProxy starts the proxy for p's rules on 127.0.0.1, on a port the
// kernel chooses, and opens the network log.
func startProxy(p *plan.Plan, c *backend.Context) (*proxyRun, error) {
	rules, err := netproxy.Compile(p.Network.Allow, p.Network.Deny)
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	px := &proxyRun{done: make(chan struct{})}
	opts, err := netproxy.OptionsFor(p.Network)
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	px.ca = opts.Authority
	opts.Decided = func(d netproxy.Decided) {
		c.Emit(event.Event{Kind: event.Net, Allowed: event.Bool(d.Allowed), Proto: d.Proto, Target: d.Target, Reason: d.Reason})
	}
	if c.NetLog != "" {
		if px.log, err = os.OpenFile(c.NetLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err != nil {
			return nil, fmt.Errorf("opening the network log %s: %w", c.NetLog, err)
		}
		opts.Log = px.log
	}
	if px.proxy, err = netproxy.New(rules, opts); err != nil {
		px.stop()
		return nil, fmt.Errorf("network: %w", err)
	}
	if px.ln, err = net.Listen("tcp4", "127.0.0.1:0"); err != nil {
		px.stop()
		return nil, fmt.Errorf("network: starting the proxy: %w", err)
	}
	px.port = px.ln.Addr().(*net.TCPAddr).Port
	go func() {
		defer close(px.done)
		px.proxy.ServeListener(px.ln, netproxy.SameUser(os.Getuid()))
	}()
	proxy := "http://127.0.0.1:" + strconv.Itoa(px.port)
	// socks5h: the proxy resolves names.
	socks := "socks5h://127.0.0.1:" + strconv.Itoa(px.port)
	// The host's own services that an allow entry names are reached
	// directly (their ports are allowed); any other is refused.
	noProxy := "localhost,127.0.0.1,::1"
	px.env = []string{"HTTP_PROXY=" + proxy, "HTTPS_PROXY=" + proxy, "http_proxy=" + proxy, "https_proxy=" + proxy,
		"ALL_PROXY=" + socks, "all_proxy=" + socks, "NO_PROXY=" + noProxy, "no_proxy=" + noProxy}
	px.env = append(px.env, p.Network.ProxyVarsEnv("127.0.0.1:"+strconv.Itoa(px.port))...)
	return px, nil
}

// stop ends the proxy and every connection through it, and closes the log.
func (px *proxyRun) stop() {
	if px.proxy != nil {
		px.proxy.Close() // closes the listener too, and waits for its goroutines
	} else if px.ln != nil {
		px.ln.Close()
	}
	if px.log != nil {
		px.log.Close()
	}
}

// withVars returns env with vars set, replacing inherited copies: programs
// read the first copy of a name.
func withVars(env, vars []string) []string {
	set := map[string]bool{}
	for _, kv := range vars {
		name, _, _ := strings.Cut(kv, "=")
		set[name] = true
	}
	var out []string
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); !set[name] {
			out = append(out, kv)
		}
	}
	return append(out, vars...)
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
