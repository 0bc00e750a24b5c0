package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/plan"
)

// The default writable folder is refused when it is a system folder, the
// home folder or a hidden folder of it, unless named explicitly.
func TestDefaultWritableRefused(t *testing.T) {
	files := mapFS{
		"/home/u/.config/nvim/init.lua": "", "/home/u/proj/x": "", "/etc/hosts": "",
		"/usr/lib/x": "", "/var/tmp/p/x": "", "/var/lib/x": "", "/srv/app/x": "", "/opt/x": "",
	}
	tests := []struct {
		cwd, want string
	}{
		{"/etc", "is a system folder"},
		{"/usr/lib", "is a system folder"},
		{"/var/lib", "is a system folder"},
		{"/opt", "is a system folder"},
		{"/", "is a system folder"},
		{"/home/u", "is your home folder"},
		{"/home/u/.config", "is a hidden folder of your home folder"},
		{"/home/u/.config/nvim", "is a hidden folder of your home folder"},
		{"/home/u/proj", ""},
		{"/var/tmp/p", ""},
		{"/srv/app", ""},
	}
	for _, tc := range tests {
		t.Run(tc.cwd, func(t *testing.T) {
			env := fakeEnv(files)
			env.Cwd = tc.cwd
			layers, err := Load(env, Flags{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = Resolve(layers, env, []string{"true"}, Options{AllowBroad: true})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var nf *NeedFlags
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &nf) || strings.Join(nf.Flags, " ") != "--writable "+tc.cwd {
				t.Fatalf("error %v, want one saying %q with the flag --writable %s", err, tc.want, tc.cwd)
			}
			// Named explicitly, it is the user's choice.
			layers, err = Load(env, Flags{Writable: []string{tc.cwd}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Resolve(layers, env, []string{"true"}, Options{AllowBroad: true}); err != nil {
				t.Errorf("named with --writable, still refused: %v", err)
			}
		})
	}
}

// The refusal of a default writable folder carries every flag that makes
// it writable, --allow-broad-writable too where the folder is / or holds
// the home folder, so the CLI can show the whole command that works.
// Before, the home folder's refusal named --writable alone, and that
// command was refused again for --allow-broad-writable.
func TestDefaultWritableNeedsFlags(t *testing.T) {
	files := mapFS{"/home/u/.config/x": "", "/etc/hosts": ""}
	for cwd, want := range map[string]string{
		"/home/u":         "--writable /home/u --allow-broad-writable",
		"/":               "--writable / --allow-broad-writable",
		"/home/u/.config": "--writable /home/u/.config",
		"/etc":            "--writable /etc",
	} {
		env := fakeEnv(files)
		env.Cwd = cwd
		layers, err := Load(env, Flags{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = Resolve(layers, env, []string{"true"}, Options{})
		var nf *NeedFlags
		if !errors.As(err, &nf) || strings.Join(nf.Flags, " ") != want {
			t.Errorf("%s: %v, want the flags %s", cwd, err, want)
			continue
		}
		// Those flags make it run.
		flags := Flags{Writable: []string{cwd}, AllowBroad: strings.Contains(want, "--allow-broad-writable")}
		if layers, err = Load(env, flags); err != nil {
			t.Fatal(err)
		}
		if _, err := Resolve(layers, env, []string{"true"}, Options{AllowBroad: flags.AllowBroad}); err != nil {
			t.Errorf("%s with %s: %v", cwd, want, err)
		}
	}
}

// The default deny list: credentials, the other agents' tokens, ~/.ssh's
// private files (unless ssh_keys = "visible").
func TestDefaultDenied(t *testing.T) {
	files := mapFS{
		"/home/u/proj/x": "", "/home/u/.pgpass": "", "/home/u/.bash_history": "",
		"/home/u/.config/rclone/rclone.conf": "", "/home/u/.local/share/keyrings/login.keyring": "",
		"/home/u/.ssh/id_ed25519": "", "/home/u/.ssh/id_ed25519.pub": "", "/home/u/.ssh/work_key": "",
		"/home/u/.ssh/config": "", "/home/u/.ssh/known_hosts": "", "/home/u/.ssh/known_hosts.old": "",
		"/home/u/.ssh/authorized_keys": "", "/home/u/.ssh/cm/socket": "",
		"/home/u/.codex/auth.json": "", "/home/u/.claude/.credentials.json": "",
	}
	deny := func(t *testing.T, flags Flags, command ...string) []string {
		env := fakeEnv(files)
		layers, err := Load(env, flags)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Resolve(layers, env, command, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return p.Denied()
	}
	base := []string{"/home/u/.config/rclone", "/home/u/.local/share/keyrings", "/home/u/.bash_history", "/home/u/.pgpass"}
	ssh := []string{"/home/u/.ssh/cm", "/home/u/.ssh/id_ed25519", "/home/u/.ssh/work_key"}
	tests := []struct {
		name    string
		flags   Flags
		command []string
		want    []string
	}{
		{"any command", Flags{}, []string{"make"}, append(append(append([]string(nil), base...), ssh...),
			"/home/u/.codex/auth.json", "/home/u/.claude/.credentials.json")},
		{"claude sees its own token", Flags{}, []string{"claude"}, append(append(append([]string(nil), base...), ssh...), "/home/u/.codex/auth.json")},
		{"codex sees its own token", Flags{}, []string{"codex"}, append(append(append([]string(nil), base...), ssh...), "/home/u/.claude/.credentials.json")},
		{"ssh keys visible", Flags{Policy: []string{"/home/u/visible.toml"}}, []string{"make"}, append(append([]string(nil), base...),
			"/home/u/.codex/auth.json", "/home/u/.claude/.credentials.json")},
	}
	files["/home/u/visible.toml"] = "version = 1\n[filesystem]\nssh_keys = \"visible\"\n"
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := deny(t, tc.flags, tc.command...)
			if diff := cmp.Diff(sorted(tc.want), sorted(got)); diff != "" {
				t.Errorf("denied (-want +got):\n%s", diff)
			}
		})
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// The temporary folders live in the user's own folder: XDG_RUNTIME_DIR
// when it is closed to others, else the state folder; the base is hidden
// in the box before /tmp is bound, created for the user alone.
func TestTmpBase(t *testing.T) {
	files := mapFS{"/home/u/proj/x": "", "/run/user/1000/x": ""}
	env := fakeEnv(files)
	if got := tmpBase(env); got != "/nonexistent/state/agentbox/tmp" {
		t.Errorf("without XDG_RUNTIME_DIR: %s", got)
	}
	// mapFS folders are 0755: open to others, so not used.
	env = fakeEnv(files, "XDG_RUNTIME_DIR=/run/user/1000")
	if got := tmpBase(env); got != "/nonexistent/state/agentbox/tmp" {
		t.Errorf("with an XDG_RUNTIME_DIR others can enter: %s", got)
	}
	w := newWorld(t)
	run := w.path("run")
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	w.env.Environ = append(w.env.Environ, "XDG_RUNTIME_DIR="+run)
	if got := tmpBase(w.env); got != filepath.Join(run, "agentbox", "tmp") {
		t.Errorf("with a private XDG_RUNTIME_DIR: %s", got)
	}
	// Nested (inside a box): the outer box's temporary folder, only when
	// it is the user's own and closed to others (a private /tmp); the
	// host's shared /tmp (mode 1777) is never the base.
	nested := w.env
	nested.Environ = append(append([]string(nil), w.env.Environ...), "AGENTBOX=1", "AGENTBOX_DEPTH=1")
	nested.UID = os.Getuid()
	for _, tc := range []struct {
		mode os.FileMode
		own  bool
	}{{0o700, true}, {0o755, true}, {0o777 | os.ModeSticky, false}, {0o770, false}} {
		dir := w.path(fmt.Sprintf("tmp-%o", tc.mode))
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, tc.mode); err != nil {
			t.Fatal(err)
		}
		nested.TempDir = dir
		want := filepath.Join(run, "agentbox", "tmp")
		if tc.own {
			want = filepath.Join(dir, fmt.Sprintf("agentbox-%d", os.Getuid()))
		}
		if got := tmpBase(nested); got != want {
			t.Errorf("nested, temporary folder mode %v: %s, want %s", tc.mode, got, want)
		}
	}

	env = fakeEnv(files, "XDG_STATE_HOME=/home/u/.local/state")
	layers, err := Load(env, Flags{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Resolve(layers, env, []string{"true"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var tmp []string
	for _, m := range p.Mounts {
		if m.Stage == plan.StageTmp && !m.Sockets {
			tmp = append(tmp, string(m.Op)+" "+m.Src()+" "+m.Path)
		}
	}
	wantTmp := []string{
		"hide-dir /home/u/.local/state/agentbox/tmp /home/u/.local/state/agentbox/tmp",
		"bind /home/u/.local/state/agentbox/tmp/proj-" + p.Tmp.HostDir[len(p.Tmp.HostDir)-8:] + " /tmp",
	}
	if diff := cmp.Diff(wantTmp, tmp); diff != "" {
		t.Errorf("tmp mounts (-want +got):\n%s", diff)
	}
	var prep []string
	for _, d := range p.Prepare {
		if d.Placeholder != "" || strings.Contains(d.Path, "/caches") {
			continue // the caches' and the placeholders' are tested elsewhere
		}
		prep = append(prep, d.Path+" "+strconvOctal(d.Mode)+" private="+map[bool]string{true: "yes", false: "no"}[d.Private])
	}
	wantPrep := []string{
		"/home/u/.local 700 private=no",
		"/home/u/.local/state 700 private=no",
		"/home/u/.local/state/agentbox 700 private=no",
		"/home/u/.local/state/agentbox/tmp 700 private=yes",
		p.Tmp.HostDir + " 700 private=yes",
	}
	if diff := cmp.Diff(wantPrep, prep); diff != "" {
		t.Errorf("prepare (-want +got):\n%s", diff)
	}
}

// A deny path inside a writable root pins every folder between the root
// and it, so it cannot be renamed out of the path the next run hides.
func TestDenyParentsPinned(t *testing.T) {
	env := fakeEnv(mapFS{"/home/u/proj/conf/db/secret.txt": "", "/home/u/proj/README": ""})
	layers, err := Load(env, Flags{Deny: []string{"/home/u/proj/conf/db/secret.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Resolve(layers, env, []string{"true"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range p.Mounts {
		if m.Stage >= plan.StageReadOnly && strings.HasPrefix(m.Path, "/home/u/proj/conf") {
			got = append(got, string(m.Op)+" "+m.Path+" ("+m.Origin.Key+")")
		}
	}
	want := []string{
		"pin /home/u/proj/conf (always: folder holding a deny path)",
		"pin /home/u/proj/conf/db (always: folder holding a deny path)",
		"hide-file /home/u/proj/conf/db/secret.txt (flag --deny)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
}
