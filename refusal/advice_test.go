package refusal

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/fslog"
	"github.com/agentbox/agentbox/plan"
)

// The smallest change: the tool's own folder, a cache as a whole, never a
// host-executed file, never the home folder or a system folder without
// saying so, and nothing for what is always protected or denied.
func TestAdvise(t *testing.T) {
	p := bwrapPlan(t)
	root := p.Mounts[0]
	missing := map[string]bool{"/home/u/.config/newtool": true, "/home/u/.npm": true}
	exists := func(d string) bool { return !missing[d] }
	tests := []struct {
		name string
		op   fslog.Op
		path string
		m    plan.Mount
		want Fix
	}{
		{"npm's cache", fslog.Create, "/home/u/.yarn/cache/x", root,
			Fix{Key: "filesystem.writable", Value: "~/.yarn", Flag: "--writable ~/.yarn", Why: "yarn's cache: the box may add to it, and the tool uses what it finds there outside the box too"}},
		{"go's module cache", fslog.Mkdir, "/home/u/go/pkg/mod/cache/download", root,
			Fix{Key: "filesystem.writable", Value: "~/go/pkg/mod", Flag: "--writable ~/go/pkg/mod", Why: "Go's module cache: the box may add to it, and the tool uses what it finds there outside the box too"}},
		{"a program's folder in ~/.cache", fslog.Create, "/home/u/.cache/pip/http/x", root,
			Fix{Key: "filesystem.writable", Value: "~/.cache/pip", Flag: "--writable ~/.cache/pip", Why: "pip's cache: the box may add to it, and the tool uses what it finds there outside the box too"}},
		{"another program's folder in ~/.cache", fslog.Create, "/home/u/.cache/tool/x", root,
			Fix{Key: "filesystem.writable", Value: "~/.cache/tool", Flag: "--writable ~/.cache/tool", Why: "the folder ~/.cache/tool in your home folder"}},
		{"npm's cache before it exists", fslog.Mkdir, "/home/u/.npm", root,
			Fix{Key: "filesystem.writable", Value: "~/.npm", Flag: "--writable ~/.npm", Create: "~/.npm", Why: "npm's package cache: the box may add to it, and the tool uses what it finds there outside the box too"}},
		{"a program's folder in ~/.config", fslog.Create, "/home/u/.config/tool/state.json", root,
			Fix{Key: "filesystem.writable", Value: "~/.config/tool", Flag: "--writable ~/.config/tool", Why: "the folder ~/.config/tool in your home folder"}},
		{"a program's folder that does not exist yet", fslog.Mkdir, "/home/u/.config/newtool/x", root,
			Fix{Key: "filesystem.writable", Value: "~/.config/newtool", Flag: "--writable ~/.config/newtool", Create: "~/.config/newtool", Why: "the folder ~/.config/newtool in your home folder"}},
		{"a new file directly in the home folder", fslog.Create, "/home/u/.tool_history", root,
			Fix{Risky: true, Why: "it would be created directly in ~, which only making that whole folder writable allows (--writable ~ --allow-broad-writable)"}},
		{"a shell startup file", fslog.Write, "/home/u/.bashrc", root,
			Fix{Key: "filesystem.writable", Value: "~/.bashrc", Flag: "--writable ~/.bashrc", Risky: true, Why: "~/.bashrc: every interactive bash runs it"}},
		{"a user's bin", fslog.Create, "/home/u/.local/bin/tool", root,
			Fix{Key: "filesystem.writable", Value: "~/.local/bin", Flag: "--writable ~/.local/bin", Risky: true, Why: "~/.local/bin: on PATH: a program there shadows the system's"}},
		{"a system folder", fslog.Create, "/usr/local/lib/node_modules/x", root,
			Fix{Key: "filesystem.writable", Value: "/usr/local/lib/node_modules", Flag: "--writable /usr/local/lib/node_modules", Risky: true, Why: "/usr/local/lib/node_modules is a system folder: the host runs programs and reads configuration from it"}},
		{"another folder", fslog.Create, "/srv/data/out.csv", root,
			Fix{Key: "filesystem.writable", Value: "/srv/data", Flag: "--writable /srv/data", Why: "the folder /srv/data"}},
		{"always protected", fslog.Create, "/home/u/proj/.git/hooks/x", p.Mounts[10],
			Fix{Risky: true, Why: "always protected (git hooks): a host program runs or obeys it later, so no policy makes it writable"}},
		{"denied", fslog.Read, "/home/u/.aws/credentials", p.Mounts[11],
			Fix{Risky: true, Why: "hidden by default: credential store; only taking that entry out shows it, and it may hold secrets"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Advise(p, tc.op, tc.path, tc.m, exists)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// Under Landlock, a folder kept unchangeable for a read-only path below it
// is what bubblewrap does without.
// agentbox's own state and configuration folders in a read-only home
// folder: no mount names
// it, but no flag makes it writable either (a run with it writable
// protects it); the advice offered --writable and called it safe.
func TestAdviseOwnState(t *testing.T) {
	p := bwrapPlan(t)
	p.HostExec.State = "/home/u/.local/state/agentbox"
	p.Layers = append(p.Layers, plan.Layer{Name: "user", File: "/home/u/.config/agentbox/config.toml", Status: "absent"})
	want := Fix{Risky: true, Why: "always protected (agentbox's own configuration and state, with the after-run check's records): the box must never write it, so no policy makes it writable"}
	for _, f := range []string{"/home/u/.local/state/agentbox/pending/x", "/home/u/.config/agentbox/config.toml"} {
		got := Advise(p, fslog.Create, f, p.Mounts[0], nil)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Advise %s (-want +got):\n%s", f, diff)
		}
	}
}

func TestAdviseLandlockCarve(t *testing.T) {
	p := landlockPlan(t)
	got := Advise(p, fslog.Create, "/home/u/proj/new.txt", p.Mounts[7], nil)
	if got.Key != "sandbox.backend" || got.Value != "bwrap" || got.Risky {
		t.Errorf("got %+v, want a safe --backend bwrap", got)
	}
}

func TestAdviseNet(t *testing.T) {
	p := testPlan()
	tests := []struct {
		target string
		want   Fix
	}{
		{"registry.npmjs.org:443", Fix{Key: "network.allow", Value: "registry.npmjs.org", Flag: "--allow registry.npmjs.org", Why: "registry.npmjs.org is a package registry or the agent's own service"}},
		{"evil.example:443", Fix{Key: "network.allow", Value: "evil.example", Flag: "--allow evil.example", Risky: true, Why: "the box could send what it reads to evil.example"}},
		{"db.internal:5432", Fix{Key: "network.allow", Value: "db.internal:5432", Flag: "--allow db.internal:5432", Risky: true, Why: "the box could send what it reads to db.internal"}},
	}
	if got := AdviseNet(p, "evil.example:443", `matches deny rule "evil.example"`); got.Key != "" || !got.Risky {
		t.Errorf("a host a deny rule refuses: %+v, want no change", got)
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, AdviseNet(p, tc.target, "no allow rule matches")); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.target, diff)
		}
	}
}

