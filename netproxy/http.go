package netproxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// hopHeaders are the hop-by-hop headers of RFC 9110 section 7.6.1 and the
// proxy's own: they describe one connection and must not be passed on.
// Proxy-Authorization in particular would hand the client's proxy
// credentials to the origin server.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "TE", "Trailer", "Transfer-Encoding", "Upgrade",
}

// serveHTTP serves one client connection: CONNECT requests become tunnels,
// absolute-URI requests are forwarded one by one, each checked on its own
// host, for as long as the client keeps the connection alive.
func (p *Proxy) serveHTTP(c net.Conn, br *bufio.Reader) {
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, os.ErrDeadlineExceeded) {
				reason := "bad proxy request: " + err.Error()
				p.record("http", "", Decision{Reason: reason}, nil)
				writeText(c, http.StatusBadRequest, "agentbox: "+reason+"\n")
			}
			return
		}
		c.SetReadDeadline(time.Time{}) // the body may take its time
		if req.Method == http.MethodConnect {
			p.serveCONNECT(c, br, req)
			return
		}
		if !p.forward(c, req) {
			return
		}
		c.SetReadDeadline(time.Now().Add(idleTimeout))
	}
}

// serveCONNECT answers a CONNECT request and, when allowed, becomes a tunnel.
func (p *Proxy) serveCONNECT(c net.Conn, br *bufio.Reader, req *http.Request) {
	// The raw authority, not req.URL.Host: url.Parse would decode %-escapes,
	// and the host checked must be the host as sent.
	h, port, err := splitHostPort(req.RequestURI, 0)
	if err != nil {
		reason := fmt.Sprintf("bad CONNECT target %q: %v", req.RequestURI, err)
		p.record("connect", "", Decision{Reason: reason}, nil)
		writeText(c, http.StatusBadRequest, "agentbox: "+reason+"\n")
		return
	}
	up, target, d, err := p.open("connect", h, port)
	switch {
	case !d.Allowed:
		writeText(c, http.StatusForbidden, denial(target, d))
		return
	case err != nil:
		writeText(c, http.StatusBadGateway, fmt.Sprintf("agentbox: %s: %v\n", target, err))
		return
	}
	defer p.dropUpstream(up)
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	tunnel(c, br, up)
}

// forward passes one absolute-URI request to its origin and the answer back.
// It reports whether the client connection may carry another request.
//
// Each request gets a fresh upstream connection, closed after the answer:
// plain HTTP through a proxy is rare (HTTPS goes through CONNECT), and never
// reusing an upstream connection means no request can ride on a connection
// that was checked for another host.
func (p *Proxy) forward(c net.Conn, req *http.Request) bool {
	if req.URL.Scheme != "http" || req.URL.Host == "" {
		p.record("http", "", Decision{Reason: "not an absolute http:// URL"}, nil)
		writeText(c, http.StatusBadRequest, "agentbox: only absolute http:// URLs and CONNECT go through this proxy\n")
		return false
	}
	h, port, err := splitHostPort(req.URL.Host, 80)
	if err != nil {
		reason := fmt.Sprintf("bad URL host %q: %v", req.URL.Host, err)
		p.record("http", "", Decision{Reason: reason}, nil)
		writeText(c, http.StatusBadRequest, "agentbox: "+reason+"\n")
		return false
	}
	up, target, d, err := p.open("http", h, port)
	switch {
	case !d.Allowed:
		writeText(c, http.StatusForbidden, denial(target, d))
		return false
	case err != nil:
		writeText(c, http.StatusBadGateway, fmt.Sprintf("agentbox: %s: %v\n", target, err))
		return false
	}
	defer p.dropUpstream(up)

	keep := !req.Close
	stripHop(req.Header)
	if req.Header.Get("Expect") == "100-continue" {
		// Say "go on" ourselves: the body is then streamed to the origin
		// as part of the request, which never waits for its own 100.
		req.Header.Del("Expect")
		if _, err := io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return false
		}
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // stops Write adding Go's own
	}
	req.Close = true // one request per upstream connection, see above
	// The origin sees the host that was checked, in its canonical form
	// ("127.1" arrives as "127.0.0.1"), whatever Host header the client
	// sent: an absolute URI overrides it anyway (RFC 9112 section 3.2.2).
	req.Host = target
	if req.URL.Port() == "" {
		req.Host = strings.TrimSuffix(target, ":80")
	}
	if err := req.Write(up); err != nil {
		writeText(c, http.StatusBadGateway, fmt.Sprintf("agentbox: %s: sending request: %v\n", target, err))
		return false
	}
	ubr := bufio.NewReader(up)
	resp, err := http.ReadResponse(ubr, req)
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 {
		if resp.StatusCode == http.StatusSwitchingProtocols {
			// Upgrade was stripped, so this is an origin misbehaving.
			resp.Body.Close()
			err = errors.New("unexpected 101 Switching Protocols")
			break
		}
		resp.Write(c)
		resp, err = http.ReadResponse(ubr, req)
	}
	if err != nil {
		writeText(c, http.StatusBadGateway, fmt.Sprintf("agentbox: %s: reading response: %v\n", target, err))
		return false
	}
	defer resp.Body.Close()
	stripHop(resp.Header)
	if resp.ContentLength < 0 && len(resp.TransferEncoding) == 0 && bodyAllowed(req, resp) {
		keep = false // the body ends when the connection does
	}
	resp.Close = !keep
	if err := resp.Write(c); err != nil {
		return false
	}
	return keep
}

// bodyAllowed reports whether a response may carry a body.
func bodyAllowed(req *http.Request, resp *http.Response) bool {
	return req.Method != http.MethodHead && resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusNotModified
}

// stripHop removes the hop-by-hop headers and those the Connection header
// names.
func stripHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// writeText writes a short text response and asks the client to close.
func writeText(w io.Writer, code int, body string) {
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, http.StatusText(code), len(body), body)
}
