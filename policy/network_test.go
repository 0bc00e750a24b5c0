package policy

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/plan"
)

func TestParsePublish(t *testing.T) {
	tests := []struct {
		in   string
		want plan.Publish
		err  string
	}{
		{in: "3000", want: plan.Publish{Addr: "127.0.0.1", Port: 3000, BoxPort: 3000}},
		{in: "8080:80", want: plan.Publish{Addr: "127.0.0.1", Port: 8080, BoxPort: 80}},
		{in: "0.0.0.0:8080:3000", want: plan.Publish{Addr: "0.0.0.0", Port: 8080, BoxPort: 3000}},
		{in: "localhost:8080:3000", want: plan.Publish{Addr: "127.0.0.1", Port: 8080, BoxPort: 3000}},
		{in: "[::1]:8080:3000", want: plan.Publish{Addr: "::1", Port: 8080, BoxPort: 3000}},
		{in: " 3000 ", want: plan.Publish{Addr: "127.0.0.1", Port: 3000, BoxPort: 3000}},
		{in: "", err: `bad port ""`},
		{in: "3000:", err: `bad port ""`},
		{in: "65536", err: `bad port "65536"`},
		{in: "-1", err: `bad port "-1"`},
		{in: "+80", err: `bad port "+80"`},
		{in: "a:1:2", err: "the address must be"},
		{in: "[127.0.0.1]:1:2", err: "not an IPv6 address"},
		{in: "::1:80:80", err: "bad port"},
		{in: "1:2:3:4", err: "bad port"},
	}
	for _, tc := range tests {
		got, err := ParsePublish(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParsePublish(%q) = %v, %v; want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParsePublish(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseUpstream(t *testing.T) {
	env := map[string]string{"PROXY_PASS": "p@ss:w/rd", "PROXY_USER": "alice"}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		raw   string
		vars  bool
		url   string
		creds string
		auth  string
		err   string
	}{
		{raw: "http://proxy.corp:3128", url: "http://proxy.corp:3128"},
		{raw: "http://proxy.corp:3128/", url: "http://proxy.corp:3128"},
		{raw: "http://proxy.corp", url: "http://proxy.corp:80"},
		{raw: "http://[fd00::1]:3128", url: "http://[fd00::1]:3128"},
		{raw: "http://bob:s%40cret@proxy.corp:3128", url: "http://proxy.corp:3128", creds: "bob:s@cret", auth: "basic, user bob"},
		{raw: "http://alice:${PROXY_PASS}@proxy.corp:3128", vars: true, url: "http://proxy.corp:3128", creds: "alice:p@ss:w/rd", auth: "basic, user alice, from $PROXY_PASS"},
		{raw: "http://$PROXY_USER:${PROXY_PASS}@proxy.corp:3128", vars: true, creds: "alice:p@ss:w/rd", auth: "basic, user alice, from $PROXY_USER and $PROXY_PASS", url: "http://proxy.corp:3128"},
		// From the environment, a $ is the password's own.
		{raw: "http://alice:${PROXY_PASS}@proxy.corp:3128", url: "http://proxy.corp:3128", creds: "alice:${PROXY_PASS}", auth: "basic, user alice"},
		{raw: "http://alice:${NOPE}@proxy.corp:3128", vars: true, err: "variable NOPE is not set"},
		{raw: "http://alice:x${PROXY_PASS}@proxy.corp:3128", vars: true, err: "a variable must be the whole user or password"},
		{raw: "socks5://proxy.corp:1080", err: "only an http:// proxy can be the upstream (not socks5://)"},
		{raw: "https://u:secret@proxy.corp:443", err: `"https://u:***@proxy.corp:443": only an http:// proxy`},
		{raw: "proxy.corp:3128", err: "only an http:// proxy"},
		{raw: "http://proxy.corp:3128/path", err: "nothing after it"},
		{raw: "http://proxy.corp:http", err: `bad port "http"`},
		{raw: "http://:3128", err: "no host"},
	}
	for _, tc := range tests {
		u, err := parseUpstream(tc.raw, tc.vars, getenv)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseUpstream(%q) = %+v, %v; want error %q", tc.raw, u, err, tc.err)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("parseUpstream(%q): the error shows the password: %v", tc.raw, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseUpstream(%q): %v", tc.raw, err)
			continue
		}
		if u.URL != tc.url || u.Credentials != tc.creds || u.Auth != tc.auth {
			t.Errorf("parseUpstream(%q) = %q %q %q, want %q %q %q", tc.raw, u.URL, u.Credentials, u.Auth, tc.url, tc.creds, tc.auth)
		}
	}
}

// fixedRand draws the placeholders of tests: every byte 0, so each random
// character is "a".
type fixedRand struct{}

func (fixedRand) Read(b []byte) (int, error) { clear(b); return len(b), nil }

func TestResolveNetworkExtras(t *testing.T) {
	key := "sk-real-key-0123456789"
	tests := []struct {
		name    string
		policy  string
		flags   Flags
		env     []string
		goos    string
		check   func(t *testing.T, p *plan.Plan, w *world)
		wantErr string
	}{
		{
			name:   "upstream from the environment, with NO_PROXY",
			policy: "[network]\nmode = \"allowlist\"\n",
			env:    []string{"HTTP_PROXY=http://u:pw@proxy.corp:3128", "NO_PROXY=localhost, .corp.internal"},
			check: func(t *testing.T, p *plan.Plan, w *world) {
				want := &plan.Upstream{URL: "http://proxy.corp:3128", Auth: "basic, user u", Origin: plan.Origin{Key: "env HTTP_PROXY"},
					NoProxy: []string{"localhost", ".corp.internal"}, Credentials: "u:pw"}
				if diff := cmp.Diff(want, p.Network.Upstream); diff != "" {
					t.Errorf("upstream (-want +got):\n%s", diff)
				}
			},
		},
		{
			name:   "HTTPS_PROXY before HTTP_PROXY",
			policy: "[network]\nmode = \"allowlist\"\n",
			env:    []string{"HTTP_PROXY=http://one:1", "HTTPS_PROXY=http://two:2"},
			check: func(t *testing.T, p *plan.Plan, w *world) {
				if p.Network.Upstream.URL != "http://two:2" {
					t.Errorf("upstream %s", p.Network.Upstream.URL)
				}
			},
		},
		{
			name:   "a policy's upstream wins, its password variable leaves the box",
			policy: "[network]\nmode = \"allowlist\"\nupstream = \"http://alice:${CORP_PASS}@proxy.corp:8080\"\n",
			env:    []string{"HTTPS_PROXY=http://other:1", "CORP_PASS=hunter2-long"},
			check: func(t *testing.T, p *plan.Plan, w *world) {
				u := p.Network.Upstream
				if u.URL != "http://proxy.corp:8080" || u.Credentials != "alice:hunter2-long" || u.Origin.Key != "network.upstream" {
					t.Errorf("upstream %+v", u)
				}
				for _, kv := range p.Environ {
					if strings.HasPrefix(kv, "CORP_PASS=") {
						t.Errorf("the box gets %s", kv)
					}
				}
				if !contains(p.Env.Removed, "CORP_PASS") {
					t.Errorf("removed %v, want CORP_PASS", p.Env.Removed)
				}
			},
		},
		{
			name:   "the upstream's credentials leave the box by value, whatever the variable",
			policy: "[network]\nmode = \"allowlist\"\n",
			env: []string{"HTTPS_PROXY=http://alice:pa%2Bss-word@proxy.corp:3128", "ftp_proxy=http://alice:pa%2Bss-word@proxy.corp:3128",
				"RSYNC_PROXY=alice:pa%2Bss-word@proxy.corp:3128", "npm_config_https_proxy=http://alice:pa%2Bss-word@proxy.corp:3128",
				"CORP_AUTH=Basic YWxpY2U6cGErc3Mtd29yZA==", "CORP_PW=pa+ss-word", "PROXY_NOTE=pa+ss-word", "OTHER=kept"},
			check: func(t *testing.T, p *plan.Plan, w *world) {
				if diff := cmp.Diff([]string{"RSYNC_PROXY:", "ftp_proxy", "npm_config_https_proxy"}, sorted(p.Network.ProxyVars)); diff != "" {
					t.Errorf("proxy variables (-want +got):\n%s", diff)
				}
				for _, kv := range p.Environ {
					if strings.Contains(kv, "pa+ss") || strings.Contains(kv, "pa%2Bss") || strings.Contains(kv, "YWxpY2U6cGErc3Mtd29yZA") {
						t.Errorf("the box gets %s", kv)
					}
				}
				for _, name := range []string{"CORP_AUTH", "CORP_PW", "PROXY_NOTE"} {
					if !contains(p.Env.Removed, name) {
						t.Errorf("removed %v, want %s", p.Env.Removed, name)
					}
				}
				if !contains(p.Environ, "OTHER=kept") {
					t.Errorf("environ %v, want OTHER=kept", p.Environ)
				}
				if diff := cmp.Diff([]string{"ftp_proxy=http://127.0.0.1:3128", "RSYNC_PROXY=127.0.0.1:3128", "npm_config_https_proxy=http://127.0.0.1:3128"},
					p.Network.ProxyVarsEnv("127.0.0.1:3128")); diff != "" {
					t.Errorf("ProxyVarsEnv (-want +got):\n%s", diff)
				}
			},
		},
		{
			name:   "mode none: the proxy's credentials stay out of the box, in any variable",
			policy: "[network]\nmode = \"none\"\n",
			env: []string{"HTTPS_PROXY=http://alice:pa%2Bss-word@proxy.corp:3128", "ftp_proxy=http://alice:pa%2Bss-word@proxy.corp:3128",
				"RSYNC_PROXY=alice:pa%2Bss-word@proxy.corp:3128", "npm_config_https_proxy=http://alice:pa%2Bss-word@proxy.corp:3128",
				"CORP_AUTH=Basic YWxpY2U6cGErc3Mtd29yZA==", "CORP_PW=pa+ss-word", "OTHER=kept"},
			check: func(t *testing.T, p *plan.Plan, w *world) {
				if p.Network.Upstream != nil {
					t.Errorf("upstream %+v in mode none", p.Network.Upstream)
				}
				for _, kv := range p.Environ {
					if strings.Contains(kv, "pa+ss") || strings.Contains(kv, "pa%2Bss") || strings.Contains(kv, "YWxpY2U6cGErc3Mtd29yZA") {
						t.Errorf("the box gets %s", kv)
					}
				}
				for _, name := range []string{"HTTPS_PROXY", "ftp_proxy", "RSYNC_PROXY", "npm_config_https_proxy", "CORP_AUTH", "CORP_PW"} {
					if !contains(p.Env.Removed, name) {
						t.Errorf("removed %v, want %s", p.Env.Removed, name)
					}
				}
				if !contains(p.Environ, "OTHER=kept") {
					t.Errorf("environ %v, want OTHER=kept", p.Environ)
				}
			},
		},
		{
			name:   "upstream none ignores the environment",
			policy: "[network]\nmode = \"allowlist\"\nupstream = \"none\"\n",
			env:    []string{"HTTPS_PROXY=http://proxy.corp:3128"},
			check: func(t *testing.T, p *plan.Plan, w *world) {
				if p.Network.Upstream != nil {
					t.Errorf("upstream %+v, want none", p.Network.Upstream)
				}
			},
		},
		{
			name:   "no upstream outside allowlist",
			policy: "[network]\nmode = \"none\"\n",
			env:    []string{"HTTPS_PROXY=http://proxy.corp:3128"},
			check: func(t *testing.T, p *plan.Plan, w *world) {
				if p.Network.Upstream != nil {
					t.Errorf("upstream %+v in mode none", p.Network.Upstream)
				}
			},
		},
		{
			name:    "a socks upstream in the environment is an error with the fix",
			policy:  "[network]\nmode = \"allowlist\"\n",
			env:     []string{"ALL_PROXY=socks5://proxy.corp:1080"},
			wantErr: `env ALL_PROXY: "socks5://proxy.corp:1080": only an http:// proxy can be the upstream (not socks5://); set [network] upstream = "http://host:port" for the proxy allowed hosts are reached through, or "none"`,
		},
		{
			name:   "published ports",
			policy: "[network]\nmode = \"none\"\npublish = [\"3000\", \"8080:80\"]\n",
			flags:  Flags{Publish: []string{"[::1]:9000:9000", "3000"}},
			check: func(t *testing.T, p *plan.Plan, w *world) {
				var got []string
				for _, pub := range p.Network.Publish {
					got = append(got, pub.String()+" "+pub.Origin.String())
				}
				want := []string{"127.0.0.1:3000 -> 3000 " + w.path("home/u/proj/.agentbox.toml") + ":4 network.publish[0]",
					"127.0.0.1:8080 -> 80 " + w.path("home/u/proj/.agentbox.toml") + ":4 network.publish[1]",
					"[::1]:9000 -> 9000 flag --publish"}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("publish (-want +got):\n%s", diff)
				}
			},
		},
		{
			name:    "a host port published twice",
			flags:   Flags{Network: "none", Publish: []string{"3000", "3000:4000"}},
			wantErr: `flag --publish: 127.0.0.1:3000 is published already, to box port 3000`,
		},
		{
			name:    "the proxy's port",
			flags:   Flags{Network: "allowlist", Publish: []string{"8000:3128"}},
			wantErr: `flag --publish: box port 3128 is the proxy's own port in the box`,
		},
		{
			name:    "a forward's port",
			flags:   Flags{Allow: []string{"localhost:5432"}, Publish: []string{"5432"}},
			wantErr: `flag --publish: box port 5432 is taken by the forward to localhost:5432`,
		},
		{
			name:  "publish with network open is a warning",
			flags: Flags{Publish: []string{"3000"}},
			check: func(t *testing.T, p *plan.Plan, w *world) {
				if len(p.Network.Publish) != 0 || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "not needed with network open") {
					t.Errorf("publish %v warnings %q", p.Network.Publish, p.Warnings)
				}
			},
		},
		{
			name:   "a secret from the environment: the box holds a placeholder as long",
			policy: "[network]\nallow = [\"api.test\"]\n[[network.secret]]\nenv = \"API_KEY\"\nhosts = [\"api.test\"]\n",
			env:    []string{"API_KEY=" + key},
			check: func(t *testing.T, p *plan.Plan, w *world) {
				s := p.Network.Secrets
				if len(s) != 1 || s[0].Value != key || s[0].Placeholder != "agentbox"+strings.Repeat("a", len(key)-8) {
					t.Fatalf("secrets %+v", s)
				}
				if got := getenv(p.Environ, "API_KEY"); got != s[0].Placeholder {
					t.Errorf("the box's API_KEY = %q, want the placeholder", got)
				}
				if diff := cmp.Diff([]string{"api.test"}, p.Network.Intercept); diff != "" {
					t.Errorf("intercept (-want +got):\n%s", diff)
				}
			},
		},
		{
			name:   "a secret's value in another variable, in any form, is not in the box",
			policy: "[network]\nallow = [\"api.test\"]\n[[network.secret]]\nenv = \"API_KEY\"\nhosts = [\"api.test\"]\n",
			env: []string{"API_KEY=" + key, "COPY=" + key, "HEADER=Bearer " + key, "B64=" + base64.StdEncoding.EncodeToString([]byte(key)),
				"OTHER=kept"},
			check: func(t *testing.T, p *plan.Plan, w *world) {
				for _, name := range []string{"COPY", "HEADER", "B64"} {
					if getenv(p.Environ, name) != "" || !contains(p.Env.Removed, name) {
						t.Errorf("%s: in the box %q, removed %v", name, getenv(p.Environ, name), p.Env.Removed)
					}
				}
				if getenv(p.Environ, "OTHER") != "kept" || getenv(p.Environ, "API_KEY") != p.Network.Secrets[0].Placeholder {
					t.Errorf("environ %v", p.Environ)
				}
			},
		},
		{
			name:   "a secret from a file: the file is hidden in the box",
			policy: "[network]\nallow = [\"api.test\"]\n[[network.secret]]\nenv = \"TOKEN\"\nfile = \"~/.token\"\nhosts = [\"api.test\", \"*.api.test\"]\n",
			check: func(t *testing.T, p *plan.Plan, w *world) {
				s := p.Network.Secrets
				if len(s) != 1 || s[0].Value != "file-token-0123456789" || s[0].File != w.path("home/u/.token") {
					t.Fatalf("secrets %+v", s)
				}
				if !contains(p.Denied(), w.path("home/u/.token")) {
					t.Errorf("denied %v, want the token file", p.Denied())
				}
				if getenv(p.Environ, "TOKEN") != s[0].Placeholder {
					t.Errorf("the box's TOKEN is not the placeholder")
				}
			},
		},
		{
			name:   "a secret whose host the allowlist refuses: a warning",
			policy: "[network]\nallow = [\"other.test\"]\n[[network.secret]]\nenv = \"API_KEY\"\nhosts = [\"api.test\"]\n",
			env:    []string{"API_KEY=" + key},
			check: func(t *testing.T, p *plan.Plan, w *world) {
				if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "SECRET API_KEY goes to api.test, which the allowlist refuses (no allow rule matches): add --allow api.test") {
					t.Errorf("warnings %q", p.Warnings)
				}
			},
		},
		{
			name:   "a secret that is not set: a warning",
			policy: "[network]\nallow = [\"api.test\"]\n[[network.secret]]\nenv = \"API_KEY\"\nhosts = [\"api.test\"]\n",
			check: func(t *testing.T, p *plan.Plan, w *world) {
				if len(p.Network.Secrets) != 0 || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "API_KEY") {
					t.Errorf("secrets %v warnings %q", p.Network.Secrets, p.Warnings)
				}
			},
		},
		{
			name:    "a secret outside allowlist",
			policy:  "[network]\nmode = \"open\"\n[[network.secret]]\nenv = \"API_KEY\"\nhosts = [\"api.test\"]\n",
			env:     []string{"API_KEY=" + key},
			wantErr: `network.secret[0]: a secret needs network mode allowlist (the proxy puts the real API_KEY in), but the network is "open"`,
		},
		{
			name:    "a short secret",
			policy:  "[network]\nallow = [\"api.test\"]\n[[network.secret]]\nenv = \"API_KEY\"\nhosts = [\"api.test\"]\n",
			env:     []string{"API_KEY=short"},
			wantErr: "the value of API_KEY is 5 characters long; a secret needs at least 16",
		},
		{
			name:    "a secret that would end a header",
			policy:  "[network]\nallow = [\"api.test\"]\n[[network.secret]]\nenv = \"API_KEY\"\nhosts = [\"api.test\"]\n",
			env:     []string{"API_KEY=0123456789abcdef\r\nX-Evil: 1"},
			wantErr: "the value of API_KEY holds a byte (0x0d) that cannot stand in a header field",
		},
		{
			name:    "a missing secret file",
			policy:  "[network]\nallow = [\"api.test\"]\n[[network.secret]]\nenv = \"T\"\nfile = \"missing\"\nhosts = [\"api.test\"]\n",
			wantErr: "network.secret[0].file: reading the value of T: open",
		},
		{
			name:   "request rules are intercepted",
			policy: "[network]\nallow = [\"GET gh.test/org/*\", \"plain.test\"]\ndeny = [\"POST *.api.test\"]\n",
			check: func(t *testing.T, p *plan.Plan, w *world) {
				if diff := cmp.Diff([]string{"GET gh.test/org/*", "POST *.api.test"}, p.Network.Intercept); diff != "" {
					t.Errorf("intercept (-want +got):\n%s", diff)
				}
			},
		},
		{
			name:    "no interception on Windows",
			goos:    "windows",
			policy:  "[network]\nallow = [\"GET gh.test/org/*\"]\n",
			wantErr: "the Windows backend does not install",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.write("home/u/.token", "file-token-0123456789\n")
			if tc.policy != "" {
				w.write("home/u/proj/.agentbox.toml", "version = 1\n"+tc.policy)
				w.trust("home/u/proj/.agentbox.toml")
			}
			w.setenv(tc.env...)
			if tc.goos == "windows" {
				// Only the network step matters here: resolve the
				// layers' network with a Linux world that says windows.
				layers, err := Load(w.env, tc.flags)
				if err != nil {
					t.Fatal(err)
				}
				r := &resolver{env: w.env, m: merge(layers), p: &plan.Plan{GOOS: "windows"}}
				r.env.GOOS = "windows"
				err = r.modes()
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			p, err := w.resolve(tc.flags, Options{Rand: fixedRand{}}, "true")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, p, w)
			// Nothing that JSON shows holds a secret.
			var buf bytes.Buffer
			if err := writeJSONPlan(&buf, p); err != nil {
				t.Fatal(err)
			}
			for _, s := range append([]string{key, "file-token", "hunter2", "u:pw"}, placeholders(p)...) {
				if strings.Contains(buf.String(), s) {
					t.Errorf("the plan's JSON shows %q", s)
				}
			}
		})
	}
}

func getenv(environ []string, name string) string {
	for _, kv := range environ {
		if k, v, _ := strings.Cut(kv, "="); k == name {
			return v
		}
	}
	return ""
}

func placeholders(p *plan.Plan) []string {
	var out []string
	for _, s := range p.Network.Secrets {
		out = append(out, s.Placeholder)
	}
	return out
}

func writeJSONPlan(w *bytes.Buffer, p *plan.Plan) error {
	data, err := json.Marshal(p)
	w.Write(data)
	return err
}
