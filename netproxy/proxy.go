package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Timeouts. A client that opens a connection and says nothing must not hold
// a goroutine forever; an established tunnel has no timeout, like a direct
// connection.
const (
	handshakeTimeout = 30 * time.Second // first request line, SOCKS greeting
	idleTimeout      = 2 * time.Minute  // between keep-alive requests
	dialTimeout      = 15 * time.Second // resolving and connecting upstream
)

// SocketName is the proxy socket's file name inside its private folder.
const SocketName = "proxy.sock"

// folderPrefix starts the name of every proxy folder: agentbox-net-PID-RANDOM.
const folderPrefix = "agentbox-net-"

// Options configure a Proxy.
type Options struct {
	// Log, when set, gets one line per connection (per request for plain
	// HTTP): time, allow or deny, protocol, host:port, rule and reason.
	Log io.Writer
	// AllowUID is the only user id that may connect; every accepted
	// connection's peer is checked with SO_PEERCRED. Set it to os.Getuid().
	// The zero value means root only.
	AllowUID int
	// Resolver resolves names; nil means net.DefaultResolver.
	Resolver Resolver
}

// Proxy is the allowlist proxy: HTTP (absolute-URI requests and CONNECT) and
// SOCKS5 on one unix socket, told apart by the first byte.
type Proxy struct {
	rules *Rules
	opts  Options
	dir   string
	sock  string
	ln    *net.UnixListener

	// dial connects upstream; tests replace it to reach a local server
	// where a public address was resolved.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	allowed, denied atomic.Int64
	logMu           sync.Mutex

	ctx    context.Context // cancelled by Close, so no lookup or dial outlives it
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
	once   sync.Once
}

// Listen creates a fresh private folder (mode 0700, owned by the caller) in
// dir (os.TempDir() when ""), and a unix socket in it that only the caller's
// user can reach. Call Serve to accept connections and Close to remove both.
func Listen(dir string, rules *Rules, opts Options) (*Proxy, error) {
	if rules == nil {
		return nil, errors.New("netproxy: no rules")
	}
	if dir == "" {
		dir = os.TempDir()
	}
	sweep(dir)
	// MkdirTemp makes a new folder with mode 0700 and fails rather than reuse
	// an existing one, so nobody can have planted a socket or symlink in it.
	// The folder's mode, not the socket's, is what stops other users: Linux
	// checks search permission on the path when connecting. The name carries
	// our pid so that a later run can tell a folder left by a killed run.
	priv, err := os.MkdirTemp(dir, fmt.Sprintf("%s%d-", folderPrefix, os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("creating proxy folder: %w", err)
	}
	sock := filepath.Join(priv, SocketName)
	if len(sock) >= 108 { // sun_path is 108 bytes on Linux, with its NUL
		os.Remove(priv)
		return nil, fmt.Errorf("proxy socket path %q is too long for a unix socket; use a shorter folder", sock)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		os.Remove(priv)
		return nil, fmt.Errorf("listening on proxy socket: %w", err)
	}
	// Belt and braces: the socket itself is the owner's alone too.
	if err := os.Chmod(sock, 0o600); err != nil {
		ln.Close()
		os.Remove(priv)
		return nil, fmt.Errorf("restricting proxy socket: %w", err)
	}
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver
	}
	p := &Proxy{
		rules: rules,
		opts:  opts,
		dir:   priv,
		sock:  sock,
		ln:    ln,
		conns: map[net.Conn]struct{}{},
	}
	p.dial = (&net.Dialer{}).DialContext
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// SocketPath returns the unix socket's path. Its folder, filepath.Dir of it,
// is what the sandbox binds in.
func (p *Proxy) SocketPath() string { return p.sock }

// Stats returns how many connections (plain HTTP: requests) were allowed and
// denied so far, peers refused for their uid included in denied.
func (p *Proxy) Stats() (allowed, denied int) {
	return int(p.allowed.Load()), int(p.denied.Load())
}

// Serve accepts connections until Close; it then returns nil.
func (p *Proxy) Serve() error {
	for {
		c, err := p.ln.AcceptUnix()
		if err != nil {
			if p.isClosed() {
				return nil
			}
			if retry(err) {
				continue
			}
			return fmt.Errorf("proxy accept: %w", err)
		}
		if !p.track(c) {
			c.Close()
			return nil
		}
		go func() {
			defer p.untrack(c)
			p.serveConn(c)
		}()
	}
}

// retry reports whether an accept error is worth waiting out: running out of
// file descriptors passes as connections close.
func retry(err error) bool {
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		time.Sleep(50 * time.Millisecond)
		return true
	}
	return false
}

// Close stops the proxy: no new connections, every open one (tunnels
// included) closed, then the socket and its folder removed. It waits for
// every connection's goroutine to end.
func (p *Proxy) Close() error {
	var err error
	p.once.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.cancel()
		for c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.ln.Close() // also unlinks the socket
		p.wg.Wait()
		if e := os.Remove(p.sock); e != nil && !errors.Is(e, os.ErrNotExist) {
			err = e
		}
		if e := os.Remove(p.dir); e != nil && !errors.Is(e, os.ErrNotExist) {
			err = e
		}
	})
	return err
}

func (p *Proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// track registers a connection so Close can close it; false once closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	p.wg.Add(1)
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	p.wg.Done()
}

