//go:build linux

package integration

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// goModule is a module version as the go command's download cache (and
// any module proxy) holds it: .info, .mod and .zip, and its two go.sum
// lines.
type goModule struct {
	path, version string
	files         map[string]string // name in the module → content; go.mod among them
}

// h1 is go.sum's hash of files (name → content): the SHA-256 of a summary
// line "<sha256 hex>  <name>" per file in name order, in base64.
func h1(files map[string]string) string {
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var summary strings.Builder
	for _, n := range names {
		fmt.Fprintf(&summary, "%x  %s\n", sha256.Sum256([]byte(files[n])), n)
	}
	sum := sha256.Sum256([]byte(summary.String()))
	return "h1:" + base64.StdEncoding.EncodeToString(sum[:])
}

// sum is the module's two go.sum lines.
func (m goModule) sum() string {
	prefixed := map[string]string{}
	for n, c := range m.files {
		prefixed[m.path+"@"+m.version+"/"+n] = c
	}
	return fmt.Sprintf("%s %s %s\n%s %s/go.mod %s\n", m.path, m.version, h1(prefixed), m.path, m.version, h1(map[string]string{"go.mod": m.files["go.mod"]}))
}

// publish writes the module into a download cache (or proxy) folder.
func (m goModule) publish(t *testing.T, dir string) {
	t.Helper()
	at := filepath.Join(dir, m.path, "@v", m.version)
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	for n, c := range m.files {
		f, err := z.Create(m.path + "@" + m.version + "/" + n)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(c))
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	write(t, at+".info", fmt.Sprintf(`{"Version":%q,"Time":"2026-01-02T03:04:05Z"}`+"\n", m.version))
	write(t, at+".mod", m.files["go.mod"])
	write(t, at+".zip", buf.String())
}

func depModule(path, say string) goModule {
	name := path[strings.LastIndex(path, "/")+1:]
	return goModule{path: path, version: "v1.0.0", files: map[string]string{
		"go.mod":     "module " + path + "\n\ngo 1.24\n",
		name + ".go": "package " + name + "\n\n// Say says who it is.\nfunc Say() string { return " + fmt.Sprintf("%q", say) + " }\n",
	}}
}

// goProject writes a main module that uses dep into dir.
func goProject(t *testing.T, dir string, dep goModule) {
	t.Helper()
	name := dep.path[strings.LastIndex(dep.path, "/")+1:]
	write(t, filepath.Join(dir, "go.mod"), "module example.com/proj\n\ngo 1.24\n\nrequire "+dep.path+" "+dep.version+"\n")
	write(t, filepath.Join(dir, "go.sum"), dep.sum())
	write(t, filepath.Join(dir, "main.go"), "package main\n\nimport (\n\t\"fmt\"\n\n\t\""+dep.path+"\"\n)\n\nfunc main() { fmt.Println(\"says\", "+name+".Say()) }\n")
}

// hostGo runs go on the host (outside any box) in dir with the world's
// environment.
func (w *world) hostGo(dir string, args ...string) string {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "go", args...)
	c.Dir = dir
	c.Env = w.env
	out, err := c.CombinedOutput()
	if err != nil {
		w.t.Fatalf("go %v on the host: %v\n%s", args, err, out)
	}
	return string(out)
}

