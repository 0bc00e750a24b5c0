//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The tests in this file attack what the registry keeps of the programs a
// project's hooks run: the package a node program loads, and the module
// pre-commit's hook imports from the top of the work tree.

// pre-commit's installed hook runs "$INSTALL_PYTHON -mpre_commit" in the
// top of the work tree, and python -m puts the current folder first on
// its module path: a pre_commit.py (or pre_commit/ package) the box makes
// there is what the host's next commit runs, whatever interpreter the
// hook names.
func TestReviewPreCommitModuleInWorkTree(t *testing.T) {
	needTool(t, "pre-commit", "apt-get install pre-commit")
	for _, kind := range []string{"module", "package"} {
		t.Run(kind, func(t *testing.T) {
			backends(t, func(t *testing.T, be string) {
				w := newWorld(t)
				w.repo(w.project)
				write(t, filepath.Join(w.project, ".pre-commit-config.yaml"), "repos: []\n")
				w.mustGit(w.project, "add", "-A")
				w.mustGit(w.project, "commit", "-q", "-m", "setup")
				env := []string{"PRE_COMMIT_HOME=" + filepath.Join(w.home, ".cache", "pre-commit")}
				out := w.hostRun(w.project, env, "pre-commit", "install")
				hook, _ := os.ReadFile(filepath.Join(w.project, ".git", "hooks", "pre-commit"))
				if !strings.Contains(string(hook), "-mpre_commit") {
					t.Fatalf("pre-commit install: %s\n%s", out, hook)
				}
				code := `import os; os.system("` + w.payload("module") + `")`
				plant := `echo '` + code + `' > pre_commit.py`
				if kind == "package" {
					plant = `mkdir -p pre_commit && echo '` + code + `' > pre_commit/__main__.py && touch pre_commit/__init__.py`
				}
				r := w.boxed(be, nil, plant+` && echo done`)
				expectCode(t, r, 0)
				expectContains(t, "stdout", r.stdout, "done")
				w.env = append(w.env, env...)
				out, _ = w.hostGit(w.project, "commit", "-q", "--allow-empty", "-m", "host")
				w.expectNoMark("module", "host git commit through pre-commit after the box made a pre_commit module in the work tree ("+out+")")
			})
		})
	}
}

// npx prettier runs node_modules/.bin/prettier, which the search keeps
// with the file it links to; that file loads the rest of its package,
// which stays writable.
func TestReviewNpxPackageModule(t *testing.T) {
	needTool(t, "npx", "apt-get install npm")
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		pkg := filepath.Join(w.project, "node_modules", "prettier")
		write(t, filepath.Join(pkg, "package.json"), `{"name":"prettier","version":"3.0.0","bin":{"prettier":"bin/prettier.cjs"}}`+"\n")
		write(t, filepath.Join(pkg, "bin", "prettier.cjs"), "#!/usr/bin/env node\nrequire(\"../index.cjs\");\n")
		os.Chmod(filepath.Join(pkg, "bin", "prettier.cjs"), 0o755)
		write(t, filepath.Join(pkg, "index.cjs"), "console.log(\"3.0.0\");\n")
		mkdir(t, filepath.Join(w.project, "node_modules", ".bin"))
		if err := os.Symlink("../prettier/bin/prettier.cjs", filepath.Join(w.project, "node_modules", ".bin", "prettier")); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(w.project, ".claude", "settings.json"), sessionStart("npx prettier --version"))
		if out := w.hostRun(w.project, nil, "npx", "--no-install", "prettier", "--version"); !strings.Contains(out, "3.0.0") {
			t.Fatalf("npx prettier before the run: %s", out)
		}
		r := w.boxed(be, nil, `echo 'require("child_process").execSync("`+w.payload("npx-module")+`")' > node_modules/prettier/index.cjs && echo done`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "done")
		w.hostRun(w.project, nil, "npx", "--no-install", "prettier", "--version")
		w.expectNoMark("npx-module", "npx prettier (what the project's Claude Code hook runs) after the box rewrote a module of its package")
	})
}

