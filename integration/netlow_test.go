//go:build linux

package integration

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
)

// lowPortServer starts the host's test web server on a free port below
// 1024 on 127.0.0.1 (only root may listen there), or skips.
func lowPortServer(t *testing.T) string {
	t.Helper()
	rootOnly(t, "only root can listen on a port below 1024 on the host")
	for port := 1000; port > 600; port-- {
		ln, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "low %s %s\n", r.Host, r.URL.Path)
		})}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		return strconv.Itoa(port)
	}
	t.Fatal("no free port below 1024 on 127.0.0.1")
	return ""
}

// A host service on a port below 1024 is reachable as the allow rule says:
// the init, which may not bind such a port in the box's network namespace
// (no capability, as root too), has agentbox bind it from the host.
func TestNetworkLowPortForward(t *testing.T) {
	needCurl(t)
	t.Run("reached", func(t *testing.T) {
		port := lowPortServer(t)
		w := newWorld(t)
		for _, allow := range []string{"127.0.0.1:" + port, "localhost:" + port} {
			r := w.sh([]string{"--network", "allowlist", "--allow", allow},
				`curl -sS http://127.0.0.1:`+port+`/a && curl -sS http://localhost:`+port+`/b`)
			expectCode(t, r, 0)
			expectContains(t, "stdout", r.stdout, "low 127.0.0.1:"+port+" /a\nlow localhost:"+port+" /b\n")
		}
	})
	// Unprivileged too the box starts, whatever listens on the host.
	t.Run("starts", func(t *testing.T) {
		w := newWorld(t)
		env := w.env
		for _, init := range []string{"c", "go"} {
			w.env = append(append([]string(nil), env...), "AGENTBOX_INIT="+init)
			r := w.sh([]string{"--network", "allowlist", "--allow", "localhost:1", "--allow", "127.0.0.1:443"},
				`echo started; curl -sS -m 5 http://127.0.0.1:443/ >/dev/null 2>&1; echo curl=$?`)
			expectCode(t, r, 0)
			expectContains(t, init+" init", r.stdout, "started\ncurl=")
		}
	})
}
