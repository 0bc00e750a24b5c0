package provider

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDetect(t *testing.T) {
	r := NewRegistry()
	r.Declare(Provider{Name: "mytool", Commands: []string{"mytool"}, Supported: true})
	tests := []struct {
		name string
		argv []string
		want Detection
	}{
		{"base name", []string{"claude", "-p", "hi"}, Detection{Name: "claude", Reason: "command claude", Index: 0}},
		{"absolute path", []string{"/opt/bin/codex", "exec"}, Detection{Name: "codex", Reason: "command /opt/bin/codex", Index: 0}},
		{"env with variables", []string{"env", "FOO=1", "-u", "BAR", "codex"}, Detection{Name: "codex", Reason: "env command codex", Index: 4}},
		{"npx package", []string{"npx", "-y", "@anthropic-ai/claude-code@latest", "-p", "x"}, Detection{Name: "claude", Reason: "npx package @anthropic-ai/claude-code", Index: 2}},
		{"node cli.js", []string{"node", "--no-warnings", "/usr/lib/node_modules/@openai/codex/bin/codex.js"}, Detection{Name: "codex", Reason: "node script in package @openai/codex", Index: 2}},
		{"declared provider", []string{"mytool"}, Detection{Name: "mytool", Reason: "command mytool", Index: 0}},
		{"unknown", []string{"make", "test"}, Detection{Reason: "no known agent CLI in make"}},
		{"npx unknown", []string{"npx", "cowsay"}, Detection{Reason: "no known agent CLI in npx cowsay"}},
		{"empty", nil, Detection{Reason: "empty command"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, r.Detect(tc.argv)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestCodexSandboxOff(t *testing.T) {
	off := []string{"--sandbox", "danger-full-access"}
	tests := []struct {
		name    string
		argv    []string
		index   int
		configs []string
		want    []string
		changed bool
	}{
		{"interactive", []string{"codex"}, 0, nil, append([]string{"codex"}, off...), true},
		{"exec", []string{"codex", "exec", "hi"}, 0, nil, []string{"codex", "--sandbox", "danger-full-access", "exec", "hi"}, true},
		{"after env", []string{"env", "A=1", "codex", "exec"}, 2, nil, []string{"env", "A=1", "codex", "--sandbox", "danger-full-access", "exec"}, true},
		{"-s chosen", []string{"codex", "-s", "read-only", "exec"}, 0, nil, nil, false},
		{"--sandbox= chosen", []string{"codex", "exec", "--sandbox=workspace-write"}, 0, nil, nil, false},
		{"-sX chosen", []string{"codex", "-sread-only"}, 0, nil, nil, false},
		{"bypass", []string{"codex", "--dangerously-bypass-approvals-and-sandbox"}, 0, nil, nil, false},
		{"yolo", []string{"codex", "--yolo"}, 0, nil, nil, false},
		{"-c sandbox_mode", []string{"codex", "-c", "sandbox_mode=read-only"}, 0, nil, nil, false},
		{"profile", []string{"codex", "-p", "work"}, 0, nil, nil, false},
		{"codex sandbox", []string{"codex", "sandbox", "linux", "ls"}, 0, nil, nil, false},
		{"config sets it", []string{"codex"}, 0, []string{"model = \"x\"\nsandbox_mode = \"read-only\"\n"}, nil, false},
		{"config in a table only", []string{"codex"}, 0, []string{"[profiles.x]\nsandbox_mode = \"read-only\"\n"}, append([]string{"codex"}, off...), true},
		{"after --", []string{"codex", "exec", "--", "-s"}, 0, nil, []string{"codex", "--sandbox", "danger-full-access", "exec", "--", "-s"}, true},
		{"--config=", []string{"codex", "--config=sandbox_mode=x"}, 0, nil, nil, false},
		{"--profile=", []string{"codex", "--profile=work"}, 0, nil, nil, false},
		{"npm script", []string{"node", "/usr/lib/node_modules/@openai/codex/bin/codex.js"}, 1, nil, []string{"node", "/usr/lib/node_modules/@openai/codex/bin/codex.js", "--sandbox", "danger-full-access"}, true},
		{"wrapper script", []string{"my-codex-wrapper"}, 0, nil, nil, false},
		{"other npm script", []string{"node", "/usr/lib/node_modules/other/cli.js"}, 1, nil, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var configs [][]byte
			for _, c := range tc.configs {
				configs = append(configs, []byte(c))
			}
			codex, _ := NewRegistry().Lookup("codex")
			got, why := codex.InnerSandbox.Adjust(tc.argv, tc.index, codex.Packages, configs)
			want := tc.want
			if !tc.changed {
				want = tc.argv
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("argv (-want +got):\n%s", diff)
			}
			if why == "" {
				t.Error("no reason given")
			}
		})
	}
}
