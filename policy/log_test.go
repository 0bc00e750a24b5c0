package policy

import (
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/plan"
)

// log.enabled: bad values are one line naming the file, line and key.
func TestParseLogBad(t *testing.T) {
	tests := []struct {
		name, toml, want string
	}{
		{"a string", "[log]\nenabled = \"no\"\n", file + ":2: log.enabled: wrong type: TOML value has type string; want true or false"},
		{"a number", "version = 1\n[log]\nenabled = 0\n", file + ":3: log.enabled: wrong type: TOML value has type int64; want true or false"},
		{"unknown key", "[log]\nenabled = true\ndir = \"/tmp/x\"\n", file + ":3: log.dir: unknown key"},
		{"filesystem another string", "[log]\nfilesystem = \"off\"\n", file + ":2: log.filesystem: \"off\": want true, false or \"complete\""},
		{"filesystem a number", "[log]\nfilesystem = 1\n", file + ":2: log.filesystem: wrong type: TOML value has type int64; want true, false or \"complete\""},
		{"filesystem a list", "[log]\nfilesystem = [true]\n", file + ":2: log.filesystem: wrong type: TOML value has type array; want true, false or \"complete\""},
		{"filesystem_reads a string", "[log]\nfilesystem_reads = \"all\"\n", file + ":2: log.filesystem_reads: wrong type: TOML value has type string; want true or false"},
		{"a value instead of a table", "log = false\n", file + ":1: log: wrong type: wrong type for this key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("project", file, []byte(tc.toml))
			if err == nil {
				t.Fatalf("want error %q", tc.want)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if !errors.Is(err, ErrPolicy) {
				t.Errorf("error %v is not ErrPolicy", err)
			}
		})
	}
}

