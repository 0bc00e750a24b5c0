package hostexec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// nodeGuards are the guards under proj/node_modules, relative, as
// tr.guards shows them without their rules.
func nodeGuards(tr *tree, r Result) []string {
	var out []string
	for _, g := range tr.guards(r) {
		if i := strings.Index(g, " ("); i >= 0 {
			g = g[:i]
		}
		if strings.Contains(g, "proj/node_modules") {
			out = append(out, g)
		}
	}
	return out
}

func TestResolveNodeProgram(t *testing.T) {
	hook := `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"npx prettier --check ."}]}]}}`
	tests := []struct {
		name  string
		setup func(tr *tree)
		max   int
		want  []string
	}{{
		// npm's hoisted layout: the program's package, what it depends
		// on wherever require finds it (nested first), transitively; a
		// dependency that is not installed is checked where require
		// would find one.
		name: "npm",
		setup: func(tr *tree) {
			tr.write("proj/node_modules/prettier/package.json", `{"name":"prettier","dependencies":{"a":"1"},"optionalDependencies":{"fsevents":"2"},"peerDependencies":{"b":"1"},"devDependencies":{"dev":"1"}}`)
			tr.write("proj/node_modules/prettier/bin/prettier.cjs", "require('../index.cjs')\n")
			tr.write("proj/node_modules/prettier/index.cjs", "")
			tr.symlink("../prettier/bin/prettier.cjs", "proj/node_modules/.bin/prettier")
			tr.write("proj/node_modules/a/package.json", `{"dependencies":{"c":"1","../../evil":"1"}}`)
			tr.write("proj/node_modules/a/node_modules/c/package.json", `{"dependencies":{"b":"1"}}`)
			tr.write("proj/node_modules/b/package.json", `{}`)
			tr.write("proj/node_modules/dev/package.json", `{}`)
			tr.write("proj/node_modules/other/package.json", `{}`)
		},
		want: []string{
			"checked missing proj/node_modules/a.js",
			"checked missing proj/node_modules/a.json",
			"checked missing proj/node_modules/a.node",
			"checked missing proj/node_modules/a/node_modules/b",
			"checked missing proj/node_modules/a/node_modules/b.js",
			"checked missing proj/node_modules/a/node_modules/b.json",
			"checked missing proj/node_modules/a/node_modules/b.node",
			"checked missing proj/node_modules/b.js",
			"checked missing proj/node_modules/b.json",
			"checked missing proj/node_modules/b.node",
			"checked missing proj/node_modules/fsevents",
			"checked missing proj/node_modules/fsevents.js",
			"checked missing proj/node_modules/fsevents.json",
			"checked missing proj/node_modules/fsevents.node",
			"restored dir proj/node_modules/a",
			"restored dir proj/node_modules/a/node_modules/c",
			"restored dir proj/node_modules/b",
			"restored dir proj/node_modules/prettier",
			"restored file proj/node_modules/prettier/bin/prettier.cjs",
			"restored symlink proj/node_modules/.bin/prettier",
		},
	}, {
		// pnpm: a shell shim in .bin names the program relative to its
		// folder; packages are symlinks into .pnpm, and require looks
		// from the real folder.
		name: "pnpm",
		setup: func(tr *tree) {
			tr.write("proj/node_modules/.bin/prettier", "#!/bin/sh\nbasedir=$(dirname \"$0\")\nexec node  \"$basedir/../prettier/bin/prettier.cjs\" \"$@\"\n")
			tr.write("proj/node_modules/.pnpm/prettier@3.0.0/node_modules/prettier/package.json", `{"dependencies":{"@scope/a":"1"}}`)
			tr.write("proj/node_modules/.pnpm/prettier@3.0.0/node_modules/prettier/bin/prettier.cjs", "")
			tr.symlink(".pnpm/prettier@3.0.0/node_modules/prettier", "proj/node_modules/prettier")
			tr.write("proj/node_modules/.pnpm/@scope+a@1.0.0/node_modules/@scope/a/package.json", `{}`)
			tr.symlink("../../../@scope+a@1.0.0/node_modules/@scope/a", "proj/node_modules/.pnpm/prettier@3.0.0/node_modules/@scope/a")
		},
		want: []string{
			"checked missing proj/node_modules/.pnpm/prettier@3.0.0/node_modules/@scope/a.js",
			"checked missing proj/node_modules/.pnpm/prettier@3.0.0/node_modules/@scope/a.json",
			"checked missing proj/node_modules/.pnpm/prettier@3.0.0/node_modules/@scope/a.node",
			"restored dir proj/node_modules/.pnpm/@scope+a@1.0.0/node_modules/@scope/a",
			"restored dir proj/node_modules/.pnpm/prettier@3.0.0/node_modules/prettier",
			"restored file proj/node_modules/.bin/prettier",
			"restored symlink proj/node_modules/.pnpm/prettier@3.0.0/node_modules/@scope/a",
		},
	}, {
		// A file require finds before a package folder of its name is
		// kept, and the folder is not followed.
		name: "file-first",
		setup: func(tr *tree) {
			tr.write("proj/node_modules/prettier/package.json", `{"dependencies":{"a":"1"}}`)
			tr.write("proj/node_modules/prettier/bin/prettier.cjs", "")
			tr.symlink("../prettier/bin/prettier.cjs", "proj/node_modules/.bin/prettier")
			tr.write("proj/node_modules/a.json", `{}`)
			tr.write("proj/node_modules/a.js", ``)
			tr.write("proj/node_modules/a/package.json", `{"dependencies":{"b":"1"}}`)
		},
		want: []string{
			"restored dir proj/node_modules/prettier",
			"restored file proj/node_modules/a.js",
			"restored file proj/node_modules/prettier/bin/prettier.cjs",
			"restored symlink proj/node_modules/.bin/prettier",
		},
	}, {
		// More packages than the bound: the whole node_modules folder.
		name: "bound",
		setup: func(tr *tree) {
			tr.write("proj/node_modules/prettier/package.json", `{"dependencies":{"a":"1"}}`)
			tr.write("proj/node_modules/prettier/bin/prettier.cjs", "")
			tr.symlink("../prettier/bin/prettier.cjs", "proj/node_modules/.bin/prettier")
			tr.write("proj/node_modules/a/package.json", `{"dependencies":{"b":"1"}}`)
			tr.write("proj/node_modules/b/package.json", `{}`)
		},
		max: 2,
		want: []string{
			"checked missing proj/node_modules/a.js",
			"checked missing proj/node_modules/a.json",
			"checked missing proj/node_modules/a.node",
			"checked missing proj/node_modules/b.js",
			"checked missing proj/node_modules/b.json",
			"checked missing proj/node_modules/b.node",
			"restored dir proj/node_modules",
			"restored dir proj/node_modules/a",
			"restored dir proj/node_modules/b",
			"restored dir proj/node_modules/prettier",
			"restored file proj/node_modules/prettier/bin/prettier.cjs",
			"restored symlink proj/node_modules/.bin/prettier",
		},
	}, {
		// A package.json it cannot read: the whole node_modules folder.
		name: "unreadable",
		setup: func(tr *tree) {
			tr.write("proj/node_modules/prettier/package.json", `{"dependencies":["a"]}`)
			tr.write("proj/node_modules/prettier/bin/prettier.cjs", "")
			tr.symlink("../prettier/bin/prettier.cjs", "proj/node_modules/.bin/prettier")
		},
		want: []string{
			"restored dir proj/node_modules",
			"restored dir proj/node_modules/prettier",
			"restored file proj/node_modules/prettier/bin/prettier.cjs",
			"restored symlink proj/node_modules/.bin/prettier",
		},
	}, {
		// A program whose file is the project's own (a workspace
		// package linked into node_modules): the file is kept, the
		// project's folder is not.
		name: "workspace",
		setup: func(tr *tree) {
			tr.write("proj/packages/prettier/package.json", `{"dependencies":{"a":"1"}}`)
			tr.write("proj/packages/prettier/cli.js", "")
			tr.symlink("../packages/prettier", "proj/node_modules/prettier")
			tr.symlink("../prettier/cli.js", "proj/node_modules/.bin/prettier")
		},
		want: []string{
			"restored symlink proj/node_modules/.bin/prettier",
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.max > 0 {
				old := maxNodePackages
				maxNodePackages = tc.max
				t.Cleanup(func() { maxNodePackages = old })
			}
			tr := newTree(t)
			tr.write("proj/.claude/settings.json", hook)
			tc.setup(tr)
			r, err := Resolve(tr.input("proj"))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, nodeGuards(tr, r)); diff != "" {
				t.Errorf("guards (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPackageRoot(t *testing.T) {
	for f, want := range map[string]string{
		"/p/node_modules/prettier/bin/prettier.cjs":                            "/p/node_modules/prettier",
		"/p/node_modules/@scope/tool/dist/cli.js":                              "/p/node_modules/@scope/tool",
		"/p/node_modules/a/node_modules/b/index.js":                            "/p/node_modules/a/node_modules/b",
		"/p/node_modules/.pnpm/x@1/node_modules/x/bin/x.js":                    "/p/node_modules/.pnpm/x@1/node_modules/x",
		"/p/node_modules/.bin/x":                                               "",
		"/p/node_modules/x":                                                    "",
		"/p/packages/x/cli.js":                                                 "",
		"/p/node_modules/@scope/x":                                             "",
		"/p/node_modules/x/dist/esm/node_modules_shim/../package.json/../a.js": "/p/node_modules/x",
	} {
		if got := packageRoot(f); got != want {
			t.Errorf("packageRoot(%q) = %q, want %q", f, got, want)
		}
	}
}

func TestPackageDeps(t *testing.T) {
	tests := []struct {
		json string
		want []string
		ok   bool
	}{
		{`{}`, nil, true},
		{`{"dependencies":{"b":"1","a":"1"},"optionalDependencies":{"a":"2","c":"1"},"peerDependencies":{"@s/d":"1"}}`, []string{"@s/d", "a", "b", "c"}, true},
		{`{"devDependencies":{"x":"1"},"bundleDependencies":["y"]}`, nil, true},
		{`{"dependencies":null}`, nil, true},
		{`{"dependencies":{"..":"1","../x":"1","/abs":"1","@s":"1","a/b":"1","@s/x/y":"1","ok":"1"}}`, []string{"ok"}, true},
		{`{"dependencies":["a"]}`, nil, false},
		{`not json`, nil, false},
	}
	for _, tc := range tests {
		got, ok := PackageDeps([]byte(tc.json))
		if diff := cmp.Diff(tc.want, got); diff != "" || ok != tc.ok {
			t.Errorf("PackageDeps(%s) = %v, %v; want %v (-want +got):\n%s", tc.json, got, ok, tc.ok, diff)
		}
	}
}
