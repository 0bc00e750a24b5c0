package policy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The box's go reads the host's build cache (through agentbox as
// GOCACHEPROG) and module downloads (a file:// proxy first) beneath its
// private caches, when both are there and visible in the box; GOCACHEPROG
// is set empty otherwise, so that a program set for the host's builds
// never takes the box's builds out of the private cache.
func TestResolveCachesGoReads(t *testing.T) {
	const (
		priv   = "$ROOT/state/agentbox/caches/proj-HASH"
		prog   = "GOCACHEPROG=$ROOT/usr/bin/agentbox __gocache --read $ROOT/home/u/.cache/go-build --write " + priv + "/go-build"
		proxy  = "GOPROXY=file://$ROOT/home/u/go/pkg/mod/cache/download,"
		noRead = "GOCACHEPROG="
	)
	tests := []struct {
		name  string
		setup func(w *world)
		flags Flags
		// want are the box's GOCACHEPROG and GOPROXY ("" when not set).
		wantProg, wantProxy string
		// why is in the plan when the build cache is not read.
		why string
	}{
		{
			name:     "both read",
			wantProg: prog, wantProxy: proxy + "https://proxy.golang.org,direct",
		},
		{
			name:     "the inherited GOPROXY follows the host's downloads",
			setup:    func(w *world) { w.setenv("GOPROXY=off") },
			wantProg: prog, wantProxy: proxy + "off",
		},
		{
			name: "the go command's settings file",
			setup: func(w *world) {
				w.write("home/u/.config/go/env", "GOPROXY=https://corp.example/go\nGOFLAGS=-mod=mod\n")
			},
			wantProg: prog, wantProxy: proxy + "https://corp.example/go",
		},
		{
			name: "the settings file moves the host's build cache",
			setup: func(w *world) {
				w.mkdir("srv/gocache")
				w.write("home/u/.config/go/env", "GOCACHE="+w.path("srv/gocache")+"\n")
			},
			wantProg:  strings.Replace(prog, "$ROOT/home/u/.cache/go-build", "$ROOT/srv/gocache", 1),
			wantProxy: proxy + "https://proxy.golang.org,direct",
		},
		{
			name:     "a box in a box does not name the same downloads twice",
			setup:    func(w *world) { w.setenv("GOPROXY=file://" + w.path("home/u/go/pkg/mod/cache/download") + ",direct") },
			wantProg: prog, wantProxy: proxy + "direct",
		},
		{
			name:     "an inherited program is replaced",
			setup:    func(w *world) { w.setenv("GOCACHEPROG=/usr/local/bin/remote-cache --upload") },
			wantProg: prog, wantProxy: proxy + "https://proxy.golang.org,direct",
		},
		{
			name:     "a hidden build cache is not read",
			flags:    Flags{Deny: []string{"~/.cache/go-build"}},
			wantProg: noRead, wantProxy: proxy + "https://proxy.golang.org,direct",
			why: "the host's build cache $ROOT/home/u/.cache/go-build is not read: it is hidden in the box",
		},
		{
			name:  "hidden downloads are not read",
			flags: Flags{Deny: []string{"~/go"}}, wantProg: prog,
		},
		{
			name:     "no build cache on the host",
			setup:    func(w *world) { w.env.Environ = append(w.env.Environ, "GOCACHE="+w.path("nowhere")) },
			wantProg: noRead, wantProxy: proxy + "https://proxy.golang.org,direct",
			why: "the host's build cache $ROOT/nowhere is not read: it does not exist",
		},
		{
			name:     "agentbox in a hidden folder is not visible in the box",
			flags:    Flags{Deny: []string{"$ROOT/usr"}},
			wantProg: noRead, wantProxy: proxy + "https://proxy.golang.org,direct",
			why: "the host's build cache $ROOT/home/u/.cache/go-build is not read: agentbox's executable $ROOT/usr/bin/agentbox is not visible in the box",
		},
		{
			name: "a build cache the box can write is not read as the host's",
			setup: func(w *world) {
				w.mkdir("home/u/proj/.gocache")
				w.setenv("GOCACHE=" + w.path("home/u/proj/.gocache"))
			},
			wantProg: noRead, wantProxy: proxy + "https://proxy.golang.org,direct",
			why: "the host's build cache $ROOT/home/u/proj/.gocache is not read: it lies in a folder the box can write",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldOutsideTmp(t)
			w.mkdir("home/u/.cache/go-build")
			w.mkdir("home/u/go/pkg/mod/cache/download")
			w.write("usr/bin/agentbox", "")
			w.env.Self = w.path("usr/bin/agentbox")
			if tc.setup != nil {
				tc.setup(w)
			}
			flags := tc.flags
			for i, d := range flags.Deny {
				flags.Deny[i] = strings.ReplaceAll(d, "$ROOT", w.root)
			}
			p := w.mustResolve(flags, Options{}, "go", "build")
			got := map[string]string{}
			for _, kv := range p.Environ {
				if name, _, _ := strings.Cut(kv, "="); name == "GOCACHEPROG" || name == "GOPROXY" {
					if _, dup := got[name]; dup {
						t.Errorf("%s is set twice", name)
					}
					got[name] = w.norm(kv)
				}
			}
			want := map[string]string{}
			for _, kv := range []string{tc.wantProg, tc.wantProxy} {
				if kv != "" {
					name, _, _ := strings.Cut(kv, "=")
					want[name] = kv
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("environment (-want +got):\n%s", diff)
			}
			var hows []string
			for _, c := range p.Caches {
				for _, rd := range c.Reads {
					if rd.Host == "" {
						hows = append(hows, w.norm(rd.How))
					}
					if strings.Contains(rd.Var, "https://corp") {
						t.Errorf("the plan holds the inherited GOPROXY: %s", rd.Var)
					}
				}
			}
			var wantHows []string
			if tc.why != "" {
				wantHows = []string{tc.why}
			}
			if diff := cmp.Diff(wantHows, hows); diff != "" {
				t.Errorf("why the build cache is not read (-want +got):\n%s", diff)
			}
			// The host's folders are read, never written.
			for _, m := range p.Writable() {
				for _, c := range p.Caches {
					for _, rd := range c.Reads {
						if rd.Host != "" && (strings.HasPrefix(rd.Host+"/", m+"/") || strings.HasPrefix(m+"/", rd.Host+"/")) {
							t.Errorf("host cache %s read by the box is in or holds the writable %s", rd.Host, m)
						}
					}
				}
			}
		})
	}
}

// Only the private mode reads the host's caches: host-read-only uses them
// directly, host-writable and off leave go alone.
func TestResolveCachesGoReadsOnlyPrivate(t *testing.T) {
	for _, mode := range []string{"host-read-only", "host-writable", "off"} {
		w := newWorldOutsideTmp(t)
		w.mkdir("home/u/.cache/go-build")
		w.mkdir("home/u/go/pkg/mod/cache/download")
		w.write("usr/bin/agentbox", "")
		w.env.Self = w.path("usr/bin/agentbox")
		w.write("p.toml", "[caches]\ngo = \""+mode+"\"\n")
		p := w.mustResolve(Flags{Policy: []string{w.path("p.toml")}}, Options{}, "go", "build")
		for _, kv := range p.Environ {
			if strings.HasPrefix(kv, "GOCACHEPROG=") || strings.HasPrefix(kv, "GOPROXY=") {
				t.Errorf("%s: %s", mode, kv)
			}
		}
	}
}
