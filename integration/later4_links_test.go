//go:build linux

package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A write inside the writable roots must never change a file outside
// them. pnpm links every file of a project's node_modules/.pnpm to one
// content store that every project of the user shares (uv's virtual
// environments, cp -al and git clone --local do the same): the same inode
// is the store's, this project's and every other project's. A box that
// appends to its project's copy of a package would change what the host's
// node loads in another project, outside every root.

// pnpmWorld is a package tarball, a pnpm store outside the project, and a
// second project (other) outside every root that uses the same package
// from the same store. Both projects are installed on the host, so their
// package files are hard links to the store's.
type pnpmWorld struct {
	*world
	store, other, tarball string
}

// isNumber is the package both projects install (named after the
// registry's is-number, made here so that nothing needs the network).
const isNumber = "module.exports = n => typeof n === \"number\";\n"

func newPnpmWorld(t *testing.T) *pnpmWorld {
	t.Helper()
	_, perr := exec.LookPath("pnpm")
	_, nerr := exec.LookPath("npm")
	_, derr := exec.LookPath("node")
	need(t, perr == nil && nerr == nil && derr == nil, "pnpm, npm and node must be installed")
	w := newWorld(t)
	pw := &pnpmWorld{world: w, store: filepath.Join(w.base, "store"), other: filepath.Join(w.base, "other")}
	pkg := filepath.Join(w.base, "pkg")
	write(t, filepath.Join(pkg, "package.json"), `{"name":"is-number","version":"7.0.0","main":"index.js"}`)
	write(t, filepath.Join(pkg, "index.js"), isNumber)
	pw.host(pkg, "npm", "pack", "--silent", "--pack-destination", w.base)
	pw.tarball = filepath.Join(w.base, "is-number-7.0.0.tgz")
	for _, p := range []string{w.project, pw.other} {
		write(t, filepath.Join(p, "package.json"), `{"name":"p","version":"1.0.0","dependencies":{"is-number":"file:`+pw.tarball+`"}}`)
		pw.host(p, "pnpm", "install", "--offline", "--store-dir", pw.store)
	}
	// The attack needs the links; a pnpm that copied would make the test
	// pass for nothing.
	if n := nlink(t, pw.pkgFile(w.project)); n < 3 {
		t.Fatalf("pnpm did not link %s to its store (%d links): the test would prove nothing", pw.pkgFile(w.project), n)
	}
	return pw
}

// host runs a program on the host, unconfined, in dir.
func (pw *pnpmWorld) host(dir string, argv ...string) string {
	pw.t.Helper()
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir = dir
	c.Env = append(pw.env, "npm_config_update_notifier=false", "CI=1")
	out, err := c.CombinedOutput()
	if err != nil {
		pw.t.Fatalf("host %v in %s: %v\n%s", argv, dir, err, out)
	}
	return string(out)
}

// pkgFile is project's copy of the package's index.js.
func (pw *pnpmWorld) pkgFile(project string) string {
	m, _ := filepath.Glob(filepath.Join(project, "node_modules", ".pnpm", "is-number@*", "node_modules", "is-number", "index.js"))
	if len(m) != 1 {
		pw.t.Fatalf("no single installed is-number in %s: %v", project, m)
	}
	return m[0]
}

// storeFiles are the contents of every file of the store.
func (pw *pnpmWorld) storeFiles() map[string]string {
	pw.t.Helper()
	out := map[string]string{}
	filepath.Walk(pw.store, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			out[p] = string(b)
		}
		return nil
	})
	return out
}

// hostRequire is what the host's node prints when the other project loads
// the package.
func (pw *pnpmWorld) hostRequire() string {
	pw.t.Helper()
	return pw.host(pw.other, "node", "-e", `require("is-number"); console.log("loaded")`)
}

func nlink(t *testing.T, p string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return uint64(st.Nlink)
}

// The box appends code to its project's copy of a package pnpm linked to
// a store shared with another project. The box's own copy changes; the
// store's file and the other project's do not, and the host's node in the
// other project runs none of it.
func TestLater4PnpmStoreLink(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		pw := newPnpmWorld(t)
		before := pw.storeFiles()
		f := pw.pkgFile(pw.project)
		r := pw.sh(be, `echo 'console.log("PWNED by the box")' >> `+shellQuote(f)+` && cat `+shellQuote(f))
		expectCode(t, r, 0)
		expectContains(t, "the box's copy", r.stdout, "PWNED")
		if got := pw.hostRequire(); strings.Contains(got, "PWNED") || !strings.Contains(got, "loaded") {
			t.Fatalf("the host's node in the other project ran the box's code:\n%s", got)
		}
		if b, _ := os.ReadFile(pw.pkgFile(pw.other)); string(b) != isNumber {
			t.Fatalf("the other project's file changed:\n%s", b)
		}
		after := pw.storeFiles()
		for p, c := range before {
			if after[p] != c {
				t.Fatalf("the store's %s changed:\n%s", p, after[p])
			}
		}
		// The project's copy keeps its mode and times: pnpm and the
		// build tools see the same files.
		if n := nlink(t, f); n != 1 {
			t.Fatalf("the project's copy still has %d links", n)
		}
	})
}

