package policy

import (
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/plan"
)

// Host services behind unix sockets are a way out of any box that can reach
// them: the session bus (systemd-run --user starts any program, unconfined),
// docker.sock (root on the host), ssh-agent, gpg-agent, the compositor, a
// terminal multiplexer or editor taking commands. By default the box reaches
// none of them outside its writable roots. Under bubblewrap they are not
// shown: the runtime folders where services put their sockets are replaced
// by an empty folder of the box's own, and every socket the plan can find
// elsewhere (a variable names it, or it is in a known place) is hidden.
// Under Landlock, which cannot hide a folder without making / unlistable,
// the seccomp filter refuses unix sockets instead (package landlock says
// what that costs). network.unix_sockets names the sockets a run may use.

// runtimeDirs are the folders services put their sockets in, replaced by an
// empty folder of the box's own: its programs can still make folders and
// sockets there, which nothing outside sees.
var runtimeDirs = []struct{ path, why string }{
	{"/run", "the system's runtime folder: docker.sock, the system bus, the user's runtime folder, every daemon's socket"},
	{"/var/run", "the system's runtime folder (the older name of /run)"},
}

// socketVars are the variables that name a host service's socket, how to
// read the path from the value, and what the service can do for whoever
// reaches it.
var socketVars = []struct {
	name  string
	parse func(v string) []string
	why   string
}{
	{"SSH_AUTH_SOCK", plain, "ssh-agent: signs with your keys"},
	{"DBUS_SESSION_BUS_ADDRESS", dbusPaths, "the session bus: systemd-run --user starts any program on the host"},
	{"DBUS_SYSTEM_BUS_ADDRESS", dbusPaths, "the system bus"},
	{"DOCKER_HOST", prefixed("unix://"), "the Docker daemon: root on the host"},
	{"CONTAINER_HOST", prefixed("unix://"), "the Podman service: runs containers as you"},
	{"PULSE_SERVER", prefixed("unix:"), "the sound server"},
	{"GPG_AGENT_INFO", field(":"), "gpg-agent: signs and decrypts with your keys"},
	{"TMUX", field(","), "tmux: send-keys types into your shells"},
	{"KITTY_LISTEN_ON", prefixed("unix:"), "kitty's remote control: runs commands in your terminal"},
	{"NVIM", plain, "Neovim: runs commands in your editor"},
	{"NVIM_LISTEN_ADDRESS", plain, "Neovim: runs commands in your editor"},
	{"SWAYSOCK", plain, "sway: runs any program (exec)"},
	{"I3SOCK", plain, "i3: runs any program (exec)"},
	{"VSCODE_IPC_HOOK_CLI", plain, "VS Code: opens files and runs its commands"},
	{"VSCODE_GIT_IPC_HANDLE", plain, "VS Code's git helper"},
}

// homeSockets are places in the home folder where services keep their
// sockets, hidden when they exist.
var homeSockets = []struct{ path, why string }{
	{".docker/run", "Docker Desktop's daemon: root in its VM, your files through its mounts"},
	{".docker/desktop", "Docker Desktop's backend"},
	{".rd", "Rancher Desktop's docker.sock"},
	{".colima", "Colima's docker.sock"},
	{".lima", "Lima's VM sockets"},
	{".orbstack/run", "OrbStack's docker.sock"},
	{".1password/agent.sock", "1Password's SSH agent: signs with your keys"},
	{".bitwarden-ssh-agent.sock", "Bitwarden's SSH agent: signs with your keys"},
	{".local/share/containers/podman/machine", "Podman machine's sockets"},
}

func plain(v string) []string { return []string{v} }

func prefixed(p string) func(string) []string {
	return func(v string) []string {
		if rest, ok := strings.CutPrefix(v, p); ok {
			return []string{rest}
		}
		return nil
	}
}

func field(sep string) func(string) []string {
	return func(v string) []string {
		first, _, _ := strings.Cut(v, sep)
		return []string{first}
	}
}

