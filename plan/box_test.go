package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTruthful(t *testing.T) {
	p := good()
	if got := p.Truthful(); got != nil {
		t.Fatalf("an unconfined plan claims %q", got)
	}
	p.Box = Box{Backend: "bwrap", Writable: []string{"/home/u/proj", "/tmp"}, Tmpdir: "/tmp", Env: []string{"HTTP_PROXY=x"}}
	want := []string{
		"AGENTBOX=1",
		"AGENTBOX_BACKEND=bwrap",
		"AGENTBOX_WRITABLE=/home/u/proj,/tmp",
		"AGENTBOX_DENY=/home/u/.aws,/home/u/.netrc",
		"AGENTBOX_NETWORK=open",
		"TMPDIR=/tmp",
	}
	if diff := cmp.Diff(want, p.Truthful()); diff != "" {
		t.Errorf("Truthful (-want +got):\n%s", diff)
	}
	p.Environ = []string{"PATH=/bin"}
	if diff := cmp.Diff(append([]string{"PATH=/bin", "HTTP_PROXY=x"}, want...), p.BoxEnviron()); diff != "" {
		t.Errorf("BoxEnviron (-want +got):\n%s", diff)
	}
	// Windows lists with ";", and status splits them back the same way.
	p.GOOS = "windows"
	p.Box.Writable = []string{`C:\a,b`, `C:\c`}
	got := p.Truthful()[2]
	if got != `AGENTBOX_WRITABLE=C:\a,b;C:\c` {
		t.Errorf("windows list: %q", got)
	}
	if diff := cmp.Diff([]string{`C:\a,b`, `C:\c`}, SplitList("windows", `C:\a,b;C:\c`)); diff != "" {
		t.Errorf("SplitList (-want +got):\n%s", diff)
	}
}

func TestBoxEnvironDegraded(t *testing.T) {
	p := good()
	p.Environ = []string{"PATH=/bin"}
	p.Box = Box{Degraded: "no-backend: nothing here"}
	want := []string{"PATH=/bin", "AGENTBOX_DEGRADED=no-backend: nothing here"}
	if diff := cmp.Diff(want, p.BoxEnviron()); diff != "" {
		t.Errorf("BoxEnviron (-want +got):\n%s", diff)
	}
}

// The digest ignores the run ID (and where it appears), and nothing else.
func TestDigest(t *testing.T) {
	a, b := good(), good()
	a.RunID, b.RunID = "aaaaaaaaaaaa", "bbbbbbbbbbbb"
	a.Tmp.HostDir, b.Tmp.HostDir = "/tmp/x/run-aaaaaaaaaaaa", "/tmp/x/run-bbbbbbbbbbbb"
	if a.Digest() != b.Digest() {
		t.Error("two resolutions of one plan have different digests")
	}
	b.Network.Mode = NetNone
	if a.Digest() == b.Digest() {
		t.Error("a different plan has the same digest")
	}
	c := good()
	c.Environ = []string{"SECRET=1"}
	if c.Digest() != good().Digest() {
		t.Error("the environment's values changed the digest")
	}
}

func TestClone(t *testing.T) {
	p := good()
	p.Environ = []string{"A=1"}
	p.Box = Box{Backend: "bwrap", Detail: []byte(`{"args":["x"]}`)}
	q := p.Clone()
	if diff := cmp.Diff(p, q); diff != "" {
		t.Fatalf("clone differs (-orig +clone):\n%s", diff)
	}
	q.Mounts[0].Path = "/x"
	q.Environ[0] = "A=2"
	q.Env.Set["A"] = "9"
	if p.Mounts[0].Path != "/" || p.Environ[0] != "A=1" || p.Env.Set["A"] != "1" {
		t.Error("changing the clone changed the original")
	}
}
