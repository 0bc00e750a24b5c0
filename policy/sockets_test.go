//go:build linux

package policy

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// socket makes a unix socket file at rel in the world (bound, then closed:
// the file stays).
func (w *world) socket(rel string) string {
	w.t.Helper()
	w.mkdir(filepath.Dir(rel))
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		w.t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: w.path(rel)}); err != nil {
		w.t.Fatal(err)
	}
	return w.path(rel)
}

// The host's sockets outside the writable roots are kept from the box: the
// runtime folders are replaced, the sockets variables name or that lie in
// known places are hidden, the resolver's configuration is bound back, and
// the sockets network.unix_sockets names are left (or bound back) for the
// box, as is a socket in a writable root.
func TestResolveHostSockets(t *testing.T) {
	w := newWorld(t)
	w.showSockets = true
	agent := w.socket("agent/ssh.sock")
	bus := w.socket("runtime/bus")
	docker := w.socket("home/u/.docker/run/docker.sock")
	inside := w.socket("home/u/proj/dev.sock")
	w.env.Environ = append(w.env.Environ,
		"XDG_RUNTIME_DIR="+w.path("runtime"),
		"SSH_AUTH_SOCK="+agent,
		"DBUS_SESSION_BUS_ADDRESS=unix:path="+bus+",guid=x;unix:abstract=/tmp/dbus-x",
		"TMUX="+inside+",123,0",
		"DOCKER_HOST=unix://"+w.path("missing.sock"),
	)
	_ = docker
	var sockets []string
	for _, m := range w.mustResolve(Flags{Tmp: "private"}, Options{}, "true").Mounts {
		if m.Sockets {
			sockets = append(sockets, m.Stage.String()+" "+string(m.Op)+" "+w.norm(m.Path))
		}
	}
	want := []string{
		"tmp tmpfs /run",
		"tmp tmpfs $ROOT/runtime",
		"deny hide-file $ROOT/agent/ssh.sock",
		"deny tmpfs $ROOT/home/u/.docker/run",
	}
	if resolv, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && resolv != "/etc/resolv.conf" && filepath.HasPrefix(resolv, "/run/") {
		want = append(want[:1], append([]string{"tmp ro-bind " + resolv}, want[1:]...)...)
	}
	if diff := cmp.Diff(want, sockets); diff != "" {
		t.Errorf("socket mounts (-want +got):\n%s", diff)
	}

	// Named, the agent is left alone and the bus in the runtime folder is
	// bound back.
	pol := w.path("sockets.toml")
	w.write("sockets.toml", "version = 1\n[network]\nunix_sockets = [\"$SSH_AUTH_SOCK\", \""+bus+"\", \"~/nothing.sock\"]\n")
	p := w.mustResolve(Flags{Tmp: "private", Policy: []string{pol}}, Options{}, "true")
	if diff := cmp.Diff([]string{agent, bus}, p.Network.UnixSockets); diff != "" {
		t.Errorf("UnixSockets (-want +got):\n%s", diff)
	}
	sockets = nil
	for _, m := range p.Mounts {
		if m.Sockets {
			sockets = append(sockets, m.Stage.String()+" "+string(m.Op)+" "+w.norm(m.Path))
		}
	}
	want = []string{
		"tmp tmpfs /run",
		"tmp tmpfs $ROOT/runtime",
		"tmp ro-bind $ROOT/runtime/bus",
		"deny tmpfs $ROOT/home/u/.docker/run",
	}
	if resolv, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && resolv != "/etc/resolv.conf" && filepath.HasPrefix(resolv, "/run/") {
		want = append(want[:1], append([]string{"tmp ro-bind " + resolv}, want[1:]...)...)
	}
	if diff := cmp.Diff(want, sockets); diff != "" {
		t.Errorf("socket mounts with sockets named (-want +got):\n%s", diff)
	}
	skipped := false
	for _, s := range p.Skipped {
		skipped = skipped || s.Path == w.path("home/u/nothing.sock")
	}
	if !skipped {
		t.Errorf("a named socket that does not exist is not reported: %+v", p.Skipped)
	}
	// Something else than a socket is an error naming the rule.
	w.write("bad.toml", "version = 1\n[network]\nunix_sockets = [\"~/proj\"]\n")
	if _, err := w.resolve(Flags{Policy: []string{w.path("bad.toml")}}, Options{}, "true"); err == nil {
		t.Error("a folder in network.unix_sockets was accepted")
	}
}
