//go:build linux

package integration

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLandlockNoListenWithoutBind: under Landlock with network none or
// allowlist the plan says nothing can listen (binding TCP is refused), but
// listen(2) on a socket never bound makes the kernel pick a port on every
// address (autobind), which Landlock's bind check never sees. A box can so
// accept a connection from outside (the host here, any host that reaches
// it) and hand it what it read: a way out in a box with no network.
func TestLandlockNoListenWithoutBind(t *testing.T) {
	needLandlock(t)
	for _, mode := range [][]string{{"--network", "none"}, {"--network", "allowlist", "--allow", "example.com"}} {
		t.Run(mode[1], func(t *testing.T) {
			w := newWorld(t)
			portFile := filepath.Join(w.project, "port")
			write(t, filepath.Join(w.project, "listen.py"), `import socket, sys
s = socket.socket()
try:
    s.listen(1)
except OSError as e:
    print("listen=refused", e.errno); open(sys.argv[1], "w").write("refused\n"); sys.exit(0)
open(sys.argv[1], "w").write("%d\n" % s.getsockname()[1])
s.settimeout(20)
try:
    c, _ = s.accept(); c.sendall(b"from-the-box\n"); c.close(); print("accepted")
except OSError as e:
    print("accept", e)
`)
			done := make(chan result, 1)
			go func() {
				args := append([]string{"run", "--backend", "landlock"}, mode...)
				done <- w.run(append(args, "--", "/usr/bin/python3", "listen.py", portFile)...)
			}()
			var got string
			for i := 0; i < 200 && got == ""; i++ {
				time.Sleep(100 * time.Millisecond)
				b, _ := os.ReadFile(portFile)
				if s := strings.TrimSpace(string(b)); strings.HasSuffix(string(b), "\n") {
					got = s
				}
			}
			if got != "" && got != "refused" {
				port, _ := strconv.Atoi(got)
				c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 5*time.Second)
				if err == nil {
					c.SetReadDeadline(time.Now().Add(5 * time.Second))
					line, _ := bufio.NewReader(c).ReadString('\n')
					c.Close()
					if line != "" {
						t.Errorf("a connection from outside reached a listener in the box (port %d, autobound by listen without bind) and read %q", port, line)
					}
				}
			}
			r := <-done
			t.Logf("%s", r)
		})
	}
}

// TestLandlockNoICMPOut: under Landlock the box shares the host's network
// namespace, and Landlock has no rule for ICMP. Where ping sockets are open
// to the user (net.ipv4.ping_group_range, "0 2147483647" on most systemd
// distributions), a box with network allowlist or none sends ICMP echo
// requests to any address and reads the replies: a channel out that the
// allowlist plan does not even mention. The test sets the range in a
// network namespace of its own (root only), never the host's, and brings
// its loopback up with python3 (which the probe needs anyway) rather than
// ip(8), which a minimal system lacks.
func TestLandlockNoICMPOut(t *testing.T) {
	needLandlock(t)
	rootOnly(t, "sets net.ipv4.ping_group_range in a network namespace of its own")
	python, err := exec.LookPath("python3")
	need(t, err == nil, "python3 is not installed")
	w := newWorld(t)
	// SIOCGIFFLAGS, then SIOCSIFFLAGS with IFF_UP: ip link set lo up.
	write(t, filepath.Join(w.project, "lo_up.py"), `import fcntl, socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sH", fcntl.ioctl(s, 0x8913, struct.pack("16sH", b"lo", 0)))[1]
fcntl.ioctl(s, 0x8914, struct.pack("16sH", b"lo", flags | 1))
`)
	write(t, filepath.Join(w.project, "ping.py"), `import socket, struct
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
except OSError as e:
    print("icmp=refused", e.errno); raise SystemExit(0)
s.settimeout(3)
s.sendto(struct.pack("!BBHHH", 8, 0, 0, 1, 1) + b"exfil", ("127.0.0.1", 0))
try:
    s.recv(100); print("icmp=reply")
except OSError as e:
    print("icmp=noreply", e)
`)
	for _, mode := range [][]string{{"--network", "none"}, {"--network", "allowlist", "--allow", "example.com"}} {
		t.Run(mode[1], func(t *testing.T) {
			args := append([]string{"--net", "--", "sh", "-c", `"$0" lo_up.py && echo "0 2147483647" > /proc/sys/net/ipv4/ping_group_range && exec "$@"`, python,
				bin, "run", "--backend", "landlock"}, mode...)
			c := exec.Command("unshare", append(args, "--", python, "ping.py")...)
			c.Dir, c.Env = w.project, w.env
			out, err := c.CombinedOutput()
			if err != nil {
				t.Fatalf("unshare/agentbox: %v\n%s", err, out)
			}
			if strings.Contains(string(out), "icmp=reply") {
				t.Errorf("an ICMP echo left the Landlock box (network %s) and its reply came back:\n%s", mode[1], out)
			}
			if !strings.Contains(string(out), "icmp=") {
				t.Fatalf("the probe did not run:\n%s", out)
			}
		})
	}
}
