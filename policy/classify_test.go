package policy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name, toml string
		want       []string
	}{
		{"writable paths by where they lie", `[filesystem]
writable = ["build", "~/.config", "~/.local/bin", "/srv/data", "$HOME/notes"]
`, []string{
			"  inside the project: filesystem.writable = build (/home/u/proj/build)",
			"! elsewhere in your home folder: filesystem.writable = ~/.config (/home/u/.config)",
			"! elsewhere in your home folder: filesystem.writable = ~/.local/bin (/home/u/.local/bin)",
			"! outside your home folder: filesystem.writable = /srv/data",
			"! elsewhere in your home folder: filesystem.writable = $HOME/notes (/home/u/notes)",
		}},
		{"what tightens", `[filesystem]
read_only = ["docs"]
deny = ["~/.aws"]
[network]
mode = "none"
deny = ["x.test"]
[sandbox]
enforce = "require"
backend = "bwrap"
`, []string{
			"  tightens: filesystem.read_only = docs",
			"  tightens: filesystem.deny = ~/.aws",
			"  tightens: network.deny = x.test",
			"  tightens: network.mode = none",
			"  tightens: sandbox.backend = bwrap",
			"  tightens: sandbox.enforce = require",
		}},
		{"what loosens", `[sandbox]
enforce = "best-effort"
backend = "windows"
[seccomp]
allow = ["userns", "ptrace"]
[network]
mode = "open"
allow = ["evil.test"]
unix_sockets = ["$SSH_AUTH_SOCK", "/var/run/docker.sock"]
[tmp]
mode = "host"
[env]
pass = ["*"]
[filesystem]
ssh_keys = "visible"
[provider]
name = "claude"
[limits]
processes = 0
`, []string{
			"! loosens the network: network.allow = evil.test",
			"! loosens the network (host services behind these unix sockets answer the box): network.unix_sockets = $SSH_AUTH_SOCK, /var/run/docker.sock",
			"! loosens the environment (passes these variables into the box): env.pass = *",
			"! loosens seccomp: seccomp.allow = userns, ptrace",
			"! exposes your SSH private keys: filesystem.ssh_keys = visible: everything in the box can read and copy them",
			"  unchanged: limits.processes = 0: already so without this policy",
			"! loosens the network: network.mode = open: the host's network",
			"! chooses the provider: provider.name = claude: its folders become writable whatever the command",
			"! loosens the backend: sandbox.backend = windows: a backend weaker than bubblewrap, or one that cannot run here (with best-effort: unconfined)",
			"! loosens enforcement: sandbox.enforce = best-effort: runs the command unconfined when no backend can confine it",
			"! loosens /tmp: tmp.mode = host: the host's /tmp, shared with every program",
		}},
		{"what the network gains", `[network]
upstream = "http://alice:s3cret@proxy.corp:3128"
publish = ["3000", "8080:80"]
allow = ["GET gh.test/org/*"]
[[network.secret]]
env = "API_KEY"
hosts = ["api.test"]
[[network.secret]]
env = "TOKEN"
file = "~/.token"
hosts = ["x.test", "*.x.test"]
`, []string{
			"! loosens the network: network.allow = GET gh.test/org/*",
			"! opens a way in (the host's port reaches the box's server): network.publish = 3000, 8080:80",
			"! loosens the network: network.upstream = http://alice:***@proxy.corp:3128: allowed hosts are reached through this proxy, which sees every host and all plain HTTP, and gets its password",
			"! sends a secret: network.secret API_KEY (from agentbox's environment) to api.test",
			"! sends a secret: network.secret TOKEN (from ~/.token) to x.test, *.x.test",
		}},
		{"an upstream of none", "[network]\nupstream = \"none\"\n", []string{"  sets: network.upstream = none"}},
		{"names are escaped", "[filesystem]\nwritable = [\"a\\u202eb\"]\n[env.set]\nX = \"\\u001b[2J\"\n", []string{
			`  inside the project: filesystem.writable = "a\u202eb" ("/home/u/proj/a\u202eb")`,
			"  sets: env.set.X = (a value)",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Parse("project", "/home/u/proj/.agentbox.toml", []byte("version = 1\n"+tc.toml))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, g := range Classify(l, fakeEnv(nil), Baseline{}) {
				got = append(got, g.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Classify (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDiff(t *testing.T) {
	old := []Grant{{Category: inProject, Text: "filesystem.writable = build"}, {Category: tightens, Text: "filesystem.read_only = docs"}}
	new := []Grant{{Category: inProject, Text: "filesystem.writable = build"}, {Danger: true, Category: inHome, Text: "filesystem.writable = ~/.ssh"}}
	want := []string{
		"+ ! elsewhere in your home folder: filesystem.writable = ~/.ssh",
		"-   tightens: filesystem.read_only = docs",
	}
	if diff := cmp.Diff(want, Diff(old, new)); diff != "" {
		t.Errorf("Diff (-want +got):\n%s", diff)
	}
	if got := Diff(old, old); len(got) != 1 || !strings.Contains(got[0], "nothing it grants changed") {
		t.Errorf("Diff of equal grants = %q", got)
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain /path/ok":           "plain /path/ok",
		"ünïcode":                  "ünïcode",
		"evil\x1b]0;owned\x07dir":  `evil\x1b]0;owned\adir`,
		"line\nforged":             `line\nforged`,
		"rtl\u202eevil":            `rtl\u202eevil`,
		"bad\xffbyte":              `bad\xffbyte`,
		"tab\there":                `tab\there`,
		"carriage\roverwrite":      `carriage\roverwrite`,
		"zero\u200bwidth is shown": `zero\u200bwidth is shown`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

// A policy is classified against what each setting is without it: the
// built-in defaults and your own configuration. The starter policy of
// agentbox init sets nothing but defaults and tightening, so nothing in
// it is marked; the same value loosens when your own configuration is
// tighter. Before, the starter's network.mode and env.mode were marked
// "! loosens" although they are the defaults.
func TestClassifyAgainstBaseline(t *testing.T) {
	starter, err := Parse("project", "/home/u/proj/.agentbox.toml", []byte(Starter))
	if err != nil {
		t.Fatal(err)
	}
	defaults := BaselineOf([]*Layer{Defaults()})
	for _, g := range Classify(starter, fakeEnv(nil), defaults) {
		if g.Danger {
			t.Errorf("the starter policy, against the defaults: %s", g)
		}
	}
	own, err := Parse("user", "/home/u/.config/agentbox/config.toml", []byte("[network]\nmode = \"none\"\n[env]\nmode = \"clean\"\n[limits]\nprocesses = 4096\n[caches]\ndefault = \"off\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	strict := BaselineOf([]*Layer{Defaults(), own})
	proj, err := Parse("project", "/home/u/proj/.agentbox.toml", []byte("[network]\nmode = \"open\"\n[tmp]\nmode = \"workspace\"\n[limits]\nprocesses = 0\n[caches]\ngo = \"off\"\nnpm = \"private\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range Classify(proj, fakeEnv(nil), strict) {
		got = append(got, g.String())
	}
	want := []string{
		"  unchanged: caches.go = off: already so without this policy",
		"  sets: caches.npm = private",
		"! loosens limits: limits.processes = 0: unlimited",
		"! loosens the network: network.mode = open: the host's network",
		"  unchanged: tmp.mode = workspace: already so without this policy",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("against a stricter configuration (-want +got):\n%s", diff)
	}
	got = nil
	for _, g := range Classify(proj, fakeEnv(nil), defaults) {
		got = append(got, g.String())
	}
	want = []string{
		"  sets: caches.go = off",
		"  unchanged: caches.npm = private: already so without this policy",
		"  unchanged: limits.processes = 0: already so without this policy",
		"  unchanged: network.mode = open: already so without this policy",
		"  unchanged: tmp.mode = workspace: already so without this policy",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("against the defaults (-want +got):\n%s", diff)
	}
}
