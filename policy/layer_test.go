package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/plan"
)

const file = "/p/.agentbox.toml"

func TestParseBad(t *testing.T) {
	tests := []struct {
		name string
		toml string
		want string
	}{
		{"unclosed table bracket", "version = 1\n[filesystem\nwritable = []\n",
			file + ":2: malformed TOML: expected '.' or ']' to end table name, but got '\\n' instead"},
		{"unclosed string", "version = 1\n[workspace]\nid = \"abc\n",
			file + ":3: malformed TOML: strings cannot contain newlines"},
		{"unclosed array", "[filesystem]\ndeny = [\"a\",\n",
			file + ":2: malformed TOML: unexpected EOF; expected value"},
		{"bad escape", "[workspace]\nid = \"a\\qb\"\n",
			file + ":2: malformed TOML: invalid escape in string '\\q'"},
		{"table defined twice", "[sandbox]\nenforce = \"require\"\n[sandbox]\n",
			file + ":3: malformed TOML: Key 'sandbox' has already been defined."},
		{"unknown top-level key", "version = 1\nfoo = 1\n",
			file + ":2: foo: unknown key"},
		{"unknown table", "version = 1\n\n[filesystems]\nwritable = []\n",
			file + ":3: filesystems: unknown key"},
		{"typo in a nested key", "[filesystem]\nwriteable = []\n",
			file + ":2: filesystem.writeable: unknown key"},
		{"unknown key after a multi-line array", "[filesystem]\ndeny = [\n  \"a\",\n  \"b\",\n]\nbogus = 1\n",
			file + ":6: filesystem.bogus: unknown key"},
		{"unknown key in a provider", "[providers.x]\ncommands = [\"x\"]\nbogus = 1\n",
			file + ":3: providers.x.bogus: unknown key"},
		{"unknown dotted key", "sandbox.enforce = \"require\"\nsandbox.enforced = \"x\"\n",
			file + ":2: sandbox.enforced: unknown key"},
		{"enforce not a choice", "[sandbox]\nenforce = \"maybe\"\n",
			file + `:2: sandbox.enforce: "maybe" is not one of require, best-effort`},
		{"backend not a choice", "[sandbox]\nenforce = \"require\"\nbackend = \"docker\"\n",
			file + `:3: sandbox.backend: "docker" is not one of auto, bwrap, landlock, windows, seatbelt`},
		{"tmp mode not a choice", "[tmp]\nmode = \"shared\"\n",
			file + `:2: tmp.mode: "shared" is not one of workspace, private, host`},
		{"network mode not a choice", "[network]\nmode = \"closed\"\n",
			file + `:2: network.mode: "closed" is not one of open, none, allowlist`},
		{"env mode not a choice", "[env]\nmode = \"empty\"\n",
			file + `:2: env.mode: "empty" is not one of inherit, clean`},
		{"enforce empty", "[sandbox]\nenforce = \"\"\n",
			file + `:2: sandbox.enforce: "" is not one of require, best-effort`},
		{"bad memory size", "[limits]\nmemory = \"8XB\"\n",
			file + `:2: limits.memory: "8XB": want a size such as "512MiB" or "8GiB"`},
		{"zero memory size", "[limits]\nmemory = \"0GiB\"\n",
			file + `:2: limits.memory: "0GiB": want a size such as "512MiB" or "8GiB"`},
		{"negative file size", "[limits]\nfile_size = \"-1M\"\n",
			file + `:2: limits.file_size: "-1M": want a size such as "512MiB" or "8GiB"`},
		{"bad cpu time unit", "[limits]\ncpu_time = \"2y\"\n",
			file + `:2: limits.cpu_time: "2y": want a duration such as "90s", "30m", "2h" or "1d"`},
		{"cpu time without a number", "[limits]\ncpu_time = \"h\"\n",
			file + `:2: limits.cpu_time: "h": want a duration such as "90s", "30m", "2h" or "1d"`},
		{"negative processes", "[limits]\nprocesses = -1\n",
			file + `:2: limits.processes: "-1": want a whole number, 0 for unlimited`},
		{"negative open files", "[limits]\nopen_files = -5\n",
			file + `:2: limits.open_files: "-5": want a whole number, 0 for unlimited`},
		{"protect depth is gone", "[filesystem]\nprotect_depth = 4\n",
			file + `:2: filesystem.protect_depth: no longer exists: git repositories and control files are found at any depth; filesystem.scan_limit bounds the search`},
		{"scan limit too small", "[filesystem]\nscan_limit = 10\n",
			file + `:2: filesystem.scan_limit: "10": want a number of folders from 1000 to 1000000000`},
		{"scan limit negative", "[filesystem]\nscan_limit = -1\n",
			file + `:2: filesystem.scan_limit: "-1": want a number of folders from 1000 to 1000000000`},
		{"workspace id climbs", "[workspace]\nid = \"../x\"\n",
			file + `:2: workspace.id: "../x": an id cannot start with a dot`},
		{"workspace id with a slash", "[workspace]\nid = \"a/b\"\n",
			file + `:2: workspace.id: "a/b": an id may hold only letters, digits, '-', '_' and '.'`},
		{"workspace id hidden", "[workspace]\nid = \".hidden\"\n",
			file + `:2: workspace.id: ".hidden": an id cannot start with a dot`},
		{"workspace id dot", "[workspace]\nid = \".\"\n",
			file + `:2: workspace.id: ".": an id cannot start with a dot`},
		{"workspace id with a space", "[workspace]\nid = \"my work\"\n",
			file + `:2: workspace.id: "my work": an id may hold only letters, digits, '-', '_' and '.'`},
		{"workspace id too long", "[workspace]\nid = \"" + strings.Repeat("a", 129) + "\"\n",
			file + `:2: workspace.id: "` + strings.Repeat("a", 129) + `": an id is at most 128 characters`},
		{"task with a slash", "[workspace]\nid = \"w\"\ntask = \"a/b\"\n",
			file + `:3: workspace.task: "a/b": an id may hold only letters, digits, '-', '_' and '.'`},
		{"version 2", "version = 2\n",
			file + ":1: version: unsupported version 2 (this agentbox reads version 1)"},
		{"version 0", "# first\nversion = 0\n",
			file + ":2: version: unsupported version 0 (this agentbox reads version 1)"},
		{"env.set name starts with a digit", "[env.set]\n\"1A\" = \"x\"\n",
			file + `:2: env.set.1A: "1A" is not a valid variable name`},
		{"env.set name with a dash, inline table", "[env]\nmode = \"inherit\"\nset = { \"A-B\" = \"x\" }\n",
			file + `:3: env.set.A-B: "A-B" is not a valid variable name`},
		{"string instead of a list", "[filesystem]\nwritable = \"x\"\n",
			file + ":2: filesystem.writable: wrong type: TOML value has type string; want a list"},
		{"number instead of a string", "[sandbox]\nenforce = 3\n",
			file + ":2: sandbox.enforce: wrong type: TOML value has type int64; want a string"},
		{"number in a list of strings", "[filesystem]\nwritable = [1]\n",
			file + ":2: filesystem.writable: wrong type: TOML value has type int64; want a string"},
		{"bool instead of a string", "version = 1\n[tmp]\nmode = true\n",
			file + ":3: tmp.mode: wrong type: TOML value has type bool; want a string"},
		{"number as an env.set value", "[env.set]\nA = 1\n",
			file + ":2: env.set.A: wrong type: TOML value has type int64; want a string"},
		{"env.set empty name", "[env.set]\n\"\" = \"x\"\n",
			file + `:2: env.set.: "" is not a valid variable name`},
		{"publish not a port", "[network]\npublish = [\"3000\", \"http\"]\n",
			file + `:2: network.publish[1]: "http": bad port "http" (want PORT, PORT:BOXPORT or ADDR:PORT:BOXPORT)`},
		{"publish port zero", "[network]\npublish = [\"0:80\"]\n",
			file + `:2: network.publish[0]: "0:80": bad port "0" (want PORT, PORT:BOXPORT or ADDR:PORT:BOXPORT)`},
		{"publish address a name", "[network]\npublish = [\"example.com:80:80\"]\n",
			file + `:2: network.publish[0]: "example.com:80:80": the address must be an IPv4 address, [an IPv6 one] or localhost (want PORT, PORT:BOXPORT or ADDR:PORT:BOXPORT)`},
		{"secret without hosts", "[[network.secret]]\nenv = \"API_KEY\"\n",
			file + `:1: network.secret[0]: hosts: empty: name the hosts API_KEY may be sent to`},
		{"second secret bad env", "[[network.secret]]\nenv = \"A_KEY\"\nhosts = [\"a.test\"]\n\n[[network.secret]]\nenv = \"B-KEY\"\nhosts = [\"b.test\"]\n",
			file + `:5: network.secret[1]: env: "B-KEY" is not a variable name (the variable the box finds the placeholder in)`},
		{"secret host is a request rule", "[[network.secret]]\nenv = \"K\"\nhosts = [\"POST a.test/x\"]\n",
			file + `:3: network.secret[0].hosts[0]: "POST a.test/x": a host, not a request rule`},
		{"secret host a URL", "[[network.secret]]\nenv = \"K\"\nhosts = [\"https://a.test\"]\n",
			file + `:3: network.secret[0].hosts[0]: "https://a.test": want a host, not a URL`},
		{"unknown key in a secret", "[[network.secret]]\nenv = \"K\"\nhosts = [\"a.test\"]\nvalue = \"x\"\n",
			file + ":4: network.secret.value: unknown key"},
		{"upstream not a string", "[network]\nupstream = 3128\n",
			file + ":2: network.upstream: wrong type: TOML value has type int64; want a string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Parse("project", file, []byte(tc.toml))
			if err == nil {
				t.Fatalf("Parse succeeded with %+v, want error %q", l, tc.want)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if !errors.Is(err, ErrPolicy) {
				t.Errorf("error %v is not ErrPolicy", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q spans more than one line", err)
			}
		})
	}
}

// TestParseWrongType checks that a value of the wrong type is refused and
// that the message names the file, the line and the key. The exact wording
// of these is checked in TestParseBad where it is settled.
func TestParseWrongType(t *testing.T) {
	tests := []struct {
		name string
		toml string
		line string
		key  string
	}{
		{"string instead of a number", "[limits]\nprocesses = \"many\"\n", "2", "limits.processes"},
		{"float instead of an integer", "[limits]\nopen_files = 1.5\n", "2", "limits.open_files"},
		{"string instead of a bool", "[providers.x]\nsandbox = \"yes\"\n", "2", "providers.x.sandbox"},
		{"string instead of the version", "version = \"1\"\n", "1", "version"},
		{"number instead of a table", "sandbox = 1\n", "1", "sandbox"},
		{"number in a multi-line list", "[filesystem]\ndeny = [\n  \"a\",\n  3,\n]\n", "2", "filesystem.deny"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("project", file, []byte(tc.toml))
			if err == nil {
				t.Fatal("Parse succeeded, want a type error")
			}
			msg := err.Error()
			prefix := file + ":" + tc.line + ": " + tc.key + ": wrong type: "
			if !strings.HasPrefix(msg, prefix) || strings.Contains(msg, "\n") {
				t.Errorf("error %q does not start with %q", msg, prefix)
			}
			if !errors.Is(err, ErrPolicy) {
				t.Errorf("error %v is not ErrPolicy", err)
			}
		})
	}
}

