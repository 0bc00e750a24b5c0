package netproxy

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/plan"
)

// Loopback is the proxy of a run whose box has no network of its own
// (Landlock, Seatbelt): it listens on the host's 127.0.0.1, on a port the
// kernel chooses, and the box may connect by TCP only to that port.
type Loopback struct {
	Proxy *Proxy
	// CA is the run's own authority, when the proxy terminates TLS.
	CA *Authority
	// Port is the proxy's port on 127.0.0.1.
	Port int
	// Env are the proxy variables the box's command gets.
	Env []string
	ln  net.Listener
	log *os.File
}

// StartLoopback starts the proxy for network n on 127.0.0.1, with the
// network log netLog ("" for none). decided hears every decision; allow
// says which connections it serves (the box's user's: SameUser).
func StartLoopback(n plan.Network, netLog string, decided func(Decided), allow func(net.Conn) error) (*Loopback, error) {
	rules, err := Compile(n.Allow, n.Deny)
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	opts, err := OptionsFor(n)
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	l := &Loopback{CA: opts.Authority}
	opts.Decided = decided
	if netLog != "" {
		if l.log, err = os.OpenFile(netLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err != nil {
			return nil, fmt.Errorf("opening the network log %s: %w", netLog, err)
		}
		opts.Log = l.log
	}
	if l.Proxy, err = New(rules, opts); err != nil {
		l.Stop()
		return nil, fmt.Errorf("network: %w", err)
	}
	if l.ln, err = net.Listen("tcp4", "127.0.0.1:0"); err != nil {
		l.Stop()
		return nil, fmt.Errorf("network: starting the proxy: %w", err)
	}
	l.Port = l.ln.Addr().(*net.TCPAddr).Port
	go l.Proxy.ServeListener(l.ln, allow)
	addr := "127.0.0.1:" + strconv.Itoa(l.Port)
	// socks5h: the proxy resolves names. The host's own services that an
	// allow entry names are reached directly (their ports are allowed);
	// any other is refused.
	proxy, socks, noProxy := "http://"+addr, "socks5h://"+addr, "localhost,127.0.0.1,::1"
	l.Env = []string{"HTTP_PROXY=" + proxy, "HTTPS_PROXY=" + proxy, "http_proxy=" + proxy, "https_proxy=" + proxy,
		"ALL_PROXY=" + socks, "all_proxy=" + socks, "NO_PROXY=" + noProxy, "no_proxy=" + noProxy}
	l.Env = append(l.Env, n.ProxyVarsEnv(addr)...)
	return l, nil
}

// Stop ends the proxy and every connection through it, and closes the log.
func (l *Loopback) Stop() {
	if l.Proxy != nil {
		l.Proxy.Close() // closes the listener too, and waits for its goroutines
	} else if l.ln != nil {
		l.ln.Close()
	}
	if l.log != nil {
		l.log.Close()
	}
}

// WithVars returns env with vars set, replacing inherited copies: programs
// read the first copy of a name.
func WithVars(env, vars []string) []string {
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