// The summary: one header line, the changes most refusals share first,
// each with its first refusal, a bound, escaped text; nothing for a clean
// run or for a hidden file read as empty.
func TestSummary(t *testing.T) {
	p := bwrapPlan(t)
	j := New(p, nil)
	var b bytes.Buffer
	s := &Summary{W: &b, Plan: p}
	emit := func(a fslog.Attempt) {
		if e, ok := j.Judge(a); ok {
			s.Emit(e)
		}
	}
	for _, f := range []string{"a", "b", "c"} {
		emit(at(fslog.Create, "/home/u/.npm/_cacache/"+f, false, false))
	}
	emit(at(fslog.Create, "/home/u/proj/.git/hooks/pre-commit", false, false))
	emit(at(fslog.Read, "/home/u/.npmrc", true, false)) // read as empty: log only
	emit(at(fslog.Create, "/etc/\x1b[31mred", false, false))
	no := false
	s.Emit(event.Event{Kind: event.Net, Allowed: &no, Target: "registry.npmjs.org:443", Reason: "no allow rule matches"})
	s.Emit(event.Event{Kind: event.RunEnd})
	want := `agentbox: the box was refused 5 filesystem operations and 1 connection (agentbox log --denials lists each); what would allow them:
agentbox:   3×, first create ~/.npm/_cacache/a, EROFS: --writable ~/.npm (safe: npm's package cache: the box may add to it, and the tool uses what it finds there outside the box too)
agentbox:   create ~/proj/.git/hooks/pre-commit, EROFS: nothing a policy adds allows it (risky): always protected (git hooks): a host program runs or obeys it later, so no policy makes it writable
agentbox:   create /etc/\x1b[31mred, EROFS: --writable /etc (risky: /etc is a system folder: the host runs programs and reads configuration from it)
agentbox:   registry.npmjs.org:443 (no allow rule matches): --allow registry.npmjs.org (safe: registry.npmjs.org is a package registry or the agent's own service)
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	b.Reset()
	clean := &Summary{W: &b, Plan: p}
	clean.Emit(event.Event{Kind: event.RunEnd})
	if b.Len() != 0 {
		t.Errorf("a run without refusals printed %q", b.String())
	}
}

// A change the advice calls safe is shown safe only when the registry of
// what host programs run or obey agrees: a refusal the box made up in a
// cache that holds a repository deep inside (which names alone cannot
// tell) is shown risky, with the registry's reason; one tmux obeys is
// risky by its name already; a cache the registry finds nothing in stays
// safe.
func TestSummaryRecheck(t *testing.T) {
	p := bwrapPlan(t)
	j := New(p, nil)
	var b bytes.Buffer
	var asked []string
	registry := func(dir string) (bool, string) {
		asked = append(asked, dir)
		if dir == "/home/u/.cache/tool" {
			return true, "~/.cache/tool holds ~/.cache/tool/repo/.git, which a host program runs or obeys (git .git)"
		}
		return false, ""
	}
	s := &Summary{W: &b, Plan: p, Judge: j, HostRun: registry}
	for _, a := range []fslog.Attempt{at(fslog.Write, "/home/u/.tmux.conf", true, false), at(fslog.Create, "/home/u/.cache/tool/x", false, false), at(fslog.Create, "/home/u/.npm/x", false, false)} {
		if e, ok := j.Judge(a); ok {
			s.Emit(e)
		}
	}
	s.Emit(event.Event{Kind: event.RunEnd})
	want := `agentbox: the box was refused 3 filesystem operations (agentbox log --denials lists each); what would allow them:
agentbox:   write ~/.tmux.conf, EROFS: --writable ~/.tmux.conf (risky: ~/.tmux.conf: tmux runs it (run-shell))
agentbox:   create ~/.cache/tool/x, EROFS: --writable ~/.cache/tool (risky: ~/.cache/tool holds ~/.cache/tool/repo/.git, which a host program runs or obeys (git .git))
agentbox:   create ~/.npm/x, EROFS: --writable ~/.npm (safe: npm's package cache: the box may add to it, and the tool uses what it finds there outside the box too)
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	f := Recheck(p, Fix{Key: "filesystem.writable", Value: "~/.cache/tool", Why: "the folder ~/.cache/tool in your home folder"}, registry)
	if !f.Risky || !strings.Contains(f.Why, "git .git") {
		t.Errorf("Recheck(~/.cache/tool) = %+v", f)
	}
	if f := Recheck(p, Fix{Key: "network.allow", Value: "x"}, registry); f.Risky {
		t.Errorf("Recheck of a network change: %+v", f)
	}
}

// The risk judgement reads the one registry of what host programs run:
// what a run keeps safe is never proposed as safe to make writable.
func TestHostExecutedRegistry(t *testing.T) {
	pl := &plan.Plan{Identity: plan.Identity{Home: "/home/u"}}
	for p, want := range map[string]bool{
		"/home/u/.nvm":                     true,
		"/home/u/.oh-my-zsh/custom":        true,
		"/home/u/.config/starship.toml":    true,
		"/var/spool/cron/crontabs":         true,
		"/home/u/proj/.envrc":              true,
		"/home/u/proj/lefthook-local.toml": true,
		"/home/u/proj/.cargo":              true,
		"/home/u/proj/sub/.yarnrc.yml":     true,
		"/home/u/.npm":                     false,
		"/home/u/.config/new":              false,
		"/home/u/proj/src":                 false,
	} {
		if got, why := HostExecuted(pl, p); got != want {
			t.Errorf("HostExecuted(%s) = %v (%s), want %v", p, got, why, want)
		}
	}
}

// A refusal no added entry allows, but taking an entry out would, does not
// say "no policy change allows it" and then name the change that does.
func TestFixWordsAgree(t *testing.T) {
	for _, f := range []Fix{
		{Risky: true, Why: "kept read-only by filesystem.read_only[0]; only taking that entry out allows it"},
		{Risky: true, Why: "hidden by filesystem.deny[0]; only taking that entry out shows it, and it may hold secrets"},
	} {
		s := f.String()
		if strings.Contains(s, "no policy change") {
			t.Errorf("%q contradicts itself", s)
		}
		if !strings.HasPrefix(s, "nothing a policy adds allows it (risky): ") {
			t.Errorf("%q", s)
		}
	}
}
