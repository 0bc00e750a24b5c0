package netproxy

// Fuzz targets for every byte the box sends the proxy (a request line and
// header fields, CONNECT, SOCKS5, chunked bodies and trailers) and for what
// a named host answers through the interception. Their seed corpora in
// testdata/fuzz are real traffic: requests curl, npm and git sent a proxy,
// and answers Go's HTTP server gave (gzip, chunked, trailers).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	fuzzKey         = "sk-fuzz-REAL-key/value+0123456789"
	fuzzPlaceholder = "agentbox0123456789abcdefghijklmno"
)

// fuzzHarness is a proxy whose dials reach an in-memory origin that
// answers with answer and records what it was sent.
type fuzzHarness struct {
	p      *Proxy
	answer []byte
	mu     sync.Mutex
	got    bytes.Buffer
	wg     sync.WaitGroup
}

func newFuzzHarness(tb testing.TB, answer []byte) *fuzzHarness {
	rules, err := Compile([]string{"example.test", "GET rules.test/ok/*", "POST rules.test/up", "203.0.113.7"}, []string{"deny.test"})
	if err != nil {
		tb.Fatal(err)
	}
	h := &fuzzHarness{answer: answer}
	h.p, err = New(rules, Options{
		Resolver: fakeResolver{"example.test": {publicTestAddr.String()}, "rules.test": {publicTestAddr.String()}},
		Secrets:  []Secret{{Name: "API_KEY", Value: fuzzKey, Placeholder: fuzzPlaceholder, Hosts: []string{"example.test"}}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	h.p.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if ap, err := netip.ParseAddrPort(addr); err != nil || ap.Addr() != publicTestAddr {
			return nil, errors.New("unreachable")
		}
		a, b := net.Pipe()
		b.SetDeadline(time.Now().Add(2 * time.Second))
		h.wg.Add(2)
		go func() {
			defer h.wg.Done()
			buf := make([]byte, 4096)
			for {
				n, err := b.Read(buf)
				h.mu.Lock()
				h.got.Write(buf[:n])
				h.mu.Unlock()
				if err != nil {
					b.Close()
					return
				}
			}
		}()
		go func() {
			defer h.wg.Done()
			b.Write(h.answer)
		}()
		return a, nil
	}
	return h
}

// serve runs one client connection that sends data, ends its half, and
// returns what it was answered; a proxy that does not end within the bound
// fails.
func (h *fuzzHarness) serve(t *testing.T, data []byte) []byte {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer b.Close()
		h.p.serveConn(b)
	}()
	a.SetDeadline(time.Now().Add(2 * time.Second))
	go func() {
		a.Write(data)
		a.(*net.TCPConn).CloseWrite()
	}()
	out, _ := io.ReadAll(a)
	a.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("the proxy did not end its connection for %q", data)
	}
	h.p.Close()
	h.wg.Wait()
	return out
}

// fuzzProxy is the property every byte the box sends the proxy must keep:
// no panic, no hang, and the placeholder never reaches an origin whole (no
// connection here is TLS to the secret's host).
func fuzzProxy(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		h := newFuzzHarness(t, []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
		h.serve(t, data)
		h.mu.Lock()
		got := h.got.String()
		h.mu.Unlock()
		if strings.Contains(got, fuzzPlaceholder) {
			t.Fatalf("the origin received the placeholder: %q", got)
		}
	})
}

// FuzzProxyHTTP: plain HTTP requests, heads and bodies.
func FuzzProxyHTTP(f *testing.F) { fuzzProxy(f) }

// FuzzProxyCONNECT: CONNECT requests and what follows them in the tunnel
// (read request by request for a host with request rules).
func FuzzProxyCONNECT(f *testing.F) { fuzzProxy(f) }

// FuzzProxySOCKS: SOCKS5 handshakes and what follows them.
func FuzzProxySOCKS(f *testing.F) { fuzzProxy(f) }

