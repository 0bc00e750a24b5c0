package policy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/plan"
)

// world is a small host built in a temporary folder: a home folder with a
// project in it, a host tmp folder and a state folder for the trust store.
// Paths in test tables are written relative to its root and shown with the
// root replaced by $ROOT.
type world struct {
	t    *testing.T
	root string
	env  Env
	// showBlocked makes mounts and prepares show the placeholders of
	// missing control files too.
	showBlocked bool
	// showSockets makes mounts show what keeps the host's unix sockets
	// out (the host's /run is real, so most tables leave it out).
	showSockets bool
}

// newWorld builds the world. The root is the real path of t.TempDir(), so
// resolution (which resolves symlinks) and the tables agree.
func newWorld(t *testing.T) *world {
	t.Helper()
	return newWorldIn(t, t.TempDir())
}

// newWorldOutsideTmp is newWorld in a folder outside the host's /tmp, for
// tests of what a box sees (a box of the default tmp mode sees none of
// the host's /tmp).
func newWorldOutsideTmp(t *testing.T) *world {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "agentbox-policy-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return newWorldIn(t, dir)
}

func newWorldIn(t *testing.T, dir string) *world {
	t.Helper()
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, root: root}
	w.mkdir("home/u/proj")
	w.mkdir("tmp")
	w.mkdir("state")
	w.env = Env{
		GOOS:    "linux",
		UID:     1000,
		GID:     1000,
		Home:    w.path("home/u"),
		Cwd:     w.path("home/u/proj"),
		TempDir: w.path("tmp"),
		Environ: []string{
			"HOME=" + w.path("home/u"),
			"PATH=/usr/bin:/bin",
			"XDG_STATE_HOME=" + w.path("state"),
		},
		FS: OSFS{},
	}
	return w
}

// path returns the absolute path of rel in the world.
func (w *world) path(rel string) string {
	if rel == "" {
		return w.root
	}
	return filepath.Join(w.root, rel)
}

