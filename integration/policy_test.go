//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An untrusted project policy is refused, shows what it would grant and how
// to trust it; trusted it is used; edited it is refused again.
func TestProjectPolicyTrust(t *testing.T) {
	w := newWorld(t)
	extra := filepath.Join(w.base, "extra")
	mkdir(t, extra)
	policy := filepath.Join(w.project, ".agentbox.toml")
	write(t, policy, "version = 1\n[filesystem]\nwritable = [\""+extra+"\"]\n")

	r := w.sh(nil, `echo ran`)
	expectCode(t, r, 125)
	expectNotContains(t, "stdout", r.stdout, "ran")
	expectContains(t, "stderr", r.stderr, "project policy is not trusted")
	expectContains(t, "stderr", r.stderr, "filesystem.writable = "+extra)
	expectContains(t, "stderr", r.stderr, "agentbox trust "+policy)

	tr := w.run("trust")
	expectCode(t, tr, 0)
	store := filepath.Join(w.home, ".local", "state", "agentbox", "trusted")
	if data, err := os.ReadFile(store); err != nil || !strings.Contains(string(data), policy) {
		t.Fatalf("trust store %s: %q %v", store, data, err)
	}
	r = w.sh(nil, `echo x > `+extra+`/f && echo ran; (echo '# more' >> .agentbox.toml) 2>&1 | grep -q Read-only && echo policy-ro`)
	expectCode(t, r, 0)
	expectContains(t, "trusted run", r.stdout, "ran\npolicy-ro")

	write(t, policy, "version = 1\n[filesystem]\nwritable = [\""+extra+"\", \"/var/tmp\"]\n")
	r = w.sh(nil, `echo ran`)
	expectCode(t, r, 125)
	expectContains(t, "stderr", r.stderr, "changed since it was trusted")

	rv := w.run("trust", "--revoke")
	expectCode(t, rv, 0)
	expectContains(t, "revoke", rv.stdout, "revoked")
}

// Every bad input is one clear line naming the file, line and key, exit 125,
// and nothing on disk is touched.
func TestBadInput(t *testing.T) {
	w := newWorld(t)
	bad := func(name, content string) string {
		p := filepath.Join(w.base, name)
		write(t, p, content)
		return p
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"malformed toml", []string{"--policy", bad("m.toml", "version = 1\n[filesystem\n")}, "m.toml:2: malformed TOML"},
		{"unknown key", []string{"--policy", bad("u.toml", "version = 1\n[filesystem]\nwriteable = []\n")}, "u.toml:3: filesystem.writeable: unknown key"},
		{"wrong type", []string{"--policy", bad("t.toml", "[filesystem]\nwritable = \"/x\"\n")}, "t.toml:2: filesystem.writable: wrong type"},
		{"bad enum", []string{"--policy", bad("e.toml", "[network]\nmode = \"closed\"\n")}, `e.toml:2: network.mode: "closed" is not one of open, none, allowlist`},
		{"missing writable root", []string{"--writable", filepath.Join(w.base, "nope")}, "flag --writable: " + filepath.Join(w.base, "nope") + ": writable folder does not exist (and lies outside the project, or in a hidden folder, so agentbox does not make it): mkdir -p " + filepath.Join(w.base, "nope")},
		{"relative flag path", []string{"--writable", "rel/path"}, `flag --writable: "rel/path": relative path`},
		{"dotdot escaping the policy folder", []string{"--policy", bad("d/dd.toml", "[filesystem]\nwritable = [\"../..\"]\n")}, "a relative path may not leave the policy's folder"},
		{"writable home", []string{"--writable", "~"}, "pass --allow-broad-writable"},
		{"writable root", []string{"--writable", "/"}, "making / writable"},
		{"unknown provider", []string{"--provider", "nosuch"}, `unknown provider "nosuch"`},
		{"bad workspace id", []string{"--workspace", "../up"}, "an id cannot start with a dot"},
		{"bad seccomp group", []string{"--policy", bad("s.toml", "[seccomp]\nallow = [\"everything\"]\n")}, `s.toml:2: seccomp.allow[0]: unknown seccomp group "everything"`},
	}
	before := listTree(t, w.base)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run"}, tc.args...)
			args = append(args, "--", "sh", "-c", "echo RAN")
			r := w.run(args...)
			expectCode(t, r, 125)
			expectNotContains(t, "stdout", r.stdout, "RAN")
			expectContains(t, "stderr", r.stderr, tc.want)
			if !strings.HasPrefix(r.stderr, "agentbox: error: ") {
				t.Fatalf("want the error in agentbox's voice, got %q", r.stderr)
			}
		})
	}
	t.Run("empty command", func(t *testing.T) {
		r := w.run("run", "--")
		expectCode(t, r, 125)
		expectContains(t, "stderr", r.stderr, "empty command")
	})
	if after := listTree(t, w.base); after != before {
		t.Fatalf("bad input changed the disk:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// listTree lists every path below dir with its mode and size.
func listTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			b.WriteString(p + " " + fi.Mode().String() + "\n")
		}
		return nil
	})
	return b.String()
}

// A writable / or home is allowed only with the explicit flag, and plan says
// so loudly.
func TestBroadWritableNeedsFlag(t *testing.T) {
	w := newWorld(t)
	write(t, filepath.Join(w.home, ".bashrc"), "# rc\n")
	r := w.run("plan", "--writable", "~", "--allow-broad-writable", "--", "true")
	expectCode(t, r, 0)
	expectContains(t, "plan", r.stdout, "WARNING:   WRITABLE "+w.home)
	r = w.sh([]string{"--writable", "~", "--allow-broad-writable"}, `echo x > $HOME/new && echo wrote; (echo evil >> $HOME/.bashrc) 2>&1 | grep -q Read-only && echo rc-ro`)
	expectCode(t, r, 0)
	expectContains(t, "run", r.stdout, "wrote\nrc-ro")
}

// The user config and AGENTBOX_* variables are layers.
func TestUserConfigAndEnvLayers(t *testing.T) {
	w := newWorld(t)
	hidden := filepath.Join(w.base, "hidden")
	write(t, filepath.Join(hidden, "f"), "secret")
	envHidden := filepath.Join(w.base, "envhidden")
	write(t, filepath.Join(envHidden, "f"), "secret")
	write(t, filepath.Join(w.home, ".config", "agentbox", "config.toml"), "version = 1\n[filesystem]\ndeny = [\""+hidden+"\"]\n")
	w.env = append(w.env, "AGENTBOX_DENY="+envHidden, "AGENTBOX_NETWORK=none")
	r := w.sh(nil, `ls -A `+hidden+` | wc -l; ls -A `+envHidden+` | wc -l; echo $AGENTBOX_NETWORK`)
	expectCode(t, r, 0)
	expectContains(t, "layers", r.stdout, "0\n0\nnone\n")
	p := w.run("plan", "--", "true")
	expectContains(t, "plan", p.stdout, "config.toml:3 filesystem.deny[0]")
	expectContains(t, "plan", p.stdout, "env AGENTBOX_DENY")
}
