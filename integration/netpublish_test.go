//go:build linux

package integration

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// freePort is a TCP port nothing listens on at the moment.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// outsideAddr is an address of this host that is not loopback, or "".
func outsideAddr() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	return ""
}

// TestNetworkPublish: a server in the box on a published port answers the
// host, under bubblewrap (network none and allowlist) and Landlock; the
// host's end is on loopback only, and publishing opens no way out of the
// box. The box's status lists the port.
func TestNetworkPublish(t *testing.T) {
	needCurl(t)
	_, err := os.Stat("/usr/bin/python3")
	need(t, err == nil, "/usr/bin/python3 serves the box's pages")
	web := startWeb(t)
	for _, tc := range []struct {
		name  string
		flags []string
		same  bool   // the host's port is the box's (Landlock: no relay)
		init  string // AGENTBOX_INIT: the Go init (bwrap) or Go child (Landlock)
	}{
		{name: "bwrap none", flags: []string{"--backend", "bwrap", "--network", "none"}},
		{name: "bwrap none, Go init", flags: []string{"--backend", "bwrap", "--network", "none"}, init: "go"},
		{name: "bwrap allowlist", flags: []string{"--backend", "bwrap", "--network", "allowlist", "--allow", "example.test"}},
		{name: "landlock none", flags: []string{"--backend", "landlock", "--network", "none"}},
		{name: "landlock allowlist, Go child", flags: []string{"--backend", "landlock", "--network", "allowlist", "--allow", "example.test"}, init: "go"},
		{name: "landlock none, same port", flags: []string{"--backend", "landlock", "--network", "none"}, same: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			write(t, filepath.Join(w.project, "site", "index.html"), "served from the box\n")
			hostPort, boxPort := freePort(t), freePort(t)
			if tc.same {
				boxPort = hostPort
			}
			flags := append(append([]string{"run"}, tc.flags...), "--publish", strconv.Itoa(hostPort)+":"+strconv.Itoa(boxPort))
			// The box serves its folder on its own loopback, tries to
			// reach the host's web server (it must not), says what its
			// status lists, and ends when the test says so.
			script := `cd site && /usr/bin/python3 -m http.server ` + strconv.Itoa(boxPort) + ` --bind 127.0.0.1 >/dev/null 2>&1 & server=$!; ` +
				`curl -sS -m 5 -o /dev/null http://127.0.0.1:` + web.port + `/ 2>/dev/null; echo out=$?; ` +
				`"$AGENTBOX_BIN_IN_BOX" status | grep '^publish:'; read done; kill $server`
			c := w.cmd(append(flags, "--", "sh", "-c", script)...)
			c.Env = append(c.Env, "AGENTBOX_BIN_IN_BOX="+bin)
			if tc.init != "" {
				c.Env = append(c.Env, "AGENTBOX_INIT="+tc.init)
			}
			c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var out bytes.Buffer
			c.Stdout, c.Stderr = &out, &out
			stdin, err := c.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { syscall.Kill(-c.Process.Pid, syscall.SIGKILL); c.Wait() })
			url := "http://127.0.0.1:" + strconv.Itoa(hostPort) + "/index.html"
			var body string
			deadline := time.Now().Add(20 * time.Second)
			for {
				resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(url)
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					body = string(b)
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the box's server did not answer on %s: %v\n%s", url, err, out.String())
				}
				time.Sleep(100 * time.Millisecond)
			}
			if body != "served from the box\n" {
				t.Errorf("GET %s: %q", url, body)
			}
			if addr := outsideAddr(); addr != "" {
				c, err := net.DialTimeout("tcp", net.JoinHostPort(addr, strconv.Itoa(hostPort)), 2*time.Second)
				if err == nil {
					c.Close()
					t.Errorf("the published port answers on %s too, not only on loopback", addr)
				}
			}
			stdin.Write([]byte("done\n"))
			stdin.Close()
			done := make(chan error, 1)
			go func() { done <- c.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("run: %v\n%s", err, out.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("the box did not end:\n%s", out.String())
			}
			got := out.String()
			if !strings.Contains(got, "out=7\n") && !strings.Contains(got, "out=28\n") {
				t.Errorf("the box reached the host's web server (or curl said something else):\n%s", got)
			}
			want := "publish:  the host's 127.0.0.1:" + strconv.Itoa(hostPort) + " reaches 127.0.0.1:" + strconv.Itoa(boxPort) + " here\n"
			if !strings.Contains(got, want) {
				t.Errorf("status: want %q in:\n%s", want, got)
			}
			// plan lists the port, and under Landlock what it cannot hold.
			r := w.run(append(append([]string{"plan"}, flags[1:]...), "--", "true")...)
			expectCode(t, r, 0)
			expectContains(t, "plan", r.stdout, "  publish: 127.0.0.1:"+strconv.Itoa(hostPort)+" on the host -> 127.0.0.1:"+strconv.Itoa(boxPort)+" in the box (flag --publish)\n")
			if strings.HasPrefix(tc.name, "landlock") {
				expectContains(t, "plan", r.stdout, "so a server that binds 0.0.0.0 is reachable from other machines")
			}
		})
	}
}

// Under bubblewrap a published port reaches only the box's loopback
// port: a box whose server is not up yet is a closed port to the host,
// and the run goes on.
func TestNetworkPublishNothingListens(t *testing.T) {
	w := newWorld(t)
	hostPort := freePort(t)
	c := w.cmd("run", "--network", "none", "--publish", strconv.Itoa(hostPort), "--", "sh", "-c", "read x; echo ended")
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(hostPort), time.Second)
		if err == nil {
			// agentbox listens: the box's side is closed at once.
			conn.SetReadDeadline(time.Now().Add(15 * time.Second))
			n, rerr := conn.Read(make([]byte, 1))
			conn.Close()
			if n != 0 || rerr == nil {
				t.Fatalf("read %d bytes, %v from a port nothing listens on in the box", n, rerr)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("agentbox does not listen on %d: %v\n%s", hostPort, err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	stdin.Write([]byte("go\n"))
	stdin.Close()
	if err := c.Wait(); err != nil || !strings.Contains(out.String(), "ended") {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	// The port is free again.
	if ln, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(hostPort)); err != nil {
		t.Errorf("the published port is still taken after the run: %v", err)
	} else {
		ln.Close()
	}
}