func TestParseOrigins(t *testing.T) {
	const doc = `version = 1
# deny = ["not a key"]

[sandbox]
enforce = "best-effort" # = a comment with "quotes" and # marks

[filesystem]
writable = ["src", "/abs"]
deny = [
  "~/.aws",
  "a#b", # the # inside the string is not a comment
  'C:\', "x=y",
]
scan_limit = 20000

[workspace]
id = "w1"

[limits]
memory = "1GiB"

[env.set]
FOO = "bar # not a comment"

[providers.mytool]
commands = ["mytool"]
writable = ["~/.mytool"]
sandbox = true
`
	l, err := Parse("project", "/p/.agentbox.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	o := func(line int, key string) plan.Origin {
		return plan.Origin{File: "/p/.agentbox.toml", Line: line, Key: key}
	}
	wantScalars := map[string]Entry{
		"sandbox.enforce":       {Value: "best-effort", Origin: o(5, "sandbox.enforce"), Base: "/p"},
		"filesystem.scan_limit": {Value: "20000", Origin: o(14, "filesystem.scan_limit"), Base: "/p"},
		"workspace.id":          {Value: "w1", Origin: o(17, "workspace.id"), Base: "/p"},
		"limits.memory":         {Value: "1GiB", Origin: o(20, "limits.memory"), Base: "/p"},
	}
	if diff := cmp.Diff(wantScalars, l.Scalars); diff != "" {
		t.Errorf("scalars (-want +got):\n%s", diff)
	}
	wantLists := map[string][]Entry{
		"filesystem.writable": {
			{Value: "src", Origin: o(8, "filesystem.writable[0]"), Base: "/p"},
			{Value: "/abs", Origin: o(8, "filesystem.writable[1]"), Base: "/p"},
		},
		"filesystem.deny": {
			{Value: "~/.aws", Origin: o(10, "filesystem.deny[0]"), Base: "/p"},
			{Value: "a#b", Origin: o(11, "filesystem.deny[1]"), Base: "/p"},
			{Value: `C:\`, Origin: o(12, "filesystem.deny[2]"), Base: "/p"},
			{Value: "x=y", Origin: o(12, "filesystem.deny[3]"), Base: "/p"},
		},
	}
	if diff := cmp.Diff(wantLists, l.Lists); diff != "" {
		t.Errorf("lists (-want +got):\n%s", diff)
	}
	wantEnv := map[string]Entry{"FOO": {Value: "bar # not a comment", Origin: o(23, "env.set.FOO")}}
	if diff := cmp.Diff(wantEnv, l.EnvSet); diff != "" {
		t.Errorf("env.set (-want +got):\n%s", diff)
	}
	wantProviders := []ProviderDecl{{
		Name: "mytool", Commands: []string{"mytool"}, Sandbox: true, Origin: o(25, "providers.mytool"),
		Writable: []Entry{{Value: "~/.mytool", Origin: o(27, "providers.mytool.writable[0]"), Base: "/p"}},
	}}
	if diff := cmp.Diff(wantProviders, l.Providers); diff != "" {
		t.Errorf("providers (-want +got):\n%s", diff)
	}
	if l.Name != "project" || l.File != "/p/.agentbox.toml" || l.Status != "loaded" {
		t.Errorf("layer is %q %q %q, want project /p/.agentbox.toml loaded", l.Name, l.File, l.Status)
	}
}

// TestParseEmpty checks that an empty file and one with only version set
// nothing: a missing key never overrides an earlier layer.
func TestParseEmpty(t *testing.T) {
	for _, doc := range []string{"", "version = 1\n", "# only a comment\n", "[sandbox]\n[filesystem]\n"} {
		l, err := Parse("user", "/c.toml", []byte(doc))
		if err != nil {
			t.Fatalf("Parse(%q): %v", doc, err)
		}
		if len(l.Scalars)+len(l.Lists)+len(l.EnvSet)+len(l.Providers) != 0 {
			t.Errorf("Parse(%q) set %v %v %v %v, want nothing", doc, l.Scalars, l.Lists, l.EnvSet, l.Providers)
		}
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    uint64
		wantErr bool
	}{
		{"", 0, false},
		{"4096", 4096, false},
		{"512MiB", 512 << 20, false},
		{"8GiB", 8 << 30, false},
		{"1TiB", 1 << 40, false},
		{"2KiB", 2048, false},
		{"1KB", 1000, false},
		{"3MB", 3000000, false},
		{"1GB", 1000000000, false},
		{"1K", 1024, false},
		{"1M", 1 << 20, false},
		{"1G", 1 << 30, false},
		{"10B", 10, false},
		{"8 GiB", 8 << 30, false},
		{"0", 0, true},
		{"-1", 0, true},
		{"GiB", 0, true},
		{"1.5GiB", 0, true},
		{"8XB", 0, true},
		{"8gib", 0, true},
		{"99999999999TiB", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSize(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseSize(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseSize(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    uint64
		wantErr bool
	}{
		{"", 0, false},
		{"90s", 90, false},
		{"30m", 1800, false},
		{"2h", 7200, false},
		{"1d", 86400, false},
		{"0s", 0, true},
		{"90", 0, true},
		{"s", 0, true},
		{"1.5h", 0, true},
		{"-1h", 0, true},
		{"2w", 0, true},
		{"1h30m", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDuration(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseDuration(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseDuration(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}
