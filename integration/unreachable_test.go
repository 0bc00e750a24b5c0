//go:build linux

package integration

import (
	"net"
	"strconv"
	"strings"
	"testing"
)

// An allowed host that cannot be reached (a port of 127.0.0.1 where
// nothing listens, a name that does not resolve) still gets the box's client a 502, and agentbox says in
// one line which host and why, once however often the box tries, and the
// audit log has it. Before, curl's 502 was all there was.
func TestUnreachableAllowedHost(t *testing.T) {
	needCurl(t)
	netNames(t)
	backends(t, func(t *testing.T, be string) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
		w := newWorld(t)
		url := "http://example.test:" + closed + "/"
		// nx.wild.test is allowed (*.wild.test) and in no hosts file: its
		// name does not resolve (how the resolver says so varies).
		r := w.sh(netFlags(w, "--backend", be),
			`curl -s -o /dev/null -w '%{http_code}\n' `+url+`; curl -s -o /dev/null -w '%{http_code}\n' `+url+
				`; curl -s -o /dev/null -w '%{http_code}\n' http://nx.wild.test/`)
		expectCode(t, r, 0)
		if r.stdout != "502\n502\n502\n" {
			t.Errorf("curl's status codes: %q, want three 502s", r.stdout)
		}
		line := "agentbox: example.test:" + closed + " is allowed, but it cannot be reached: connection refused " +
			"(nothing listens there) (the box got 502 Bad Gateway)"
		flat := strings.Join(strings.Fields(r.stderr), " ")
		if n := strings.Count(flat, line); n != 1 {
			t.Errorf("want %q once in agentbox's output, found it %d times:\n%s", line, n, r.stderr)
		}
		if n := strings.Count(flat, "agentbox: nx.wild.test:80 is allowed, but it cannot be reached: "); n != 1 {
			t.Errorf("want one line for nx.wild.test:80, found %d:\n%s", n, r.stderr)
		}
		one := w.run("log", "--run", w.lastRun())
		expectCode(t, one, 0)
		expectContains(t, "log --run", one.stdout, "network allowed http example.test:"+closed)
		expectContains(t, "log --run", strings.Join(strings.Fields(one.stdout), " "),
			"but it cannot be reached: connection refused (nothing listens there)")
	})
}
