package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPositions(t *testing.T) {
	tests := []struct {
		name string
		toml string
		want keyLines
	}{
		{"empty", "", keyLines{}},
		{"top-level keys", "version = 1\n\nfoo = \"x\"\n",
			keyLines{"version": 1, "foo": 3}},
		{"tables", "[sandbox]\nenforce = \"require\"\n\n[filesystem]\nscan_limit = 4\n",
			keyLines{"sandbox": 1, "sandbox.enforce": 2, "filesystem": 4, "filesystem.scan_limit": 5}},
		{"table header with spaces", "[ filesystem ]\n  scan_limit=4\n",
			keyLines{"filesystem": 1, "filesystem.scan_limit": 2}},
		{"sub-table", "[env.set]\nFOO = \"1\"\n",
			keyLines{"env.set": 1, "env.set.FOO": 2}},
		{"dotted key at top level", "sandbox.enforce = \"require\"\nfilesystem.deny = [\"a\"]\n",
			keyLines{"sandbox.enforce": 1, "filesystem.deny": 2, "filesystem.deny[0]": 2}},
		{"dotted key in a table", "[env]\nset.FOO = \"1\"\n",
			keyLines{"env": 1, "env.set.FOO": 2}},
		{"dotted key with spaces", "[env]\nset . FOO = \"1\"\n",
			keyLines{"env": 1, "env.set.FOO": 2}},
		{"quoted keys", "[env.set]\n\"MY_VAR\" = \"1\"\n'LIT' = \"2\"\n",
			keyLines{"env.set": 1, "env.set.MY_VAR": 2, "env.set.LIT": 3}},
		{"quoted table names", "[providers.\"my-tool\"]\ncommands = []\n[ 'providers' . 'b' ]\nsandbox = true\n",
			keyLines{"providers.my-tool": 1, "providers.my-tool.commands": 2, "providers.b": 3, "providers.b.sandbox": 4}},
		{"quoted key holding a space", "[providers.\"my tool\"]\nsandbox = true\n",
			keyLines{"providers.my tool": 1, "providers.my tool.sandbox": 2}},
		{"one-line array", "[filesystem]\ndeny = [\"a\", 'b', \"c\"]\n",
			keyLines{"filesystem": 1, "filesystem.deny": 2, "filesystem.deny[0]": 2, "filesystem.deny[1]": 2, "filesystem.deny[2]": 2}},
		{"empty array", "[filesystem]\ndeny = []\nwritable = [\n]\nread_only = [\"x\"]\n",
			keyLines{"filesystem": 1, "filesystem.deny": 2, "filesystem.writable": 3, "filesystem.read_only": 5, "filesystem.read_only[0]": 5}},
		{"multi-line array", "[filesystem]\ndeny = [\n  \"a\",\n  \"b\", \"c\",\n\n  \"d\"]\nscan_limit = 2\n",
			keyLines{"filesystem": 1, "filesystem.deny": 2, "filesystem.deny[0]": 3,
				"filesystem.deny[1]": 4, "filesystem.deny[2]": 4, "filesystem.deny[3]": 6, "filesystem.scan_limit": 7}},
		{"array element on the key line and after", "deny = [\"a\",\n  \"b\"]\nx = 1\n",
			keyLines{"deny": 1, "deny[0]": 1, "deny[1]": 2, "x": 3}},
		{"comments in a multi-line array", "deny = [ # \"not\" an element, nor ] this\n  \"a\", # [ \"b\" ]\n  # \"c\",\n  \"d\",\n]\nx = 1\n",
			keyLines{"deny": 1, "deny[0]": 2, "deny[1]": 4, "x": 6}},
		{"brackets and commas inside strings", "deny = [\"a]\", \"[b\", \"c,d\"]\nx = 1\n",
			keyLines{"deny": 1, "deny[0]": 1, "deny[1]": 1, "deny[2]": 1, "x": 2}},
		{"escaped quote in a string", "deny = [\"a\\\"]\", \"b\"]\nx = 1\n",
			keyLines{"deny": 1, "deny[0]": 1, "deny[1]": 1, "x": 2}},
		{"backslash ends a literal string", "deny = ['C:\\', 'D:\\']\nx = 1\n",
			keyLines{"deny": 1, "deny[0]": 1, "deny[1]": 1, "x": 2}},
		{"comment lines holding = and [", "# a = b\n# [table]\nx = 1\n  # y = 2\n",
			keyLines{"x": 3}},
		{"= and # inside a string", "[env.set]\nA = \"b = c # d\"  # real comment = x\nB = '#'\n",
			keyLines{"env.set": 1, "env.set.A": 2, "env.set.B": 3}},
		{"comment after a table header", "[sandbox] # [filesystem]\nenforce = \"require\"\n",
			keyLines{"sandbox": 1, "sandbox.enforce": 2}},
		{"inline table", "[env]\nset = { A = \"1\", B = \"2\" }\nmode = \"clean\"\n",
			keyLines{"env": 1, "env.set": 2, "env.mode": 3}},
		{"array of tables", "[[x]]\na = 1\n[[x]]\nb = 2\na = 3\n",
			keyLines{"x": 1, "x.a": 2, "x.b": 4, "x[0]": 1, "x[0].a": 2, "x[1]": 3, "x[1].b": 4, "x[1].a": 5}},
		{"windows line endings", "[sandbox]\r\nenforce = \"require\"\r\n",
			keyLines{"sandbox": 1, "sandbox.enforce": 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := positions([]byte(tc.toml))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("positions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKeyLinesLine(t *testing.T) {
	k := keyLines{"filesystem": 3, "filesystem.deny": 5, "filesystem.deny[0]": 6, "env.set": 10, "version": 1}
	tests := []struct {
		key  string
		want int
	}{
		{"version", 1},
		{"filesystem.deny[0]", 6},
		{"filesystem.deny[7]", 5},       // an element not found: the key's line
		{"filesystem.deny", 5},          // the key itself
		{"filesystem.writable", 3},      // a key not found: its table's line
		{"filesystem.writable[2]", 3},   // and through an element
		{"env.set.FOO", 10},             // a key of an inline table: the table's line
		{"providers.x.writable[0]", 0},  // nothing known
		{"", 0},                         // nothing asked
		{"nothing", 0},                  // a top-level key not found
		{"filesystem.deny[0].extra", 6}, // deeper than anything written
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, k.line(tc.key)); diff != "" {
				t.Errorf("line(%q) (-want +got):\n%s", tc.key, diff)
			}
		})
	}
}
