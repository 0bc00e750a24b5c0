package netproxy

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseHost(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // canonical host; "" means an error
		err  string // part of the error
	}{
		{name: "name", in: "example.test", want: "example.test"},
		{name: "upper case", in: "EXAMPLE.Test", want: "example.test"},
		{name: "trailing dot", in: "EXAMPLE.test.", want: "example.test"},
		{name: "two trailing dots", in: "example.test..", err: "empty or over-long label"},
		{name: "underscore", in: "_dmarc.example.test", want: "_dmarc.example.test"},
		{name: "empty", in: "", err: "empty host"},
		{name: "only a dot", in: ".", err: "empty host"},
		{name: "leading dot", in: ".example.test", err: "empty or over-long label"},
		{name: "inner empty label", in: "a..test", err: "empty or over-long label"},
		{name: "label over 63", in: strings.Repeat("a", 64) + ".test", err: "empty or over-long label"},
		{name: "NUL", in: "example.test\x00.evil", err: `character '\x00'`},
		{name: "CR LF", in: "example.test\r\nX: y", err: `character '\r'`},
		{name: "LF", in: "example.test\n", err: `character '\n'`},
		{name: "space", in: "example.test evil", err: "character ' '"},
		{name: "tab", in: "example\t.test", err: `character '\t'`},
		{name: "DEL", in: "example\x7f.test", err: `character '\x7f'`},
		{name: "percent escape", in: "ex%61mple.test", err: "character '%'"},
		{name: "slash", in: "example.test/x", err: "character '/'"},
		{name: "userinfo", in: "a@b", err: "character '@'"},
		{name: "userinfo with allowed", in: "example.test@evil.test", err: "character '@'"},
		{name: "non-ASCII", in: "exämple.test", err: "character 'ä'"},
		{name: "fullwidth dot", in: "example。test", err: "character '。'"},
		{name: "wildcard star", in: "*.example.test", err: "character '*'"},
		{name: "backslash", in: `example.test\`, err: `character '\\'`},

		{name: "ipv4", in: "127.0.0.1", want: "127.0.0.1"},
		{name: "ipv4 trailing dot", in: "127.0.0.1.", want: "127.0.0.1"},
		{name: "ipv4 two parts", in: "127.1", want: "127.0.0.1"},
		{name: "ipv4 three parts", in: "10.1.257", want: "10.1.1.1"},
		{name: "ipv4 one decimal", in: "2130706433", want: "127.0.0.1"},
		{name: "ipv4 one hex", in: "0x7f000001", want: "127.0.0.1"},
		{name: "ipv4 hex upper", in: "0X7F000001", want: "127.0.0.1"},
		{name: "ipv4 hex part", in: "0x7f.0.0.1", want: "127.0.0.1"},
		{name: "ipv4 octal part", in: "0177.0.0.1", want: "127.0.0.1"},
		{name: "ipv4 octal zeros", in: "0177.00.000.01", want: "127.0.0.1"},
		{name: "ipv4 zero", in: "0", want: "0.0.0.0"},
		{name: "ipv4 part over 255", in: "256.0.0.1", err: "over 255"},
		{name: "ipv4 last part too large", in: "127.0.0.256", err: "too large"},
		{name: "ipv4 one part too large", in: "4294967296", err: "bad part"},
		{name: "ipv4 five parts", in: "1.2.3.4.5", err: "more than 4 parts"},
		{name: "ipv4 bad octal", in: "09.0.0.1", err: "bad part"},
		{name: "ipv4 bare 0x", in: "0x", err: "bad part"},
		{name: "name ending in number", in: "example.123", err: "bad part"},
		{name: "name ending in hex", in: "example.0x10", err: "bad part"},
		{name: "name with number inside", in: "123.example.test", want: "123.example.test"},

		{name: "ipv6", in: "::1", want: "::1"},
		{name: "ipv6 brackets", in: "[::1]", want: "::1"},
		{name: "ipv6 long form", in: "[0:0:0:0:0:0:0:1]", want: "::1"},
		{name: "ipv6 upper case", in: "[2001:DB8::A]", want: "2001:db8::a"},
		{name: "ipv4-mapped", in: "[::ffff:127.0.0.1]", want: "127.0.0.1"},
		{name: "ipv4-mapped hex", in: "::ffff:7f00:1", want: "127.0.0.1"},
		{name: "ipv6 zone", in: "[fe80::1%eth0]", err: "character '%'"},
		{name: "ipv6 zone escaped", in: "[fe80::1%25eth0]", err: "character '%'"},
		{name: "brackets around ipv4", in: "[127.0.0.1]", err: "brackets must hold an IPv6"},
		{name: "brackets around name", in: "[example.test]", err: "brackets must hold an IPv6"},
		{name: "unclosed bracket", in: "[::1", err: "brackets must hold an IPv6"},
		{name: "not ipv6", in: "example.test:80", err: "not an IPv6 address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := parseHost(tc.in)
			got, gotErr := h.String(), ""
			if err != nil {
				got, gotErr = "", err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseHost(%q) (-want +got):\n%s", tc.in, diff)
			}
			if tc.err != "" && !strings.Contains(gotErr, tc.err) {
				t.Errorf("parseHost(%q) error = %q, want it to contain %q", tc.in, gotErr, tc.err)
			}
			if tc.err == "" && gotErr != "" {
				t.Errorf("parseHost(%q) unexpected error %q", tc.in, gotErr)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name  string
		allow []string
		deny  []string
		err   string // "" means no error
	}{
		{name: "good entries", allow: []string{"example.test", "*.example.test", "example.test:443", "*.example.test:8443", "127.0.0.1", "127.0.0.1:3000", "::1", "[::1]", "[::1]:443", "localhost:3000", " spaced.test "}},
		{name: "empty", allow: []string{""}, err: `allow entry "": empty entry`},
		{name: "port only", allow: []string{":443"}, err: `allow entry ":443": entry needs a host`},
		{name: "bad port", allow: []string{"example.test:http"}, err: `allow entry "example.test:http": bad port "http"`},
		{name: "port zero", allow: []string{"example.test:0"}, err: "port 0 out of range"},
		{name: "port too big", allow: []string{"example.test:65536"}, err: "port 65536 out of range"},
		{name: "empty port", allow: []string{"example.test:"}, err: `bad port ""`},
		{name: "star alone", allow: []string{"*"}, err: `allow entry "*": host "*": character '*'`},
		{name: "star inside", allow: []string{"a.*.test"}, err: "character '*'"},
		{name: "star without dot", allow: []string{"*example.test"}, err: "character '*'"},
		{name: "wildcard address", allow: []string{"*.127.0.0.1"}, err: "a wildcard needs a domain name"},
		{name: "userinfo", allow: []string{"user@example.test"}, err: "character '@'"},
		{name: "url", allow: []string{"https://example.test"}, err: `allow entry "https://example.test": want a host, not a URL`},
		{name: "request rules", allow: []string{"GET example.test", "example.test/x", "POST example.test:8443/org/*", "GET [::1]:80/a/b", "PUT *.wild.test/v1/*", "GET example.test/"}},
		{name: "lower-case method", allow: []string{"get example.test"}, err: `"get" is not a method`},
		{name: "method alone", allow: []string{"GET /x"}, err: "needs a host"},
		{name: "dot segment", allow: []string{"example.test/org/../x"}, err: "no . or .. segments"},
		{name: "dot segment last", allow: []string{"example.test/org/."}, err: "no . or .. segments"},
		{name: "escape", allow: []string{"example.test/org%2F"}, err: "character '%'"},
		{name: "query", allow: []string{"example.test/x?y"}, err: "character '?'"},
		{name: "star inside path", allow: []string{"example.test/a/*/b"}, err: "only as the last segment"},
		{name: "star in a segment", allow: []string{"example.test/org*"}, err: "only as the last segment"},
		{name: "space in path", allow: []string{"GET example.test/a b"}, err: "character ' '"},
		{name: "path with URL", allow: []string{"GET https://example.test/x"}, err: "want a host, not a URL"},
		{name: "zone", allow: []string{"[fe80::1%lo]:80"}, err: "character '%'"},
		{name: "unclosed bracket", allow: []string{"[::1:80"}, err: "want host:port"},
		{name: "bad deny names deny", deny: []string{"bad host"}, err: `deny entry "bad host"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(tc.allow, tc.deny)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if tc.err == "" && got != "" || !strings.Contains(got, tc.err) {
				t.Errorf("Compile() error = %q, want it to contain %q", got, tc.err)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	rules, err := Compile(
		[]string{
			"example.test",
			"*.wild.test",
			"api.only443.test:443",
			"localhost:3000",
			"127.0.0.1:3001",
			"[::1]:3002",
			"10.0.0.1",
			"*.mixed.test",
			"exact.mixed.test",
		},
		[]string{
			"evil.wild.test",
			"*.deep.wild.test",
			"example.test:25",
		},
	)
	if err != nil {
		t.Fatal(err)
	}
	allow := func(rule string) Decision {
		return Decision{Allowed: true, Rule: rule, Reason: `matches allow rule "` + rule + `"`}
	}
	deny := func(rule string) Decision {
		return Decision{Rule: rule, Reason: `matches deny rule "` + rule + `"`}
	}
	none := Decision{Reason: "no allow rule matches"}
	tests := []struct {
		name string
		host string
		port int
		want Decision
	}{
		{name: "exact", host: "example.test", port: 443, want: allow("example.test")},
		{name: "exact any port", host: "example.test", port: 8080, want: allow("example.test")},
		{name: "exact upper case", host: "EXAMPLE.test", port: 443, want: allow("example.test")},
		{name: "exact trailing dot", host: "EXAMPLE.test.", port: 443, want: allow("example.test")},
		{name: "exact not subdomain", host: "www.example.test", port: 443, want: none},
		{name: "exact not suffix", host: "notexample.test", port: 443, want: none},
		{name: "exact not prefix", host: "example.test.evil", port: 443, want: none},
		{name: "wildcard subdomain", host: "a.wild.test", port: 443, want: allow("*.wild.test")},
		{name: "wildcard deep subdomain", host: "a.b.wild.test", port: 443, want: allow("*.wild.test")},
		{name: "wildcard not apex", host: "wild.test", port: 443, want: none},
		{name: "wildcard not lookalike", host: "evilwild.test", port: 443, want: none},
		{name: "wildcard not as label inside", host: "wild.test.evil.test", port: 443, want: none},
		{name: "port match", host: "api.only443.test", port: 443, want: allow("api.only443.test:443")},
		{name: "port mismatch", host: "api.only443.test", port: 80, want: none},
		{name: "deny wins over wildcard", host: "evil.wild.test", port: 443, want: deny("evil.wild.test")},
		{name: "deny wins upper case", host: "EVIL.wild.test.", port: 443, want: deny("evil.wild.test")},
		{name: "deny wildcard wins", host: "x.deep.wild.test", port: 443, want: deny("*.deep.wild.test")},
		{name: "deny wildcard not apex", host: "deep.wild.test", port: 443, want: allow("*.wild.test")},
		{name: "deny port wins", host: "example.test", port: 25, want: deny("example.test:25")},
		{name: "exact beats wildcard", host: "exact.mixed.test", port: 443, want: allow("exact.mixed.test")},
		{name: "wildcard after exact", host: "other.mixed.test", port: 443, want: allow("*.mixed.test")},

		{name: "localhost port", host: "localhost", port: 3000, want: allow("localhost:3000")},
		{name: "localhost other port", host: "localhost", port: 3001, want: none},
		{name: "loopback literal", host: "127.0.0.1", port: 3001, want: allow("127.0.0.1:3001")},
		{name: "127.1 is 127.0.0.1", host: "127.1", port: 3001, want: allow("127.0.0.1:3001")},
		{name: "127.1 is not localhost", host: "127.1", port: 3000, want: none},
		{name: "decimal is not localhost", host: "2130706433", port: 3000, want: none},
		{name: "decimal is 127.0.0.1", host: "2130706433", port: 3001, want: allow("127.0.0.1:3001")},
		{name: "hex is 127.0.0.1", host: "0x7f000001", port: 3001, want: allow("127.0.0.1:3001")},
		{name: "hex parts", host: "0x7f.0.0.1", port: 3001, want: allow("127.0.0.1:3001")},
		{name: "octal parts", host: "0177.0.0.1", port: 3001, want: allow("127.0.0.1:3001")},
		{name: "mapped is 127.0.0.1", host: "[::ffff:127.0.0.1]", port: 3001, want: allow("127.0.0.1:3001")},
		{name: "mapped is not localhost", host: "[::ffff:127.0.0.1]", port: 3000, want: none},
		{name: "ipv6 loopback", host: "[::1]", port: 3002, want: allow("[::1]:3002")},
		{name: "ipv6 loopback long", host: "0:0:0:0:0:0:0:1", port: 3002, want: allow("[::1]:3002")},
		{name: "ipv6 loopback other port", host: "[::1]", port: 3001, want: none},
		{name: "ipv6 is not ipv4 loopback", host: "[::1]", port: 3000, want: none},
		{name: "other loopback", host: "127.0.0.2", port: 3001, want: none},
		{name: "zero address", host: "0.0.0.0", port: 3001, want: none},
		{name: "zero as number", host: "0", port: 3000, want: none},
		{name: "private any port", host: "10.0.0.1", port: 22, want: allow("10.0.0.1")},
		{name: "private as number", host: "167772161", port: 22, want: allow("10.0.0.1")},
		{name: "address not a name", host: "10.0.0.2", port: 22, want: none},

		{name: "NUL", host: "example.test\x00", port: 443, want: Decision{Reason: `invalid host: host "example.test\x00": character '\x00' not allowed`}},
		{name: "CRLF", host: "example.test\r\n", port: 443, want: Decision{Reason: `invalid host: host "example.test\r\n": character '\r' not allowed`}},
		{name: "space", host: "example.test ", port: 443, want: Decision{Reason: `invalid host: host "example.test ": character ' ' not allowed`}},
		{name: "userinfo", host: "example.test@evil.test", port: 443, want: Decision{Reason: `invalid host: host "example.test@evil.test": character '@' not allowed`}},
		{name: "userinfo short", host: "a@b", port: 443, want: Decision{Reason: `invalid host: host "a@b": character '@' not allowed`}},
		{name: "zone", host: "[fe80::1%eth0]", port: 443, want: Decision{Reason: `invalid host: host "fe80::1%eth0": character '%' not allowed`}},
		{name: "port zero", host: "example.test", port: 0, want: Decision{Reason: "invalid port 0"}},
		{name: "port too big", host: "example.test", port: 65536, want: Decision{Reason: "invalid port 65536"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := rules.Check(tc.host, tc.port)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Check(%q, %d) (-want +got):\n%s", tc.host, tc.port, diff)
			}
		})
	}
}

func TestVet(t *testing.T) {
	rules, err := Compile([]string{"exact.test", "*.wild.test"}, []string{"192.0.2.66"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		host  string
		addrs []string
		want  Decision
	}{
		{name: "wildcard public", host: "a.wild.test", addrs: []string{"192.0.2.1", "2001:db8::1"},
			want: Decision{Allowed: true, Rule: "*.wild.test", Reason: `matches allow rule "*.wild.test"`}},
		{name: "wildcard loopback", host: "a.wild.test", addrs: []string{"192.0.2.1", "127.0.0.1"},
			want: Decision{Rule: "*.wild.test", Reason: "a.wild.test resolves to 127.0.0.1 (loopback), which a wildcard rule never reaches"}},
		{name: "wildcard mapped loopback", host: "a.wild.test", addrs: []string{"::ffff:127.0.0.1"},
			want: Decision{Rule: "*.wild.test", Reason: "a.wild.test resolves to 127.0.0.1 (loopback), which a wildcard rule never reaches"}},
		{name: "wildcard ipv6 loopback", host: "a.wild.test", addrs: []string{"::1"},
			want: Decision{Rule: "*.wild.test", Reason: "a.wild.test resolves to ::1 (loopback), which a wildcard rule never reaches"}},
		{name: "wildcard private", host: "a.wild.test", addrs: []string{"10.1.2.3"},
			want: Decision{Rule: "*.wild.test", Reason: "a.wild.test resolves to 10.1.2.3 (private), which a wildcard rule never reaches"}},
		{name: "wildcard cgnat", host: "a.wild.test", addrs: []string{"100.100.100.100"},
			want: Decision{Rule: "*.wild.test", Reason: "a.wild.test resolves to 100.100.100.100 (private), which a wildcard rule never reaches"}},
		{name: "wildcard ula", host: "a.wild.test", addrs: []string{"fd00::1"},
			want: Decision{Rule: "*.wild.test", Reason: "a.wild.test resolves to fd00::1 (private), which a wildcard rule never reaches"}},
		{name: "exact loopback", host: "exact.test", addrs: []string{"127.0.0.1"},
			want: Decision{Allowed: true, Rule: "exact.test", Reason: `matches allow rule "exact.test"`}},
		{name: "exact private", host: "exact.test", addrs: []string{"10.1.2.3", "fd00::1"},
			want: Decision{Allowed: true, Rule: "exact.test", Reason: `matches allow rule "exact.test"`}},
		{name: "exact unspecified", host: "exact.test", addrs: []string{"0.0.0.0"},
			want: Decision{Rule: "exact.test", Reason: "exact.test resolves to 0.0.0.0 (unspecified), which only an address rule reaches"}},
		{name: "exact zero network", host: "exact.test", addrs: []string{"0.1.2.3"},
			want: Decision{Rule: "exact.test", Reason: "exact.test resolves to 0.1.2.3 (unspecified), which only an address rule reaches"}},
		{name: "exact ipv6 unspecified", host: "exact.test", addrs: []string{"::"},
			want: Decision{Rule: "exact.test", Reason: "exact.test resolves to :: (unspecified), which only an address rule reaches"}},
		{name: "exact metadata", host: "exact.test", addrs: []string{"169.254.169.254"},
			want: Decision{Rule: "exact.test", Reason: "exact.test resolves to 169.254.169.254 (link-local), which only an address rule reaches"}},
		{name: "exact ipv6 link-local", host: "exact.test", addrs: []string{"fe80::1"},
			want: Decision{Rule: "exact.test", Reason: "exact.test resolves to fe80::1 (link-local), which only an address rule reaches"}},
		{name: "exact multicast", host: "exact.test", addrs: []string{"224.0.0.1"},
			want: Decision{Rule: "exact.test", Reason: "exact.test resolves to 224.0.0.1 (link-local), which only an address rule reaches"}},
		{name: "exact broadcast", host: "exact.test", addrs: []string{"255.255.255.255"},
			want: Decision{Rule: "exact.test", Reason: "exact.test resolves to 255.255.255.255 (multicast), which only an address rule reaches"}},
		{name: "denied address", host: "exact.test", addrs: []string{"192.0.2.1", "192.0.2.66"},
			want: Decision{Rule: "192.0.2.66", Reason: `exact.test resolves to 192.0.2.66, which matches deny rule "192.0.2.66"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, by := rules.check(tc.host, 443)
			if by == nil {
				t.Fatalf("%s is not allowed by name", tc.host)
			}
			var addrs []netip.Addr
			for _, a := range tc.addrs {
				addrs = append(addrs, netip.MustParseAddr(a).Unmap())
			}
			got := rules.vet(tc.host, 443, by, addrs)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("vet(%s, %v) (-want +got):\n%s", tc.host, tc.addrs, diff)
			}
		})
	}
}

func TestCheckRequest(t *testing.T) {
	rules, err := Compile(
		[]string{"GET gh.test/org/*", "POST gh.test/org/repo/issues", "api.test", "*.wild.test/v1/*", "PUT put.test"},
		[]string{"DELETE api.test", "api.test/admin/*"},
	)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host, method, path string
		allowed            bool
		reason             string
	}{
		{"gh.test", "GET", "/org/repo", true, `GET /org/repo matches allow rule "GET gh.test/org/*"`},
		{"gh.test", "GET", "/org/a/b/c", true, ""},
		{"gh.test", "GET", "/org/", false, "no allow rule matches GET /org/"},
		{"gh.test", "GET", "/org", false, ""},
		{"gh.test", "GET", "/organisation", false, ""},
		{"gh.test", "POST", "/org/repo", false, "no allow rule matches POST /org/repo"},
		{"gh.test", "POST", "/org/repo/issues", true, ""},
		{"gh.test", "POST", "/org/repo/issues/1", false, ""},
		{"gh.test", "get", "/org/repo", false, ""},
		{"api.test", "GET", "/anything", true, `GET /anything matches allow rule "api.test"`},
		{"api.test", "DELETE", "/x", false, `DELETE /x matches deny rule "DELETE api.test"`},
		{"api.test", "GET", "/admin/users", false, `GET /admin/users matches deny rule "api.test/admin/*"`},
		{"a.wild.test", "PATCH", "/v1/x", true, ""},
		{"wild.test", "GET", "/v1/x", false, ""},
		{"put.test", "PUT", "/", true, ""},
		{"put.test", "POST", "/", false, ""},
	}
	for _, tc := range tests {
		h, _ := parseHost(tc.host)
		d := rules.checkRequest(h, 443, tc.method, tc.path)
		if d.Allowed != tc.allowed || tc.reason != "" && d.Reason != tc.reason {
			t.Errorf("%s %s%s: %+v, want allowed %v %q", tc.method, tc.host, tc.path, d, tc.allowed, tc.reason)
		}
	}
	// The connection: a request rule allows it, a deny request rule does
	// not deny it (each request is checked instead).
	for _, tc := range []struct {
		host       string
		allowed    bool
		intercepts bool
	}{
		{"gh.test", true, true},
		{"api.test", true, true}, // a deny request rule is checked on each request
		{"a.wild.test", true, true},
		{"put.test", true, true},
		{"other.test", false, false},
	} {
		if d := rules.Check(tc.host, 443); d.Allowed != tc.allowed {
			t.Errorf("Check(%s) = %+v, want allowed %v", tc.host, d, tc.allowed)
		}
		if got := rules.Intercepts(tc.host, 443); got != tc.intercepts {
			t.Errorf("Intercepts(%s) = %v, want %v", tc.host, got, tc.intercepts)
		}
	}
	plain, _ := Compile([]string{"gh.test", "GET gh.test/org/*"}, nil)
	if plain.Intercepts("gh.test", 443) {
		t.Errorf("a plain allow rule allows every request: nothing to intercept")
	}
}
