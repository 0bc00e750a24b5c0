package policy

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/plan"
)

// Default protections that go beyond the policy's own lists: the
// credentials hidden by default, the folder agentbox keeps its temporary
// folders in, and the folders that are never made writable by default.

// credentialStores are the well-known credential stores, relative to the
// home folder, denied by default when they exist: cloud, container
// registry, package registry and database credentials, cloud-sync
// configuration, GnuPG, desktop keyrings and shell and REPL histories
// (commands typed with passwords and tokens in them).
var credentialStores = []string{
	".aws", ".azure", ".config/gcloud", ".kube", ".docker/config.json",
	".npmrc", ".yarnrc.yml", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml",
	".gem/credentials", ".gnupg", ".netrc", ".git-credentials", ".config/gh/hosts.yml",
	".terraform.d/credentials.tfrc.json", ".vault-token", ".password-store",
	".m2/settings-security.xml", ".config/hub",
	".pgpass", ".my.cnf", ".mylogin.cnf", ".config/rclone",
	".local/share/keyrings", ".local/share/kwalletd", ".kde/share/apps/kwallet",
	".bash_history", ".zsh_history", ".histfile", ".local/share/fish/fish_history",
	".python_history", ".psql_history", ".mysql_history", ".node_repl_history",
	".sqlite_history", ".rediscli_history",
}

// agentTokens are each agent CLI's own login token, relative to its
// folder: hidden from every command but that agent's (a token is worth
// more than the code it works on). The variable names another folder.
var agentTokens = []struct {
	provider, dir, homeVar, file string
}{
	{"claude", ".claude", "CLAUDE_CONFIG_DIR", ".credentials.json"},
	{"codex", ".codex", "CODEX_HOME", "auth.json"},
}

// sshPublic are the files of ~/.ssh that stay visible with ssh_keys =
// "hidden": ssh and git need them, and none holds a secret. Everything
// else there — private keys whatever their name, agent and control-master
// sockets, certificates' keys — is hidden.
func sshPublic(name string) bool {
	return name == "config" || strings.HasPrefix(name, "known_hosts") ||
		strings.HasPrefix(name, "authorized_keys") || strings.HasSuffix(name, ".pub")
}

// denied is a path hidden by default and the rule that hides it.
type denied struct {
	path   string
	origin plan.Origin
}

// defaultDenied are the paths hidden by default that exist, with the rule
// that hides each: credential stores, the agent tokens of other agents than
// the command's, and the private files of ~/.ssh. It is worked out once
// per resolution (one lstat per candidate: most do not exist).
func (r *resolver) defaultDenied() []denied {
	if r.defaults == nil {
		for _, d := range r.defaultCandidates() {
			if _, err := r.env.FS.Lstat(d.path); err == nil {
				r.defaults = append(r.defaults, d)
			}
		}
		r.defaults = append(r.defaults, denied{}) // worked out, even if empty
	}
	return r.defaults[:len(r.defaults)-1]
}

func (r *resolver) defaultCandidates() []denied {
	home := r.env.Home
	var out []denied
	for _, c := range credentialStores {
		out = append(out, denied{filepath.Join(home, c), plan.Origin{Key: "default: credential store"}})
	}
	for _, t := range agentTokens {
		if r.p.Provider.Name == t.provider && r.p.Provider.Supported {
			continue
		}
		origin := plan.Origin{Key: "default: " + t.provider + "'s login token (visible to " + t.provider + " only)"}
		dirs := []string{filepath.Join(home, t.dir)}
		if v := r.env.Getenv(t.homeVar); filepath.IsAbs(v) {
			dirs = append(dirs, filepath.Clean(v))
		}
		for _, d := range dirs {
			out = append(out, denied{filepath.Join(d, t.file), origin})
		}
	}
	if r.scalar("filesystem.ssh_keys") != "visible" {
		origin := plan.Origin{Key: "default: ssh private file (filesystem.ssh_keys = \"visible\" shows them)"}
		ssh := filepath.Join(home, ".ssh")
		if real, err := r.real(ssh); err == nil {
			entries, _ := r.env.FS.ReadDir(real)
			for _, e := range entries {
				if !sshPublic(e.Name()) {
					out = append(out, denied{filepath.Join(real, e.Name()), origin})
				}
			}
		}
	}
	return out
}

// tmpBase is the folder that holds agentbox's per-workspace and per-run
// temporary folders: $XDG_RUNTIME_DIR/agentbox/tmp when that is an
// absolute folder closed to other users (a tmpfs that only the user owns),
// else agentbox/tmp in the user's state folder. Never the shared /tmp:
// there, any local user could create agentbox's folder first and block or
// read the box's temporary files. Inside a box (a nested run), the outer
// box keeps the state folder read-only; when its temporary folder is its
// own (the user's, closed to everyone else: a private /tmp, not the
// host's shared one), no other user reaches it, and the base is
// agentbox-UID there.
func tmpBase(env Env) string {
	if depth(env) > 1 && filepath.IsAbs(env.TempDir) && env.UID >= 0 && env.FS != nil && ownFolder(env, env.TempDir) {
		return filepath.Join(env.TempDir, "agentbox-"+strconv.Itoa(env.UID))
	}
	if d := env.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) && env.FS != nil {
		if fi, err := env.FS.Lstat(d); err == nil && fi.IsDir() && fi.Mode().Perm()&0o077 == 0 {
			return filepath.Join(filepath.Clean(d), "agentbox", "tmp")
		}
	}
	return filepath.Join(filepath.Dir(StorePath(env)), "tmp")
}