// A first go build in a new project reads what the host already built and
// downloaded: the standard library is not compiled again in the box, and a
// module comes from the host's download cache (GOPROXY=off leaves no other
// way), checked against go.sum. Everything the box builds or fetches goes
// to the workspace's private caches; the host's are unchanged to the byte,
// under both backends, whatever the box does to the checks.
func TestCachesGoReadsHost(t *testing.T) {
	_, err := exec.LookPath("go")
	need(t, err == nil, "go is not installed")
	w := newWorld(t)
	w.env = append(w.env, "GOTOOLCHAIN=local", "GOFLAGS=-buildvcs=false", "GOPROXY=off")
	w.timeout = 10 * time.Minute
	caches := privateCaches(t, w)
	dl := filepath.Join(w.home, "go", "pkg", "mod", "cache", "download")
	dep := depModule("example.com/dep", "the host's dep")
	dep.publish(t, dl)
	tampered := depModule("example.com/tampered", "as go.sum knows it")
	tampered.publish(t, dl)

	// The host builds the project once: its caches are warm.
	hostProj := filepath.Join(w.base, "hostproj")
	goProject(t, hostProj, dep)
	w.hostGo(hostProj, "build", "-o", "app", ".")
	before := hostCacheSnapshot(t, w)
	if !strings.Contains(before, ".cache/go-build/") {
		t.Fatalf("the host's build did not fill its cache:\n%s", before)
	}

	for _, backend := range []string{"bwrap", "landlock"} {
		t.Run(backend, func(t *testing.T) {
			w.cwd = filepath.Join(w.base, "new-"+backend)
			goProject(t, w.cwd, dep)
			r := w.sh([]string{"--backend", backend}, `set -e; go build -v -o app . 2>built; ./app; cat built >&2; go env GOCACHEPROG GOPROXY`)
			expectCode(t, r, 0)
			expectContains(t, "the box's build", r.stdout, "says the host's dep")
			// go build -v names the packages it compiles: the module's
			// own and the dependency (in the private module cache, a new
			// folder, so a new build), never the standard library.
			// agentbox's own lines (a notice of the rules Landlock
			// enforces weaker, a warning) are not builds.
			for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
				if line != "example.com/proj" && line != "example.com/dep" && !strings.HasPrefix(line, "agentbox: warning:") && !strings.HasPrefix(line, "agentbox: notice:") && !strings.HasPrefix(line, "go: downloading ") {
					t.Errorf("the box compiled %q again", line)
				}
			}
			expectContains(t, "GOCACHEPROG", r.stdout, bin+" __gocache --read "+filepath.Join(w.home, ".cache", "go-build"))
			expectContains(t, "GOPROXY", r.stdout, "file://"+dl+",off")
			if m, _ := filepath.Glob(filepath.Join(caches, "new-"+backend+"-*", "go-mod", "example.com", "dep@v1.0.0", "dep.go")); len(m) != 1 {
				t.Error("the module is not in the workspace's private module cache")
			}
		})
	}

	// What comes from the host's downloads is checked like anything else:
	// a go.sum that disagrees stops the build.
	t.Run("checked against go.sum", func(t *testing.T) {
		w.cwd = filepath.Join(w.base, "tampered")
		goProject(t, w.cwd, tampered)
		other := depModule("example.com/tampered", "something else")
		write(t, filepath.Join(w.cwd, "go.sum"), other.sum())
		r := w.sh(nil, `go build -o app .`)
		if r.code == 0 {
			t.Fatalf("a module that go.sum does not know was used:\n%s", r)
		}
		expectContains(t, "go build", r.stderr, "SECURITY ERROR")
	})

	// The attack: every check turned off, the box points go at the host's
	// caches as its own, tells agentbox's program to write the host's
	// build cache, and sends it a put directly. Nothing reaches the host.
	t.Run("poisoning the host's caches", func(t *testing.T) {
		w.cwd = filepath.Join(w.base, "attack")
		goProject(t, w.cwd, dep)
		evil := depModule("example.com/evil", "poisoned")
		evil.publish(t, filepath.Join(w.cwd, "evilproxy"))
		hostBuild := filepath.Join(w.home, ".cache", "go-build")
		hostMod := filepath.Join(w.home, "go", "pkg", "mod")
		body := "poisoned output"
		sum := sha256.Sum256([]byte(body))
		action := sha256.Sum256([]byte("an action the host will look up"))
		put := fmt.Sprintf(`{"ID":1,"Command":"put","ActionID":%q,"OutputID":%q,"BodySize":%d}`+"\n"+`%q`+"\n"+`{"ID":2,"Command":"close"}`+"\n",
			base64.StdEncoding.EncodeToString(action[:]), base64.StdEncoding.EncodeToString(sum[:]), len(body), base64.StdEncoding.EncodeToString([]byte(body)))
		write(t, filepath.Join(w.cwd, "put.json"), put)
		checksOff := `export GOFLAGS="-modcacherw -mod=mod" GONOSUMDB='*' GONOSUMCHECK=1 GOSUMDB=off GOINSECURE='*' GONOVERIFY=1; `
		attacks := []struct{ name, script string }{
			{"the host's module cache as the box's", `GOMODCACHE=` + hostMod + ` GOPROXY=file://$PWD/evilproxy go mod download example.com/evil@v1.0.0`},
			{"the host's build cache as the box's", `GOCACHE=` + hostBuild + ` GOCACHEPROG= go build -a -o /dev/null .`},
			{"agentbox's program writing the host's build cache", `GOCACHEPROG="` + bin + ` __gocache --read $GOCACHE --write ` + hostBuild + `" go build -a -o /dev/null .`},
			{"a put sent to agentbox's program", bin + ` __gocache --read $GOCACHE --write ` + hostBuild + ` < put.json`},
		}
		for _, backend := range []string{"bwrap", "landlock"} {
			for _, a := range attacks {
				r := w.sh([]string{"--backend", backend}, checksOff+a.script)
				out := strings.ToLower(r.stdout + r.stderr)
				if !strings.Contains(out, "read-only file system") && !strings.Contains(out, "permission denied") {
					t.Errorf("%s, %s: not refused for writing:\n%s", backend, a.name, r)
				}
			}
		}
		if after := hostCacheSnapshot(t, w); after != before {
			t.Fatalf("the host caches changed:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})

	// A GOCACHEPROG of the user's (a remote cache, say) would take the
	// box's builds out of the private cache: agentbox's own replaces it.
	t.Run("an inherited GOCACHEPROG is not run", func(t *testing.T) {
		w.cwd = filepath.Join(w.base, "inherited")
		goProject(t, w.cwd, dep)
		prog := filepath.Join(w.cwd, "remote-cache")
		write(t, prog, "#!/bin/sh\necho ran >> \"$(dirname \"$0\")/remote-cache.ran\"\nexit 1\n")
		os.Chmod(prog, 0o755)
		saved := w.env
		w.env = append(append([]string(nil), w.env...), "GOCACHEPROG="+prog)
		defer func() { w.env = saved }()
		r := w.sh(nil, `go build -o app . && ./app`)
		expectCode(t, r, 0)
		if exists(prog + ".ran") {
			t.Error("the box ran the GOCACHEPROG it inherited")
		}
	})

	if after := hostCacheSnapshot(t, w); after != before {
		t.Fatalf("the host caches changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