// FuzzChunked: a chunked body and its trailer; what the decoder accepts
// re-encodes to what decodes the same, with trailer fields as strict as
// header fields.
func FuzzChunked(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		d := bodyReader(bufio.NewReader(bytes.NewReader(data)), bodyFraming{kind: chunkedBody})
		content, err := io.ReadAll(io.LimitReader(d, 1<<20))
		if err != nil || !d.done {
			return
		}
		for _, l := range d.Trailer {
			name, _, ok := strings.Cut(l, ":")
			if !ok || !token(name) || strings.IndexFunc(l, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) >= 0 {
				t.Fatalf("trailer field %q accepted", l)
			}
		}
		var again bytes.Buffer
		e := &encoder{w: &again, f: bodyFraming{kind: chunkedBody}}
		e.Write(content)
		e.Close(d.Trailer)
		d2 := bodyReader(bufio.NewReader(&again), bodyFraming{kind: chunkedBody})
		content2, err := io.ReadAll(d2)
		if err != nil || !bytes.Equal(content, content2) || strings.Join(d.Trailer, "\n") != strings.Join(d2.Trailer, "\n") {
			t.Fatalf("re-encoded %q does not decode the same: %v", again.String(), err)
		}
	})
}

// fuzzKeyForms are the forms of fuzzKey the box must never receive.
func fuzzKeyForms() []string {
	forms := []string{fuzzKey, percentAll(fuzzKey, "%%%02X"), percentAll(fuzzKey, `\u%04x`), jsonForm(fuzzKey)}
	for k := 0; k < 3; k++ {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			forms = append(forms, base64Core(enc, fuzzKey, k), base64Tail(enc, fuzzKey, k))
		}
	}
	return forms
}

// FuzzAnswer: whatever a named host answers through the interception, in
// any content coding, the client never receives the secret's value in any
// form the redaction covers: not in the status line, a field, the body
// (the proxy undoes every coding it passes) or the trailer, nor in a
// message of the proxy's own.
func FuzzAnswer(f *testing.F) {
	forms := fuzzKeyForms()
	f.Fuzz(func(t *testing.T, data []byte, head bool) {
		h := newFuzzHarness(t, nil)
		a, b := net.Pipe()
		s := &session{p: h.p, target: "example.test:443", proto: "https", tls: true, client: b,
			upbr: bufio.NewReader(bytes.NewReader(data))}
		method := "GET"
		if head {
			method = "HEAD"
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer b.Close()
			s.answer(method, "HTTP/1.1")
		}()
		a.SetDeadline(time.Now().Add(3 * time.Second))
		out, _ := io.ReadAll(io.LimitReader(a, 4<<20))
		a.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("answer did not end for %q", data)
		}
		// What a client sees: the bytes, and the body de-chunked when
		// the head says chunked.
		seen := string(out)
		if head, _, _ := bytes.Cut(out, []byte("\r\n\r\n")); bytes.Contains(head, []byte("\r\nTransfer-Encoding: chunked")) {
			seen += "\n" + dechunk(out)
		}
		for _, form := range forms {
			if form != "" && strings.Contains(seen, form) {
				t.Fatalf("the client received %q of the answer %q:\n%q", form, data, out)
			}
		}
	})
}

// dechunk returns the content of every chunk in out, as a client would
// join them (leniently: whatever parses).
func dechunk(out []byte) string {
	_, rest, ok := bytes.Cut(out, []byte("\r\n\r\n"))
	if !ok {
		return ""
	}
	var b strings.Builder
	br := bufio.NewReader(bytes.NewReader(rest))
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return b.String()
		}
		var n int
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "%x", &n); err != nil || n <= 0 || n > 1<<22 {
			return b.String() + string(rest)
		}
		chunk := make([]byte, n)
		if _, err := io.ReadFull(br, chunk); err != nil {
			return b.String() + string(rest)
		}
		b.Write(chunk)
		br.ReadString('\n')
	}
}
