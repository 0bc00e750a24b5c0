package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/plan"
)

// An allow entry means allowlist: with no mode chosen it turns allowlist
// on, with "open" or "none" chosen it is an error naming both, wherever
// each was set. Ignoring it would leave the network open while the user
// believes it filtered.
func TestResolveAllowNeedsAllowlist(t *testing.T) {
	tests := []struct {
		name        string
		policy      string // written to etc/p.toml and loaded with --policy
		environ     []string
		flags       Flags
		wantMode    string
		wantImplied string
		wantErr     string
	}{
		{name: "no allow, default open", wantMode: "open"},
		{name: "--allow alone turns allowlist on", flags: Flags{Allow: []string{"example.com"}},
			wantMode: "allowlist", wantImplied: `allowlist because flag --allow allows example.com`},
		{name: "--allow with --network allowlist", flags: Flags{Allow: []string{"example.com"}, Network: "allowlist"},
			wantMode: "allowlist"},
		{name: "--allow with --network open", flags: Flags{Allow: []string{"example.com"}, Network: "open"},
			wantErr: `flag --allow: "example.com": allowing a host needs network mode allowlist, but --network sets the network to "open"; drop one of them, or use allowlist`},
		{name: "--allow with --network none", flags: Flags{Allow: []string{"a.test", "b.test"}, Network: "none"},
			wantErr: `flag --allow: "a.test": allowing a host needs network mode allowlist, but --network sets the network to "none"; drop one of them, or use allowlist`},
		{name: "--allow with AGENTBOX_NETWORK=open", environ: []string{"AGENTBOX_NETWORK=open"}, flags: Flags{Allow: []string{"example.com"}},
			wantErr: `flag --allow: "example.com": allowing a host needs network mode allowlist, but AGENTBOX_NETWORK sets the network to "open"; drop one of them, or use allowlist`},
		{name: "policy allow alone", policy: "[network]\nallow = [\"api.example.com\"]\n",
			wantMode: "allowlist", wantImplied: `allowlist because $ROOT/etc/p.toml:2 network.allow[0] allows api.example.com`},
		{name: "policy allow with mode open", policy: "[network]\nmode = \"open\"\nallow = [\"api.example.com\"]\n",
			wantErr: `$ROOT/etc/p.toml:3: network.allow[0]: "api.example.com": allowing a host needs network mode allowlist, but $ROOT/etc/p.toml:2 network.mode sets the network to "open"; drop one of them, or use allowlist`},
		{name: "policy allow, --network none", policy: "[network]\nallow = [\"api.example.com\"]\n", flags: Flags{Network: "none"},
			wantErr: `$ROOT/etc/p.toml:2: network.allow[0]: "api.example.com": allowing a host needs network mode allowlist, but --network sets the network to "none"; drop one of them, or use allowlist`},
		{name: "policy mode allowlist, --allow adds", policy: "[network]\nmode = \"allowlist\"\n", flags: Flags{Allow: []string{"example.com"}},
			wantMode: "allowlist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.setenv(tc.environ...)
			if tc.policy != "" {
				w.write("etc/p.toml", tc.policy)
				tc.flags.Policy = []string{w.path("etc/p.toml")}
			}
			p, err := w.resolve(tc.flags, Options{}, "true")
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("resolved with network %+v, want error %q", p.Network, tc.wantErr)
				}
				if diff := cmp.Diff(tc.wantErr, w.norm(err.Error())); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				if !errors.Is(err, ErrPolicy) {
					t.Errorf("error %v is not ErrPolicy", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantMode, p.Network.Mode); diff != "" {
				t.Errorf("mode (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantImplied, w.norm(p.Network.Implied)); diff != "" {
				t.Errorf("implied (-want +got):\n%s", diff)
			}
		})
	}
}

// Inside a box, the variables the box sets to describe itself are not read
// back as settings by an agentbox started there; the others still are.
func TestEnvLayerInsideABox(t *testing.T) {
	outer := []string{"AGENTBOX=1", "AGENTBOX_BACKEND=bwrap", "AGENTBOX_NETWORK=none", "AGENTBOX_DENY=/root/.aws",
		"AGENTBOX_WRITABLE=/p", "AGENTBOX_DEPTH=1"}
	l, err := envLayer(fakeEnv(nil, append(outer, "AGENTBOX_WORKSPACE=w1", "AGENTBOX_ENFORCE=best-effort")...))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Entry{
		"workspace.id":    {Value: "w1", Origin: plan.Origin{Key: "env AGENTBOX_WORKSPACE"}},
		"sandbox.enforce": {Value: "best-effort", Origin: plan.Origin{Key: "env AGENTBOX_ENFORCE"}},
	}
	if diff := cmp.Diff(want, l.Scalars); diff != "" {
		t.Errorf("scalars (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]Entry{}, l.Lists); diff != "" {
		t.Errorf("lists (-want +got):\n%s", diff)
	}
	wantNote := "inside a box: AGENTBOX_BACKEND, AGENTBOX_DENY, AGENTBOX_NETWORK describe the outer box and are not read as settings"
	if diff := cmp.Diff(wantNote, l.Note); diff != "" {
		t.Errorf("note (-want +got):\n%s", diff)
	}

	// Only the outer box's variables: nothing set, but the note says why.
	l, err = envLayer(fakeEnv(nil, outer...))
	if err != nil {
		t.Fatal(err)
	}
	if l.Status != "absent" || len(l.Scalars) != 0 || l.Note != wantNote {
		t.Errorf("got status %q scalars %v note %q", l.Status, l.Scalars, l.Note)
	}

	// Outside a box they are settings, as before.
	l, err = envLayer(fakeEnv(nil, "AGENTBOX_BACKEND=landlock"))
	if err != nil {
		t.Fatal(err)
	}
	if l.Scalars["sandbox.backend"].Value != "landlock" || l.Note != "" {
		t.Errorf("outside a box: got scalars %v note %q", l.Scalars, l.Note)
	}
}

// The plan of a box started inside a box says so in the layers, picks the
// backend by itself, and counts the depth.
func TestResolveInsideABox(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		want    int
	}{
		{"outside any box", nil, 1},
		{"in a box that counts", []string{"AGENTBOX=1", "AGENTBOX_DEPTH=2"}, 3},
		{"in a box that does not count", []string{"AGENTBOX=1"}, 2},
		{"a forged count is bounded", []string{"AGENTBOX=1", "AGENTBOX_DEPTH=99999999"}, 2},
		{"a count without a box is ignored", []string{"AGENTBOX_DEPTH=5"}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.setenv(tc.environ...)
			w.setenv("AGENTBOX_BACKEND=bwrap", "AGENTBOX_NETWORK=none")
			p := w.mustResolve(Flags{}, Options{}, "true")
			if p.Depth != tc.want {
				t.Errorf("depth: want %d, got %d", tc.want, p.Depth)
			}
			inBox := len(tc.environ) > 0 && tc.environ[0] == "AGENTBOX=1"
			if inBox && (p.Backend != "auto" || p.Network.Mode != "open") {
				t.Errorf("inside a box the outer box's variables became settings: backend %q network %q", p.Backend, p.Network.Mode)
			}
			for _, kv := range p.Environ {
				if strings.HasPrefix(kv, "AGENTBOX") {
					t.Errorf("an inherited %s reaches the command", kv)
				}
			}
		})
	}
}