// The same with a link cp -al made, and with git's objects that a local
// git clone links: the box makes a linked object writable and changes it;
// the other clone's object is unchanged.
func TestLater4OtherLinks(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		w := newWorld(t)
		outside := filepath.Join(w.base, "outside")
		mkdir(t, outside)
		write(t, filepath.Join(outside, "run.sh"), "echo original\n")
		if err := os.Link(filepath.Join(outside, "run.sh"), filepath.Join(w.project, "run.sh")); err != nil {
			t.Fatal(err)
		}
		// A repository outside the root, cloned locally into the project:
		// the clone's objects are the same inodes.
		src := filepath.Join(w.base, "src")
		mkdir(t, src)
		gitRepo(t, src)
		clone := filepath.Join(w.project, "clone")
		c := exec.Command("git", "clone", "-q", "--local", src, clone)
		c.Env = append(os.Environ(), "HOME="+w.home, "GIT_CONFIG_NOSYSTEM=1")
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git clone: %v\n%s", err, out)
		}
		var obj string
		filepath.Walk(filepath.Join(clone, ".git", "objects"), func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode().IsRegular() && obj == "" && nlink(t, p) > 1 {
				obj = p
			}
			return nil
		})
		if obj == "" {
			t.Fatal("git clone --local linked no object: the test would prove nothing")
		}
		rel, _ := filepath.Rel(clone, obj)
		orig, _ := os.ReadFile(obj)
		r := w.sh(be, `echo 'echo PWNED' >> run.sh && chmod u+w `+shellQuote(obj)+` && echo garbage >> `+shellQuote(obj))
		expectCode(t, r, 0)
		if b, _ := os.ReadFile(filepath.Join(outside, "run.sh")); string(b) != "echo original\n" {
			t.Fatalf("the file outside the root changed through its link:\n%s", b)
		}
		if b, _ := os.ReadFile(filepath.Join(src, rel)); !bytes.Equal(b, orig) {
			t.Fatalf("the other clone's object %s changed through its link", rel)
		}
		if b, _ := os.ReadFile(filepath.Join(w.project, "run.sh")); !strings.Contains(string(b), "PWNED") {
			t.Fatalf("the box could not write its own run.sh:\n%s", b)
		}
	})
}

// pnpm's own work inside the box still works in a project whose packages
// are linked to a store outside it: the box adds a package and installs
// (pnpm finds the box's private store in place of the host's and makes
// node_modules again), builds and tests with pnpm's scripts; the host's
// store and the other project are unchanged, and the next run starts.
//
// Under Landlock only the build and the tests run: pnpm 12 takes a lock
// in /tmp/pnpm-store-operation-locks-UID whatever TMPDIR says, and a
// Landlock box has no /tmp of its own, so pnpm install cannot run there
// at all, links or not.
func TestLater4PnpmWorksInBox(t *testing.T) {
	eachBackend(t, func(t *testing.T, be []string) {
		pw := newPnpmWorld(t)
		pw.timeout = 3 * time.Minute
		before := pw.storeFiles()
		pkg2 := filepath.Join(pw.base, "pkg2")
		write(t, filepath.Join(pkg2, "package.json"), `{"name":"is-odd","version":"1.0.0","main":"index.js"}`)
		write(t, filepath.Join(pkg2, "index.js"), "module.exports = n => n % 2 === 1;\n")
		pw.host(pkg2, "npm", "pack", "--silent", "--pack-destination", pw.base)
		write(t, filepath.Join(pw.project, "package.json"), `{"name":"p","version":"1.0.0",
 "scripts":{"build":"node build.js","test":"node test.js"},
 "dependencies":{"is-number":"file:`+pw.tarball+`","is-odd":"file:`+filepath.Join(pw.base, "is-odd-1.0.0.tgz")+`"}}`)
		write(t, filepath.Join(pw.project, "build.js"), `require("fs").writeFileSync("out.js", "module.exports = " + require("is-number")(3) + ";\n");`+"\n")
		write(t, filepath.Join(pw.project, "test.js"), `if (require("./out.js") !== true) process.exit(1); try { if (!require("is-odd")(3)) process.exit(1) } catch (e) { if (process.env.WANT_ODD) throw e } console.log("tests pass");`+"\n")
		install := "WANT_ODD=1; pnpm install --offline --no-frozen-lockfile --config.confirmModulesPurge=false"
		if be[1] == "landlock" {
			install = "WANT_ODD="
		}
		script := `set -e; export CI=1 npm_config_update_notifier=false
` + install + `
export WANT_ODD
pnpm run build
pnpm test`
		r := pw.sh(be, script)
		expectCode(t, r, 0)
		expectContains(t, "the box's test", r.stdout, "tests pass")
		after := pw.storeFiles()
		for p, c := range before {
			if after[p] != c {
				t.Fatalf("the store's %s changed:\n%s", p, after[p])
			}
		}
		if got := pw.hostRequire(); !strings.Contains(got, "loaded") {
			t.Fatalf("the other project no longer loads its package:\n%s", got)
		}
		// Whatever links the box's install made, the next run starts and
		// its build and tests pass again.
		r = pw.sh(be, script)
		expectCode(t, r, 0)
		expectContains(t, "the box's test, again", r.stdout, "tests pass")
	})
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
