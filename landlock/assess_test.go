package landlock

import (
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agentbox/agentbox/plan"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// goldenPlans are hand-built plans around the typical fixture.
func goldenPlans() map[string]struct {
	p    *plan.Plan
	abi  int
	opts Options
} {
	f := newFixture("/srv")
	type c = struct {
		p    *plan.Plan
		abi  int
		opts Options
	}
	edit := func(p *plan.Plan, fn func(*plan.Plan)) *plan.Plan { fn(p); return p }
	return map[string]c{
		"keep-roots-writable": {f.plan(plan.NetOpen), 7, Options{KeepRootsWritable: true}},
		"typical":             {f.plan(plan.NetOpen), 7, Options{}},
		"network-none":        {f.plan(plan.NetNone), 7, Options{}},
		"network-none-abi4":   {f.plan(plan.NetNone), 4, Options{}},
		"network-none-abi3":   {f.plan(plan.NetNone), 3, Options{}},
		"network-none-abi10":  {f.plan(plan.NetNone), 10, Options{}},
		"allowlist":           {f.plan(plan.NetAllowlist), 7, Options{}},
		"allowlist-abi3":      {f.plan(plan.NetAllowlist), 3, Options{}},
		"abi1":                {f.plan(plan.NetOpen), 1, Options{}},
		"abi0":                {f.plan(plan.NetOpen), 0, Options{}},
		"root": {edit(f.plan(plan.NetOpen), func(p *plan.Plan) {
			p.Identity = plan.Identity{UID: 0, GID: 0, Home: "/root"}
		}), 7, Options{}},
		"tmp-host": {edit(f.plan(plan.NetOpen), func(p *plan.Plan) {
			p.Tmp = plan.Tmp{Mode: plan.TmpHost}
			p.Mounts[3] = plan.Mount{Stage: plan.StageTmp, Op: plan.Bind, Path: "/tmp", Access: plan.ReadWrite, Origin: plan.Origin{Key: "tmp.mode"}}
		}), 7, Options{}},
		"tmp-private": {edit(f.plan(plan.NetOpen), func(p *plan.Plan) {
			p.Tmp = plan.Tmp{Mode: plan.TmpPrivate}
			p.Mounts[3] = plan.Mount{Stage: plan.StageTmp, Op: plan.Tmpfs, Path: "/tmp", Access: plan.ReadWrite, Origin: plan.Origin{Key: "tmp.mode"}}
		}), 7, Options{}},
		"tmp-private-hostdir": {edit(f.plan(plan.NetOpen), func(p *plan.Plan) {
			p.Tmp = plan.Tmp{Mode: plan.TmpPrivate, HostDir: "/tmp/agentbox-1000/run-1"}
			p.Mounts[3] = plan.Mount{Stage: plan.StageTmp, Op: plan.Tmpfs, Path: "/tmp", Access: plan.ReadWrite, Origin: plan.Origin{Key: "tmp.mode"}}
		}), 7, Options{}},
		"bind-elsewhere": {edit(f.plan(plan.NetOpen), func(p *plan.Plan) {
			p.Mounts = append(p.Mounts, plan.Mount{Stage: plan.StageWritable, Op: plan.Bind, Source: "/srv/cache", Path: "/cache", Access: plan.ReadWrite, Origin: plan.Origin{Key: "flag --writable"}})
		}), 7, Options{}},
	}
}

// TestAssessGolden renders the assessment of each plan as JSON and compares
// it with testdata/<case>.golden; -update rewrites them.
func TestAssessGolden(t *testing.T) {
	for name, tc := range goldenPlans() {
		t.Run(name, func(t *testing.T) {
			b, err := json.MarshalIndent(AssessWith(tc.p, tc.abi, tc.opts), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got := string(b) + "\n"
			file := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("Assess mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAssessLevels checks the verdicts a caller acts on, independent of the
// wording in the golden files.
func TestAssessLevels(t *testing.T) {
	plans := goldenPlans()
	tests := []struct {
		name        string
		notEnforced []string // rules, in order
	}{
		{"typical", nil},
		{"keep-roots-writable", []string{"read-only", "read-only"}},
		{"network-none", nil},
		{"network-none-abi3", []string{"network"}},
		{"allowlist", nil}, // enforced weaker: through the proxy's port
		{"allowlist-abi3", []string{"network"}},
		{"tmp-private", []string{"tmp"}},
		{"tmp-private-hostdir", nil},
		{"bind-elsewhere", []string{"writable"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pc := plans[tc.name]
			var got []string
			for _, r := range AssessWith(pc.p, pc.abi, pc.opts).NotEnforced() {
				got = append(got, r.Rule)
			}
			if diff := cmp.Diff(tc.notEnforced, got); diff != "" {
				t.Errorf("NotEnforced (-want +got):\n%s", diff)
			}
		})
	}
	if n := len(Assess(plans["abi0"].p, 0).NotEnforced()); n != len(plans["abi0"].p.Mounts)+1 {
		t.Errorf("ABI 0: %d rules not enforced, want every mount and the network", n)
	}
}

// tree is the typical fixture under /srv as an in-memory file system, with a
// few host folders and a symlink in the home folder that points at a deny
// path.
func tree() fstest.MapFS {
	fsys := fstest.MapFS{}
	for _, name := range []string{
		"usr/bin/sh", "etc/passwd", "dev/null", "dev/zero", "dev/full", "dev/random", "dev/urandom",
		"dev/tty", "dev/ptmx", "dev/sda", "dev/pts/0", "proc/1/status", "tmp/other/x",
		"srv/home/.aws/credentials", "srv/home/.netrc", "srv/home/notes.txt",
		"srv/proj/README", "srv/proj/src/a.txt", "srv/proj/.git/config", "srv/proj/.git/HEAD",
		"srv/proj/.git/hooks/.keep", "srv/proj/secrets/key",
		"srv/work/a/.keep", "srv/work/.repos/a/.keep", "srv/work/b/secret.txt",
		"srv/tmpws/.keep", "srv/outside/x",
	} {
		fsys[name] = &fstest.MapFile{Data: []byte("x")}
	}
	fsys["srv/home/aws-link"] = &fstest.MapFile{Data: []byte("/srv/home/.aws"), Mode: os.ModeSymlink}
	fsys["bin"] = &fstest.MapFile{Data: []byte("usr/bin"), Mode: os.ModeSymlink}
	return fsys
}

// effective is what Landlock computes for path: the union of the rules on it
// and on the folders above it; only file rights count on a file (a path
// that does not exist is taken as a new file).
func effective(fsys fs.FS, rules []PathRule, p string) Rights {
	var r Rights
	for _, rule := range rules {
		if plan.Within(p, rule.Path) {
			r |= rule.Rights
		}
	}
	if info, err := fs.Stat(fsys, rel(p)); err != nil || !info.IsDir() {
		r &= fileRights
	}
	return r
}

// TestExpandEffective applies the carving to the in-memory tree and checks
// the rights every interesting path ends up with: the union over rules must
// give each path exactly what the last mount covering it says.
func TestExpandEffective(t *testing.T) {
	a := Assess(newFixture("/srv").plan(plan.NetOpen), 7)
	fsys := tree()
	rules, err := Expand(a.Grants, fsys)
	if err != nil {
		t.Fatal(err)
	}
	rw := (readRights | writeRights) & a.HandledFS
	dev := devRights & fileRights
	want := map[string]Rights{
		"/usr/bin":                   readRights,
		"/usr/bin/sh":                readRights & fileRights,
		"/etc/passwd":                readRights & fileRights,
		"/srv/home/notes.txt":        readRights & fileRights,
		"/srv/outside/x":             readRights & fileRights,
		"/srv/home/.aws":             0,
		"/srv/home/.aws/credentials": 0,
		"/srv/home/.netrc":           0,
		"/srv/home":                  0, // a carved folder: cannot be listed
		"/":                          0,
		"/srv/proj/src":              rw,
		"/srv/proj/src/a.txt":        rw & fileRights,
		"/srv/proj/src/new":          rw & fileRights,
		"/srv/proj/README":           rw & fileRights,
		"/srv/proj/new":              0, // nothing can be created at the top of a carved root
		"/srv/proj":                  0, // holds a deny path: cannot even be listed
		"/srv/proj/.git":             readRights,
		"/srv/proj/.git/HEAD":        rw & fileRights,
		"/srv/proj/.git/config":      readRights & fileRights,
		"/srv/proj/.git/hooks":       readRights,
		"/srv/proj/.git/hooks/new":   readRights & fileRights,
		"/srv/proj/secrets":          0,
		"/srv/proj/secrets/key":      0,
		"/srv/work":                  0,
		"/srv/work/b":                0,
		"/srv/work/b/secret.txt":     0,
		"/srv/work/a":                rw,
		"/srv/work/.repos/a":         rw,
		"/srv/tmpws":                 rw,
		"/tmp/other/x":               0,
		"/dev/null":                  dev,
		"/dev/tty":                   dev,
		"/dev/sda":                   0,
		"/dev/pts":                   rightReadDir, // the host's: every terminal of the machine
		"/dev/pts/0":                 0,            // another session's terminal
		"/dev":                       rightReadDir,
		"/proc/1/status":             readRights & fileRights,
	}
	for p, w := range want {
		if got := effective(fsys, rules, p); got != w {
			t.Errorf("%s: rights %s, want %s", p, got, w)
		}
	}
	for _, r := range rules {
		if strings.HasPrefix(r.Path, "/srv/home/aws-link") || r.Path == "/bin" {
			t.Errorf("a symlink got a rule: %+v (its target would get the rights)", r)
		}
		if !r.Dir && r.Rights&^fileRights != 0 {
			t.Errorf("file rule with folder rights: %+v", r)
		}
	}
	paths := make([]string, 0, len(rules))
	for _, r := range rules {
		paths = append(paths, r.Path)
	}
	if slices.Contains(paths, "/dev/shm") {
		t.Errorf("/dev/shm does not exist in the tree but got a rule")
	}
}

// TestExpandMissing: a missing grant root is an error unless it is optional.
func TestExpandMissing(t *testing.T) {
	fsys := fstest.MapFS{"usr/x": {}}
	if _, err := Expand([]Grant{{Path: "/nope", Rights: readRights}}, fsys); err == nil {
		t.Error("missing path: no error")
	}
	rules, err := Expand([]Grant{{Path: "/nope", Rights: readRights, Optional: true}}, fsys)
	if err != nil || len(rules) != 0 {
		t.Errorf("missing optional path: %v, %v", rules, err)
	}
}

func TestRightsString(t *testing.T) {
	for r, want := range map[Rights]string{
		0:                        "none",
		readRights:               "read",
		readRights | writeRights: "read,write,refer,truncate",
		readRights | basicWrite:  "read,write",
		devRights:                "write_file,read_file,read_dir,truncate,ioctl_dev",
		rightReadDir:             "read_dir",
	} {
		if got := r.String(); got != want {
			t.Errorf("%#x: %q, want %q", uint64(r), got, want)
		}
	}
}
