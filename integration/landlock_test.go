//go:build linux

package integration

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The Landlock backend, forced and as auto's fallback. What differs from
// bwrap, and why (README "Backends"): a denied or hidden path is refused
// (EACCES) instead of looking empty, and stat still sees it; /tmp is not
// remapped (TMPDIR points at the per-workspace folder); there is no PID
// namespace; folders on the way to a carved-out path cannot be listed.
func TestLandlockConfines(t *testing.T) {
	w := newWorld(t)
	secret := filepath.Join(w.base, "secret")
	write(t, filepath.Join(secret, "key"), "PRIVATE")
	root := filepath.Join(w.base, "work")
	write(t, filepath.Join(root, "finance", "ledger"), "money")
	outside := filepath.Join(w.base, "outside")
	mkdir(t, outside)
	r := w.sh([]string{"--backend", "landlock", "--deny", secret, "--workspace", "web", "--workspace-root", root}, `
echo backend=$AGENTBOX_BACKEND
(echo x > `+outside+`/f) 2>&1 | grep -q 'Permission denied' && echo outside=EACCES
(echo x > /usr/agentbox-ll-probe) 2>&1 | grep -q 'Permission denied' && echo usr=EACCES
cat `+secret+`/key 2>&1 | grep -q 'Permission denied' && echo deny=EACCES
cat `+root+`/finance/ledger 2>&1 | grep -q 'Permission denied' && echo otherws=EACCES
echo mine > `+root+`/web/f && echo ws=written
echo t > "$TMPDIR/t" && echo tmp=written
`+bin+` status | head -1
`)
	expectCode(t, r, 0)
	for _, want := range []string{"backend=landlock", "outside=EACCES", "usr=EACCES", "deny=EACCES", "otherws=EACCES", "ws=written", "tmp=written", "active (landlock; checked: no_new_privs and a seccomp filter are set)"} {
		expectContains(t, "landlock", r.stdout, want)
	}
	if exists(filepath.Join(outside, "f")) || exists("/usr/agentbox-ll-probe") {
		t.Fatal("a write outside the writable roots reached the host")
	}
	if !exists(filepath.Join(root, "web", "f")) {
		t.Fatal("the workspace write is not on the host")
	}
	expectContains(t, "stderr", r.stderr, "weaker than the policy asks")
}

// With bwrap missing from PATH, auto falls back to Landlock and still
// confines; exit status and signals behave as with bwrap.
func TestAutoFallsBackToLandlock(t *testing.T) {
	w := newWorld(t)
	pathDir := filepath.Join(w.base, "bin")
	mkdir(t, pathDir)
	for _, tool := range []string{"sh", "cat", "touch", "grep"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		os.Symlink(p, filepath.Join(pathDir, tool))
	}
	w.env = append(w.env, "PATH="+pathDir)
	r := w.sh(nil, `echo $AGENTBOX_BACKEND; touch /usr/agentbox-fallback 2>&1 | grep -c 'Permission denied'; exit 4`)
	expectCode(t, r, 4)
	if !strings.HasPrefix(r.stdout, "landlock\n1\n") {
		t.Fatalf("want landlock confining, got %s", r)
	}
	r = w.run("run", "--", "no-such-command-ll")
	expectCode(t, r, 127)
	plan := w.run("plan", "--", "true")
	expectContains(t, "plan", plan.stdout, "backend:   landlock")
}

func TestLandlockNetworkNone(t *testing.T) {
	w := newWorld(t)
	// Landlock checks connect(2) only; TCP Fast Open and MPTCP connect
	// without it, so the seccomp filter refuses them under network none.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	write(t, filepath.Join(w.project, "bypass.py"), `import socket, sys
port = int(sys.argv[1])
try:
    s = socket.socket(); s.settimeout(2); s.sendto(b"x", socket.MSG_FASTOPEN, ("127.0.0.1", port)); print("tfo=sent")
except OSError as e: print("tfo=refused", e.errno)
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262); s.settimeout(2); s.connect(("127.0.0.1", port)); print("mptcp=connected")
except OSError as e: print("mptcp=refused", e.errno)
`)
	r := w.run("run", "--backend", "landlock", "--network", "none", "--", "/usr/bin/python3", "bypass.py", fmt.Sprint(port))
	expectCode(t, r, 0)
	expectContains(t, "bypass", r.stdout, "tfo=refused 1\nmptcp=refused 1")

	r = w.sh([]string{"--backend", "landlock", "--network", "none"}, `bash -c 'echo > /dev/tcp/127.0.0.1/9' 2>&1 | grep -q 'connect: Permission denied' && echo refused`)
	expectCode(t, r, 0)
	expectContains(t, "tcp connect", r.stdout, "refused")
}