// ownFolder reports whether dir is a folder of the user's own that no
// other user can write.
func ownFolder(env Env, dir string) bool {
	fi, err := env.FS.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 {
		return false
	}
	uid, ok := fileUID(fi)
	return ok && uid == env.UID
}

// prepareTmpBase adds the folders from the first missing one down to the
// temporary folders' base to the folders agentbox creates, each for the
// user alone, and returns the base's real path.
func (r *resolver) prepareTmpBase(origin plan.Origin) string {
	base := r.realMaybe(tmpBase(r.env))
	// Created from the first missing folder down, but never the home
	// folder itself (a home folder that does not exist is an error, with
	// a hint, not a folder agentbox makes).
	home := r.realMaybe(r.env.Home)
	var missing []string
	for d := base; ; d = filepath.Dir(d) {
		if _, err := r.env.FS.Lstat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		if d == home {
			missing = nil
			break
		}
		missing = append([]string{d}, missing...)
	}
	for _, d := range missing {
		if d != base {
			r.p.Prepare = append(r.p.Prepare, plan.Prepare{Path: d, Mode: 0o700, Origin: origin})
		}
	}
	r.p.Prepare = append(r.p.Prepare, plan.Prepare{Path: base, Mode: 0o700, Origin: origin, Private: true})
	return base
}

// systemTrees are folders that are never the default writable folder,
// nor anything inside them; systemRoots are never it themselves. A
// folder in the home folder is judged as such first (a home folder under
// /var/lib is the user's).
var (
	systemTrees = []string{"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc",
		"/run", "/sbin", "/sys", "/usr", "/var", "/nix", "/snap", "/System", "/Library", "/private", "/Applications"}
	systemRoots  = []string{"/", "/home", "/opt", "/srv", "/mnt", "/media", "/tmp", "/root", "/Users", "/Volumes"}
	systemExcept = []string{"/var/tmp", "/var/www", "/private/tmp", "/private/var/tmp"}
)

// unsafeDefault says why dir cannot be the default writable folder (the
// working directory or its git top-level, when no policy names one), or
// "": a system folder, the home folder itself, or a hidden folder of the
// home folder (the configuration of the user's programs: ~/.config,
// ~/.ssh). `cd /etc && agentbox run` as root would otherwise make the
// host's /etc writable.
func (r *resolver) unsafeDefault(dir string) string {
	if r.env.GOOS == "windows" {
		return ""
	}
	home := r.env.Home
	if home != "" && plan.Within(dir, home) {
		if dir == home {
			return "your home folder"
		}
		rest := strings.TrimPrefix(dir, home+"/")
		if strings.HasPrefix(rest, ".") {
			return "a hidden folder of your home folder, where programs keep their configuration"
		}
		return ""
	}
	for _, e := range systemExcept {
		if dir != e && plan.Within(dir, e) {
			return ""
		}
	}
	for _, s := range systemRoots {
		if dir == s {
			return "a system folder"
		}
	}
	for _, s := range systemTrees {
		if plan.Within(dir, s) {
			return "a system folder"
		}
	}
	return ""
}

// checkDefaultWritable refuses a default writable folder that unsafeDefault
// objects to, unless a policy or flag names that very folder writable.
func (r *resolver) checkDefaultWritable(dir, why string) error {
	bad := r.unsafeDefault(dir)
	if bad == "" {
		return nil
	}
	for _, e := range r.m.lists["filesystem.writable"] {
		if p, err := r.expand(e); err == nil {
			if real, err := r.real(p); err == nil && real == dir {
				return nil
			}
		}
	}
	flags := []string{"--writable", dir}
	if r.needsBroad(dir) {
		flags = append(flags, "--allow-broad-writable")
	}
	return &NeedFlags{Flags: flags, Err: &policyError{where: "default writable folder", msg: fmt.Sprintf(
		"%s (%s) is %s; agentbox does not make it writable unless you name it",
		dir, strings.TrimPrefix(why, "default: "), bad)}}
}

// needsBroad reports whether a writable dir needs --allow-broad-writable:
// it is / or holds the home folder, and the flag is not given.
func (r *resolver) needsBroad(dir string) bool {
	return !r.opts.AllowBroad && (dir == "/" || plan.Within(r.env.Home, dir))
}

// NeedFlags is an error that the command-line flags Flags would resolve:
// a folder that is writable only when the user names it (and says
// --allow-broad-writable when it holds the home folder). The CLI shows
// the whole command line that works, with them added.
type NeedFlags struct {
	Err   error
	Flags []string
}

func (e *NeedFlags) Error() string { return e.Err.Error() }
func (e *NeedFlags) Unwrap() error { return e.Err }

// denyPaths are the real paths of every deny rule, from the policies and
// the defaults, that exist.
func (r *resolver) denyPaths() []string {
	var paths []string
	for _, e := range r.m.lists["filesystem.deny"] {
		if p, err := r.expand(e); err == nil {
			paths = append(paths, p)
		}
	}
	for _, d := range r.defaultDenied() {
		paths = append(paths, d.path)
	}
	var out []string
	for _, p := range paths {
		if real, err := r.real(p); err == nil {
			out = append(out, real)
		}
	}
	return out
}
