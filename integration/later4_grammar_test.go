//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A new .yarnrc.yml is judged with YAML, not by lines: each form below is
// valid YAML naming the box's yarnPath, and the host's next yarn --version
// must not run it. A harmless one (no program) stays.
func TestLater4YarnrcForms(t *testing.T) {
	needTool(t, "yarn", "npm install -g yarn")
	node := needTool(t, "node", "apt-get install nodejs")
	forms := map[string]string{
		"continuation":  "nodeLinker: node-modules\nyarnPath:\n  ./evil.cjs\n",
		"flow-mapping":  "{nodeLinker: node-modules, yarnPath: ./evil.cjs}\n",
		"quoted-key":    "\"yarnPath\": ./evil.cjs\n",
		"escaped-key":   "\"\\x79arnPath\": ./evil.cjs\n",
		"explicit-key":  "? yarnPath\n: ./evil.cjs\n",
		"block-scalar":  "yarnPath: >-\n  ./evil.cjs\n",
		"single-quoted": "'yarnPath': ./evil.cjs\n",
	}
	for name, content := range forms {
		t.Run(name, func(t *testing.T) {
			backends(t, func(t *testing.T, be string) {
				w := newWorld(t)
				w.repo(w.project)
				evil := `require("fs").writeFileSync("` + filepath.Join(w.marks(), "yarn") + `", "")`
				r := w.boxed(be, nil, `echo '`+evil+`' > evil.cjs && printf '%s' `+shq(content)+` > .yarnrc.yml; echo done`)
				expectCode(t, r, 0)
				w.env = append(w.env, "PATH="+filepath.Dir(node)+":"+os.Getenv("PATH"))
				w.hostRun(w.project, nil, "yarn", "--version")
				w.expectNoMarks("host yarn --version with a "+name+" .yarnrc.yml", "yarn")
			})
		})
	}
	t.Run("harmless-stays", func(t *testing.T) {
		backends(t, func(t *testing.T, be string) {
			w := newWorld(t)
			w.repo(w.project)
			r := w.boxed(be, nil, `printf 'nodeLinker: node-modules\nenableTelemetry: false\n' > .yarnrc.yml; echo done`)
			expectCode(t, r, 0)
			if b, err := os.ReadFile(filepath.Join(w.project, ".yarnrc.yml")); err != nil || !strings.Contains(string(b), "nodeLinker") {
				t.Errorf("a harmless .yarnrc.yml was moved away: %q %v", b, err)
			}
		})
	})
}

// A legacy rust-toolchain file is read the way rustup reads it: TOML with
// a toolchain path runs that folder's cargo on the host's next cargo
// --version. The path is written with TOML's escapes (\u002F for "/"), so
// no slash shows in the file's bytes.
func TestLater4RustToolchainLegacyTOML(t *testing.T) {
	if _, err := exec.LookPath("rustup"); err != nil && !isRoot() {
		rootOnly(t, "cargo through rustup is installed for root only here")
	}
	cargo := needTool(t, "cargo", "rustup (https://rustup.rs)")
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		w.env = append(w.env, "PATH="+filepath.Dir(cargo)+":"+os.Getenv("PATH"))
		for _, k := range []string{"RUSTUP_HOME", "CARGO_HOME"} {
			if v := os.Getenv(k); v != "" {
				w.env = append(w.env, k+"="+v)
			}
		}
		if os.Getenv("RUSTUP_HOME") == "" && isRoot() {
			w.env = append(w.env, "RUSTUP_HOME=/root/.rustup", "CARGO_HOME=/root/.cargo")
		}
		r := w.boxed(be, nil, `mkdir -p tc/bin && `+w.script("tc/bin/cargo", "toolchain")+` && cp tc/bin/cargo tc/bin/rustc
printf '[toolchain]\npath = "%s"\n' "$(echo "$PWD/tc" | sed 's|/|\\u002F|g')" > rust-toolchain
echo done`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "done")
		w.hostRun(w.project, nil, "cargo", "--version")
		w.expectNoMarks("host cargo --version with a legacy rust-toolchain", "toolchain")
	})
}

// A control file agentbox cannot read through (valid TOML with more dotted
// keys than it parses, a file over 1 MiB) stops the run naming it, before
// the box can write what the file names. Before, it was taken for a file
// naming nothing: the script .mise.toml sources on cd stayed writable.
func TestLater4ControlTooComplex(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		write(t, filepath.Join(w.project, "env.sh"), "export A=1\n")
		write(t, filepath.Join(w.project, ".mise.toml"), "[env]\n_.source = \"./env.sh\"\n"+strings.Repeat("a.", 3000)+"a = 1\n")
		r := w.boxed(be, nil, `echo 'touch /tmp/evil' >> env.sh; echo done`)
		expectCode(t, r, 125)
		expectContains(t, "stderr", r.stderr, filepath.Join(w.project, ".mise.toml"))
		if data, _ := os.ReadFile(filepath.Join(w.project, "env.sh")); string(data) != "export A=1\n" {
			t.Errorf("env.sh, which .mise.toml sources, was changed: %q", data)
		}
	})
}