// In a repository whose hook runs python -m pre_commit, the box's own
// modules at the top of the work tree stay; one under the name of a
// standard library module (which the hook would import from there) is
// moved away, and the host's commit runs pre-commit as before.
func TestPreCommitOrdinaryModulesStay(t *testing.T) {
	needTool(t, "pre-commit", "apt-get install pre-commit")
	backends(t, func(t *testing.T, be string) {
		w := newWorld(t)
		w.repo(w.project)
		write(t, filepath.Join(w.project, ".pre-commit-config.yaml"), "repos: []\n")
		w.mustGit(w.project, "add", "-A")
		w.mustGit(w.project, "commit", "-q", "-m", "setup")
		env := []string{"PRE_COMMIT_HOME=" + filepath.Join(w.home, ".cache", "pre-commit")}
		w.hostRun(w.project, env, "pre-commit", "install")
		code := `import os; os.system("` + w.payload("stdlib") + `")`
		r := w.boxed(be, nil, `echo 'print(1)' > main.py && mkdir -p app && touch app/__init__.py && echo '`+code+`' > shlex.py && echo done`)
		expectCode(t, r, 0)
		expectContains(t, "stdout", r.stdout, "done")
		for _, p := range []string{"main.py", "app/__init__.py"} {
			if !exists(filepath.Join(w.project, p)) {
				t.Errorf("%s the box made was moved away:\n%s", p, r.stderr)
			}
		}
		if exists(filepath.Join(w.project, "shlex.py")) {
			t.Errorf("shlex.py the box made at the top of the work tree is still there:\n%s", r.stderr)
		}
		w.env = append(w.env, env...)
		out, err := w.hostGit(w.project, "commit", "-q", "--allow-empty", "-m", "host")
		if err != nil {
			t.Errorf("host git commit through pre-commit: %v\n%s", err, out)
		}
		w.expectNoMark("stdlib", "host git commit through pre-commit after the box made a standard library module in the work tree ("+out+")")
	})
}

// The packages a program npx runs depends on are kept like its own: the
// box rewriting a module of one, or making NAME.js beside it (which
// require finds before the folder), is undone before the host runs it.
func TestNpxDependencyKept(t *testing.T) {
	needTool(t, "npx", "apt-get install npm")
	for _, kind := range []string{"rewrite", "file-first"} {
		t.Run(kind, func(t *testing.T) {
			backends(t, func(t *testing.T, be string) {
				w := newWorld(t)
				w.repo(w.project)
				nm := filepath.Join(w.project, "node_modules")
				write(t, filepath.Join(nm, "tool", "package.json"), `{"name":"tool","version":"1.0.0","bin":{"tool":"cli.js"},"dependencies":{"dep":"1.0.0"}}`+"\n")
				write(t, filepath.Join(nm, "tool", "cli.js"), "#!/usr/bin/env node\nrequire(\"dep\");\nconsole.log(\"tool 1.0.0\");\n")
				os.Chmod(filepath.Join(nm, "tool", "cli.js"), 0o755)
				write(t, filepath.Join(nm, "dep", "package.json"), `{"name":"dep","version":"1.0.0"}`+"\n")
				write(t, filepath.Join(nm, "dep", "index.js"), "module.exports = 1;\n")
				mkdir(t, filepath.Join(nm, ".bin"))
				if err := os.Symlink("../tool/cli.js", filepath.Join(nm, ".bin", "tool")); err != nil {
					t.Fatal(err)
				}
				write(t, filepath.Join(w.project, ".claude", "settings.json"), sessionStart("npx tool"))
				if out := w.hostRun(w.project, nil, "npx", "--no-install", "tool"); !strings.Contains(out, "tool 1.0.0") {
					t.Fatalf("npx tool before the run: %s", out)
				}
				file := "node_modules/dep/index.js"
				if kind == "file-first" {
					file = "node_modules/dep.js"
				}
				r := w.boxed(be, nil, `echo 'require("child_process").execSync("`+w.payload("npx-dep")+`")' > `+file+` && echo done`)
				expectCode(t, r, 0)
				expectContains(t, "stdout", r.stdout, "done")
				w.hostRun(w.project, nil, "npx", "--no-install", "tool")
				w.expectNoMark("npx-dep", "npx tool after the box wrote "+file+", which the tool loads through its dependency")
			})
		})
	}
}