// dbusPaths reads the path= of each unix: address of a D-Bus address list
// ("unix:path=/run/user/1000/bus;unix:abstract=..."). An abstract address
// is not a file: the box's network namespace, or Landlock's scope, keeps
// it out.
func dbusPaths(v string) []string {
	var out []string
	for _, addr := range strings.Split(v, ";") {
		rest, ok := strings.CutPrefix(addr, "unix:")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if p, ok := strings.CutPrefix(kv, "path="); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

// allowedSockets resolves network.unix_sockets: each an existing socket
// (symbolic links resolved), or a Skip when it is not there.
func (r *resolver) allowedSockets() error {
	for _, e := range r.m.lists["network.unix_sockets"] {
		p, err := r.expand(e)
		if err != nil {
			return err
		}
		real, err := r.real(p)
		if err != nil {
			r.p.Skipped = append(r.p.Skipped, plan.Skip{Path: p, Reason: "unix socket does not exist", Origin: e.Origin})
			continue
		}
		fi, err := r.env.FS.Stat(real)
		if err != nil || fi.Mode().Type() != fs.ModeSocket {
			return originError(e.Origin, p+": not a unix socket")
		}
		if !contains(r.p.Network.UnixSockets, real) {
			r.p.Network.UnixSockets = append(r.p.Network.UnixSockets, real)
			r.socketOrigins = append(r.socketOrigins, e.Origin)
		}
	}
	return nil
}

// runtimeStage replaces the host's runtime folders (/run, /var/run when it
// is a folder of its own, and $XDG_RUNTIME_DIR) with an empty folder of the
// box's own, then binds back, read-only, what the box needs from them: the
// resolver's configuration when /etc/resolv.conf links there, and the
// sockets network.unix_sockets names. Writable roots inside them come back
// in the writable stage.
func (r *resolver) runtimeStage() error {
	if r.env.GOOS != "linux" {
		return nil
	}
	origin := plan.Origin{Key: "default: host unix sockets (network.unix_sockets names the ones the box may use)"}
	var dirs []string
	add := func(p, why string) {
		fi, err := r.env.FS.Lstat(p)
		if err != nil || !fi.IsDir() {
			return // missing, or a link (/var/run -> /run): covered by its target
		}
		for _, d := range dirs {
			if plan.Within(p, d) {
				return
			}
		}
		dirs = append(dirs, p)
		r.add(plan.Mount{Stage: plan.StageTmp, Op: plan.Tmpfs, Path: p, Access: plan.Hidden, Origin: origin, Note: why, Sockets: true})
	}
	for _, d := range runtimeDirs {
		add(d.path, d.why)
	}
	if x := r.env.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) {
		if real, err := r.real(filepath.Clean(x)); err == nil && real != "/" && !plan.Within(r.env.Home, real) {
			add(real, "your runtime folder ($XDG_RUNTIME_DIR): the session bus, the compositor, gpg-agent, ssh-agent, ...")
		}
	}
	within := func(p string) bool {
		for _, d := range dirs {
			if plan.Within(p, d) {
				return true
			}
		}
		return false
	}
	// The resolver's configuration, when /etc/resolv.conf links into a
	// runtime folder (systemd-resolved, NetworkManager, resolvconf).
	if fi, err := r.env.FS.Lstat("/etc/resolv.conf"); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if real, err := r.real("/etc/resolv.conf"); err == nil && within(real) {
			r.add(plan.Mount{Stage: plan.StageTmp, Op: plan.ROBind, Path: real, Access: plan.ReadOnly,
				Origin: plan.Origin{Key: "default: the resolver's configuration (/etc/resolv.conf links here)"}, Sockets: true})
		}
	}
	for i, s := range r.p.Network.UnixSockets {
		if within(s) {
			r.add(plan.Mount{Stage: plan.StageTmp, Op: plan.ROBind, Path: s, Access: plan.ReadOnly, Origin: r.socketOrigins[i],
				Note: "a unix socket the box may use", Sockets: true})
		}
	}
	r.runtimeDirs = dirs
	return nil
}

// socketStage hides, last, every other host socket the plan can find: the
// ones a variable names and the known places in the home folder, unless
// they lie in a writable root (the box's own), a runtime folder (hidden
// already), a hidden path, or the policy allows them.
func (r *resolver) socketStage() error {
	if r.env.GOOS != "linux" {
		return nil
	}
	type found struct{ path, why string }
	var list []found
	for _, v := range socketVars {
		val := r.env.Getenv(v.name)
		if val == "" {
			continue
		}
		for _, p := range v.parse(val) {
			if filepath.IsAbs(p) {
				list = append(list, found{filepath.Clean(p), "$" + v.name + ": " + v.why})
			}
		}
	}
	for _, h := range homeSockets {
		list = append(list, found{filepath.Join(r.env.Home, h.path), h.why})
	}
	origin := plan.Origin{Key: "default: host unix sockets (network.unix_sockets names the ones the box may use)"}
	seen := map[string]bool{}
	for _, f := range list {
		real, err := r.real(f.path)
		if err != nil || seen[real] {
			continue
		}
		seen[real] = true
		fi, err := r.env.FS.Stat(real)
		if err != nil {
			continue
		}
		sock := fi.Mode().Type() == fs.ModeSocket
		if !sock && !fi.IsDir() {
			continue // not a socket: nothing to reach
		}
		if r.inWritable(real) || r.hiddenAlready(real) || contains(r.p.Network.UnixSockets, real) {
			continue
		}
		if fi.IsDir() && r.allowsBelow(real) {
			continue
		}
		op := plan.HideFile
		if fi.IsDir() {
			// A folder of sockets: an empty one of the box's own.
			op = plan.Tmpfs
		}
		r.add(plan.Mount{Stage: plan.StageDeny, Op: op, Path: real, Access: plan.Hidden, Origin: origin, Note: f.why, Sockets: true})
	}
	return nil
}

// hiddenAlready reports whether p lies in a runtime folder the box does not
// see, or in a hidden path.
func (r *resolver) hiddenAlready(p string) bool {
	for _, d := range r.runtimeDirs {
		if plan.Within(p, d) {
			return true
		}
	}
	for _, m := range r.p.Mounts {
		if (m.Op == plan.HideDir || m.Op == plan.HideFile || (m.Op == plan.Tmpfs && m.Access == plan.Hidden)) && plan.Within(p, m.Path) {
			return true
		}
	}
	return false
}

// allowsBelow reports whether a socket the policy allows lies in dir.
func (r *resolver) allowsBelow(dir string) bool {
	for _, s := range r.p.Network.UnixSockets {
		if plan.Within(s, dir) {
			return true
		}
	}
	return false
}