// The log is on by default, in $XDG_STATE_HOME/agentbox/log; a policy
// turns it off or on again, the last layer winning as for every single
// value; the plan names the rule that decided.
func TestResolveLog(t *testing.T) {
	tests := []struct {
		name    string
		user    string // the user's config, "" for none
		project string // the project policy (trusted), "" for none
		extra   string // a --policy file, "" for none
		environ []string
		want    plan.Log
	}{
		{name: "default: the preloaded log", want: plan.Log{Enabled: true, Dir: "$ROOT/state/agentbox/log", Origin: plan.Origin{Key: "default"}, Filesystem: "preload"}},
		{name: "filesystem refusals on", user: "[log]\nfilesystem = true\n",
			want: plan.Log{Enabled: true, Dir: "$ROOT/state/agentbox/log", Origin: plan.Origin{Key: "default"}, Filesystem: "preload"}},
		{name: "filesystem refusals off", user: "[log]\nfilesystem = false\n",
			want: plan.Log{Enabled: true, Dir: "$ROOT/state/agentbox/log", Origin: plan.Origin{Key: "default"}}},
		{name: "filesystem refusals off, then on for the project", user: "[log]\nfilesystem = false\n", project: "[log]\nfilesystem = true\n",
			want: plan.Log{Enabled: true, Dir: "$ROOT/state/agentbox/log", Origin: plan.Origin{Key: "default"}, Filesystem: "preload"}},
		{name: "the complete mode", user: "[log]\nfilesystem = \"complete\"\n",
			want: plan.Log{Enabled: true, Dir: "$ROOT/state/agentbox/log", Origin: plan.Origin{Key: "default"}, Filesystem: "complete"}},
		{name: "the complete mode, then the preloaded log for the project", user: "[log]\nfilesystem = \"complete\"\n", project: "[log]\nfilesystem = true\n",
			want: plan.Log{Enabled: true, Dir: "$ROOT/state/agentbox/log", Origin: plan.Origin{Key: "default"}, Filesystem: "preload"}},
		{name: "reads too: the complete mode", user: "[log]\nfilesystem_reads = true\n",
			want: plan.Log{Enabled: true, Dir: "$ROOT/state/agentbox/log", Origin: plan.Origin{Key: "default"}, Filesystem: "complete", Reads: true}},
		{name: "reads ask for the log even where it is off", user: "[log]\nfilesystem = false\n", project: "[log]\nfilesystem_reads = true\n",
			want: plan.Log{Enabled: true, Dir: "$ROOT/state/agentbox/log", Origin: plan.Origin{Key: "default"}, Filesystem: "complete", Reads: true}},
		{name: "reads, then not for the project", user: "[log]\nfilesystem = true\nfilesystem_reads = true\n", project: "[log]\nfilesystem_reads = false\n",
			want: plan.Log{Enabled: true, Dir: "$ROOT/state/agentbox/log", Origin: plan.Origin{Key: "default"}, Filesystem: "preload"}},
		{name: "nothing recorded when the log is off", user: "[log]\nenabled = false\nfilesystem_reads = true\n",
			want: plan.Log{Origin: plan.Origin{File: "$ROOT/home/u/.config/agentbox/config.toml", Line: 2, Key: "log.enabled"}}},
		{name: "off in the user's config", user: "version = 1\n[log]\nenabled = false\n",
			want: plan.Log{Origin: plan.Origin{File: "$ROOT/home/u/.config/agentbox/config.toml", Line: 3, Key: "log.enabled"}}},
		{name: "off for the user, on for the project", user: "[log]\nenabled = false\n", project: "[log]\nenabled = true\n",
			want: plan.Log{Enabled: true, Dir: "$ROOT/state/agentbox/log", Origin: plan.Origin{File: "$ROOT/home/u/proj/.agentbox.toml", Line: 2, Key: "log.enabled"}, Filesystem: "preload"}},
		{name: "off in a --policy file", project: "[log]\nenabled = true\n", extra: "[log]\nenabled = false\n",
			want: plan.Log{Origin: plan.Origin{File: "$ROOT/extra.toml", Line: 2, Key: "log.enabled"}}},
		{name: "XDG_STATE_HOME unset", environ: []string{"XDG_STATE_HOME="},
			want: plan.Log{Enabled: true, Dir: "$ROOT/home/u/.local/state/agentbox/log", Origin: plan.Origin{Key: "default"}, Filesystem: "preload"}},
		{name: "a relative XDG_STATE_HOME is ignored", environ: []string{"XDG_STATE_HOME=state"},
			want: plan.Log{Enabled: true, Dir: "$ROOT/home/u/.local/state/agentbox/log", Origin: plan.Origin{Key: "default"}, Filesystem: "preload"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.setenv(tc.environ...)
			var flags Flags
			if tc.user != "" {
				w.write("home/u/.config/agentbox/config.toml", tc.user)
			}
			if tc.project != "" {
				w.write("home/u/proj/.agentbox.toml", tc.project)
				w.trust("home/u/proj/.agentbox.toml")
			}
			if tc.extra != "" {
				w.write("extra.toml", tc.extra)
				flags.Policy = []string{w.path("extra.toml")}
			}
			p := w.mustResolve(flags, Options{}, "true")
			got := p.Log
			got.Dir = w.norm(got.Dir)
			got.Origin.File = w.norm(got.Origin.File)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
		})
	}
}

// The log folder is protected with agentbox's own state folder: when a
// writable root holds it, the state folder is read-only in the box (made
// first when missing, so the box cannot make it).
func TestResolveLogFolderReadOnly(t *testing.T) {
	for _, exists := range []bool{true, false} {
		w := newWorld(t)
		w.setenv("XDG_STATE_HOME=" + w.path("home/u/.local/state"))
		w.mkdir("home/u/.local/state/agentbox/log")
		if !exists {
			os.RemoveAll(w.path("home/u/.local/state/agentbox"))
		}
		p := w.mustResolve(Flags{Writable: []string{w.path("home/u/.local/state")}}, Options{}, "true")
		found := false
		for _, m := range p.Mounts {
			if m.Path == w.path("home/u/.local/state/agentbox") && m.Op == plan.ROBind {
				found = true
			}
		}
		if !found {
			t.Errorf("exists=%v: the state folder is not read-only:\n%q", exists, w.mounts(p))
		}
		if !plan.Within(p.Log.Dir, w.path("home/u/.local/state/agentbox")) {
			t.Errorf("log folder %s is not in the state folder", p.Log.Dir)
		}
	}
}