// addUpstream registers an upstream connection with the client's, so Close
// reaches it; false once closed.
func (p *Proxy) addUpstream(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) dropUpstream(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// serveConn checks the peer, then tells SOCKS5 from HTTP by the first byte.
func (p *Proxy) serveConn(c *net.UnixConn) {
	// The folder's mode already keeps other users out; checking the peer's
	// uid as well means a mistake there (a bind with wider permissions, a
	// socket passed on) does not open the proxy to them.
	uid, err := peerUID(c)
	if err != nil || uid != p.opts.AllowUID {
		reason := fmt.Sprintf("peer uid %d is not %d", uid, p.opts.AllowUID)
		if err != nil {
			reason = "peer credentials: " + err.Error()
		}
		p.record("peer", "", Decision{Reason: reason}, nil)
		return
	}
	c.SetReadDeadline(time.Now().Add(handshakeTimeout))
	br := bufio.NewReader(c)
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	if first[0] == socksVersion {
		p.serveSOCKS(c, br)
		return
	}
	p.serveHTTP(c, br)
}

// open decides on host:port and, when allowed, resolves and connects. It
// logs and counts the outcome exactly once. On denial conn is nil and err is
// nil; when connecting fails, d is allowed and err says why.
func (p *Proxy) open(proto, raw string, port int) (conn net.Conn, target string, d Decision, err error) {
	h, herr := parseHost(raw)
	target = strconv.Quote(raw) + ":" + strconv.Itoa(port)
	if herr == nil {
		target = hostPort(h, port)
	}
	defer func() { p.record(proto, target, d, err) }()

	d, by := p.rules.check(raw, port)
	if !d.Allowed {
		return nil, target, d, nil
	}
	ctx, cancel := context.WithTimeout(p.ctx, dialTimeout)
	defer cancel()
	addrs := []netip.Addr{h.addr}
	if h.name != "" {
		// The proxy resolves: inside the box there is no DNS, and resolving
		// here, once, means the addresses vetted are the ones dialled.
		addrs, err = lookup(ctx, p.opts.Resolver, h.name)
		if err != nil {
			return nil, target, d, err
		}
		if d = p.rules.vet(h.name, port, by, addrs); !d.Allowed {
			return nil, target, d, nil
		}
	}
	for _, a := range addrs {
		conn, err = p.dial(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			if !p.addUpstream(conn) {
				conn.Close()
				return nil, target, d, errors.New("proxy closed")
			}
			return conn, target, d, nil
		}
	}
	return nil, target, d, err
}

// record counts a decision and writes its log line.
func (p *Proxy) record(proto, target string, d Decision, err error) {
	verdict := "deny"
	if d.Allowed {
		verdict = "allow"
		p.allowed.Add(1)
	} else {
		p.denied.Add(1)
	}
	if p.opts.Log == nil {
		return
	}
	if target == "" {
		target = "-"
	}
	line := fmt.Sprintf("%s %s %s %s rule=%q reason=%q", time.Now().Format(time.RFC3339Nano), verdict, proto, target, d.Rule, d.Reason)
	if err != nil {
		line += fmt.Sprintf(" error=%q", err.Error())
	}
	p.logMu.Lock()
	defer p.logMu.Unlock()
	fmt.Fprintln(p.opts.Log, line)
}

// denial is the one-line explanation a denied client gets.
func denial(target string, d Decision) string {
	return fmt.Sprintf("agentbox: %s denied: %s\n", target, d.Reason)
}

// tunnel hands over a connection whose handshake is done: bytes the client
// already sent past the handshake go first, then both ways are copied.
func tunnel(client *net.UnixConn, br *bufio.Reader, up net.Conn) {
	client.SetReadDeadline(time.Time{})
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		if _, err := up.Write(b); err != nil {
			return
		}
	}
	pipe(client, up)
}

// closeWriter is a connection that can half-close: TCP and unix stream.
type closeWriter interface{ CloseWrite() error }

// pipe copies a to b and b to a until both directions end, then closes both.
// io.Copy between a TCP and a unix stream connection uses splice(2) on Linux,
// so the bytes never pass through this process's memory. An end of stream
// in one direction is passed on as a half-close, so a client that finishes
// sending still gets the whole answer.
func pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		copyHalf(a, b)
	}()
	copyHalf(b, a)
	wg.Wait()
	a.Close()
	b.Close()
}

// copyHalf copies src to dst, then half-closes dst; on an error it closes
// both so the other direction ends too.
func copyHalf(dst, src net.Conn) {
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		src.Close()
		return
	}
	if cw, ok := dst.(closeWriter); ok {
		cw.CloseWrite()
		return
	}
	dst.Close()
}

// sweep removes the folders that runs killed with SIGKILL left in dir: a
// folder is ours when its name says agentbox-net-PID-, it is a real folder
// (not a symlink) owned by our uid, and process PID is gone. Only its socket
// and then the folder itself are removed, never anything else, so a folder
// that holds something unexpected stays.
func sweep(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), folderPrefix)
		pid, _, ok2 := strings.Cut(rest, "-")
		n, err := strconv.Atoi(pid)
		if !ok || !ok2 || err != nil || n <= 0 || n == os.Getpid() || alive(n) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if fi, err := os.Lstat(path); err != nil || !fi.IsDir() || !ownedByUs(fi) {
			continue
		}
		os.Remove(filepath.Join(path, SocketName))
		os.Remove(path)
	}
}