func (w *world) mkdir(rel string) {
	w.t.Helper()
	if err := os.MkdirAll(w.path(rel), 0o755); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) write(rel, content string) {
	w.t.Helper()
	w.mkdir(filepath.Dir(rel))
	if err := os.WriteFile(w.path(rel), []byte(content), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) symlink(target, rel string) {
	w.t.Helper()
	w.mkdir(filepath.Dir(rel))
	if err := os.Symlink(target, w.path(rel)); err != nil {
		w.t.Fatal(err)
	}
}

// gitRepo makes rel look like a repository: .git with hooks and config.
func (w *world) gitRepo(rel string) {
	w.mkdir(filepath.Join(rel, ".git/hooks"))
	w.write(filepath.Join(rel, ".git/config"), "[core]\n")
}

// setenv appends NAME=VALUE to the world's environment.
func (w *world) setenv(kv ...string) {
	w.env.Environ = append(w.env.Environ, kv...)
}

// trust pins the current bytes of the policy file rel in the world's store.
func (w *world) trust(rel string) {
	w.t.Helper()
	data, err := os.ReadFile(w.path(rel))
	if err != nil {
		w.t.Fatal(err)
	}
	if err := (TrustStore{Path: StorePath(w.env)}).Trust(w.path(rel), Hash(data)); err != nil {
		w.t.Fatal(err)
	}
}

// tmpID matches the hash part of a per-workspace tmp id derived from a
// folder ("proj-1a2b3c4d"), which depends on where the world is.
var tmpID = regexp.MustCompile(`\b(agentbox/tmp/[A-Za-z0-9_.-]+|agentbox-\d+/[A-Za-z0-9_.-]+|workspace [A-Za-z0-9_.-]+|caches/[A-Za-z0-9_.-]+)-[0-9a-f]{8}\b`)

// norm replaces the world's root with $ROOT and the hash of a derived tmp
// id with HASH.
func (w *world) norm(s string) string {
	return tmpID.ReplaceAllString(strings.ReplaceAll(s, w.root, "$ROOT"), "$1-HASH")
}

// resolve loads every layer with flags and resolves them for command.
func (w *world) resolve(flags Flags, opts Options, command ...string) (*plan.Plan, error) {
	w.t.Helper()
	layers, err := Load(w.env, flags)
	if err != nil {
		return nil, err
	}
	return Resolve(layers, w.env, command, opts)
}

// mustResolve is resolve that fails the test on error.
func (w *world) mustResolve(flags Flags, opts Options, command ...string) *plan.Plan {
	w.t.Helper()
	p, err := w.resolve(flags, opts, command...)
	if err != nil {
		w.t.Fatalf("resolve: %v", err)
	}
	return p
}

// isCache reports whether a plan entry is there for the caches. Tests of
// other rules leave them out; the cache tests check them.
func isCache(o plan.Origin) bool {
	return strings.HasPrefix(o.Key, "caches") || strings.HasPrefix(o.Key, "default caches")
}

// mounts shows the plan's mounts one line each (but the caches' ones), "stage op path <- source
// (origin) note", with the root replaced by $ROOT.
func (w *world) mounts(p *plan.Plan) []string {
	var out []string
	for _, m := range p.Mounts {
		if isCache(m.Origin) {
			continue // TestResolveCaches* check these
		}
		if m.Sockets && !w.showSockets {
			continue // the host's own /run: TestResolveHostSockets checks these
		}
		if g, ok := p.HostExec.GuardAt(m.Path); ok && g.Keep == plan.KeepBlocked && !w.showBlocked {
			continue // placeholders have their own test (TestResolveHostExecBlocked)
		}
		s := m.Stage.String() + " " + string(m.Op) + " " + m.Path
		if m.Source != "" {
			s += " <- " + m.Source
		}
		s += " (" + m.Origin.String() + ")"
		if m.Note != "" {
			s += " " + m.Note
		}
		out = append(out, w.norm(s))
	}
	return out
}

// snapshot records every path under the world's root with its mode and
// modification time, to show that resolution changed nothing on disk.
func (w *world) snapshot() map[string]string {
	w.t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(w.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		out[w.norm(p)] = fi.Mode().String() + " " + fi.ModTime().Format(time.RFC3339Nano)
		return nil
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return out
}

// mapFS is an in-memory FS of regular files (and the folders they imply),
// for layering tests that need no real disk.
type mapFS map[string]string

type mapInfo struct {
	name string
	dir  bool
	size int
}

func (i mapInfo) Name() string { return filepath.Base(i.name) }
func (i mapInfo) Size() int64  { return int64(i.size) }
func (i mapInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i mapInfo) ModTime() time.Time { return time.Time{} }
func (i mapInfo) IsDir() bool        { return i.dir }
func (i mapInfo) Sys() any           { return nil }

func (m mapFS) Stat(name string) (fs.FileInfo, error) {
	if data, ok := m[name]; ok {
		return mapInfo{name: name, size: len(data)}, nil
	}
	for p := range m {
		if plan.Within(p, name) {
			return mapInfo{name: name, dir: true}, nil
		}
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

func (m mapFS) Lstat(name string) (fs.FileInfo, error) { return m.Stat(name) }

func (m mapFS) EvalSymlinks(name string) (string, error) {
	if _, err := m.Stat(name); err != nil {
		return "", err
	}
	return name, nil
}

func (m mapFS) ReadDir(name string) ([]fs.DirEntry, error) {
	seen := map[string]bool{}
	var out []fs.DirEntry
	for p := range m {
		if p == name || !plan.Within(p, name) {
			continue
		}
		rest := strings.TrimPrefix(p, strings.TrimSuffix(name, "/")+"/")
		first, _, more := strings.Cut(rest, "/")
		if !seen[first] {
			seen[first] = true
			out = append(out, fs.FileInfoToDirEntry(mapInfo{name: filepath.Join(name, first), dir: more}))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

func (m mapFS) Readlink(name string) (string, error) {
	return "", &fs.PathError{Op: "readlink", Path: name, Err: errors.New("not a symlink")}
}

func (m mapFS) ReadFile(name string) ([]byte, error) {
	if data, ok := m[name]; ok {
		return []byte(data), nil
	}
	if _, err := m.Stat(name); err == nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errors.New("is a directory")}
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// fakeEnv is a world that lives only in memory: home /home/u, working
// directory /home/u/proj, and the given files.
func fakeEnv(files mapFS, environ ...string) Env {
	return Env{
		GOOS:    "linux",
		UID:     1000,
		GID:     1000,
		Home:    "/home/u",
		Cwd:     "/home/u/proj",
		TempDir: "/tmp",
		Environ: append([]string{"HOME=/home/u", "XDG_STATE_HOME=/nonexistent/state"}, environ...),
		FS:      files,
	}
}
