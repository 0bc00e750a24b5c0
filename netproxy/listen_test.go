package netproxy

import (
	"bufio"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestServeListener: through ServeListener, a connection whose client
// allow refuses is closed unanswered and counted as a denial, and an
// accepted one is served by the same rules as Serve's.
func TestServeListener(t *testing.T) {
	rules, err := Compile([]string{"example.test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	p, err := New(rules, Options{Resolver: testResolver, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var refuse atomic.Bool
	refuse.Store(true)
	served := make(chan error, 1)
	go func() {
		served <- p.ServeListener(ln, func(net.Conn) error {
			if refuse.Load() {
				return errors.New("process 4242 is not part of this run")
			}
			return nil
		})
	}()
	ask := func() string {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		c.Write([]byte("CONNECT evil.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n\r\n"))
		line, _ := bufio.NewReader(c).ReadString('\n')
		return line
	}
	if got := ask(); got != "" {
		t.Errorf("a refused client got an answer: %q", got)
	}
	refuse.Store(false)
	if got := ask(); !strings.Contains(got, "403") {
		t.Errorf("an accepted client asking for a denied host got %q, want 403", got)
	}
	st := p.Stats()
	if st.Denied != 2 || !strings.Contains(log.String(), "refused client: process 4242 is not part of this run") {
		t.Errorf("stats %+v, log %q: want two denials, one for the refused client", st, log.String())
	}
	p.Close()
	if err := <-served; err != nil {
		t.Errorf("ServeListener after Close: %v", err)
	}
}
