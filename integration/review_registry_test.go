//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The tests in this file attack what the registry keeps of the programs a
// project's hooks run.

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
