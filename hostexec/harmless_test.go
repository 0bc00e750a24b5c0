package hostexec

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"go.yaml.in/yaml/v3"
)

func TestYarnrcYMLHarmless(t *testing.T) {
	cases := []struct {
		name, in string
		want     bool
	}{
		{"empty", "", true},
		{"comments only", "# nothing\n", true},
		{"linker and telemetry", "nodeLinker: node-modules\nenableTelemetry: false\n", true},
		{"yarnPath", "yarnPath: .yarn/releases/evil.cjs\n", false},
		{"yarnPath on a continuation line", "nodeLinker: node-modules\nyarnPath:\n  .yarn/evil.cjs\n", false},
		{"flow mapping", "{nodeLinker: pnp, yarnPath: evil.cjs}\n", false},
		{"double-quoted key", "\"yarnPath\": evil.cjs\n", false},
		{"escaped key", "\"\\x79arnPath\": evil.cjs\n", false},
		{"single-quoted key", "'yarnPath': evil.cjs\n", false},
		{"explicit key", "? yarnPath\n: evil.cjs\n", false},
		{"block scalar", "yarnPath: |\n  evil.cjs\n", false},
		{"tagged key", "!!str yarnPath: evil.cjs\n", false},
		{"merge key", "base: &b {yarnPath: evil.cjs}\n<<: *b\n", false},
		{"plugins", "plugins:\n  - path: evil.cjs\n", false},
		{"injectEnvironmentFiles", "injectEnvironmentFiles: [.env.evil]\n", false},
		{"a registry", "npmRegistryServer: http://evil.example\n", false},
		{"an unknown setting", "somethingNew: x\n", false},
		{"duplicate key", "nodeLinker: pnp\nnodeLinker: node-modules\n", false},
		{"two documents", "nodeLinker: pnp\n---\nyarnPath: evil.cjs\n", false},
		{"not YAML", "nodeLinker: [\n", false},
		{"a list at the top", "- yarnPath\n", false},
		{"JSON", `{"nodeLinker": "pnp"}`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := YarnrcYMLHarmless([]byte(tc.in)); got != tc.want {
				t.Errorf("YarnrcYMLHarmless(%q) = %v, want %v", tc.in, got, tc.want)
			}
			if got := IsHarmless(".yarnrc.yml", []byte(tc.in)); got != tc.want {
				t.Errorf("IsHarmless(.yarnrc.yml, %q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestYarnrcHarmless(t *testing.T) {
	cases := []struct {
		name, in string
		want     bool
	}{
		{"timeout", "network-timeout 600000\n# c\n", true},
		{"quoted value", "save-prefix \"~\"\n", true},
		{"yarn-path", "yarn-path \"./evil.js\"\n", false},
		{"quoted key", "\"yarn-path\" ./evil.js\n", false},
		{"indented", "  yarn-path ./evil.js\n", false},
		{"flag", "--install.ignore-scripts false\n", false},
		{"registry", "registry \"http://evil.example\"\n", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsHarmless(".yarnrc", []byte(tc.in)); got != tc.want {
				t.Errorf("IsHarmless(.yarnrc, %q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestRustToolchainHarmless(t *testing.T) {
	cases := []struct {
		name, file, in string
		want           bool
	}{
		{"legacy channel", "rust-toolchain", "stable\n", true},
		{"legacy dated", "rust-toolchain", "nightly-2024-01-01\n", true},
		{"legacy path", "rust-toolchain", "/opt/evil\n", false},
		{"legacy file read as TOML", "rust-toolchain", "[toolchain]\npath = \"evil\"\n", false},
		{"legacy file with a TOML channel", "rust-toolchain", "[toolchain]\nchannel = \"1.80.0\"\n", true},
		{"legacy two lines", "rust-toolchain", "stable\nbeta\n", false},
		{"toml channel", "rust-toolchain.toml", "[toolchain]\nchannel = \"stable\"\ncomponents = [\"rustfmt\", \"clippy\"]\ntargets = [\"wasm32-unknown-unknown\"]\nprofile = \"minimal\"\n", true},
		{"toml path", "rust-toolchain.toml", "[toolchain]\npath = \"/x\"\n", false},
		{"toml quoted path key", "rust-toolchain.toml", "[toolchain]\n\"path\" = \"/x\"\n", false},
		{"toml dotted path key", "rust-toolchain.toml", "toolchain.path = \"/x\"\n", false},
		{"toml channel with a path", "rust-toolchain.toml", "[toolchain]\nchannel = \"../x\"\n", false},
		{"toml unknown key", "rust-toolchain.toml", "[toolchain]\nchannel = \"stable\"\nnew = 1\n", false},
		{"toml another table", "rust-toolchain.toml", "[other]\n", false},
		{"not TOML", "rust-toolchain.toml", "[toolchain\n", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsHarmless(tc.file, []byte(tc.in)); got != tc.want {
				t.Errorf("IsHarmless(%s, %q) = %v, want %v", tc.file, tc.in, got, tc.want)
			}
		})
	}
}

// TestParseConfigCommentAfterName: git refuses "name # comment" (a bad
// config line), so such a config is not plain.
func TestParseConfigCommentAfterName(t *testing.T) {
	for _, in := range []string{"[core]\n\tbare # c\n", "[core]\n\tbare ;c\n", "[core]\n\tbare\r"} {
		if ParseConfig([]byte(in)).Plain {
			t.Errorf("%q is plain, but git refuses it", in)
		}
		if out, _, changed := Sanitize([]byte(in), nil); !changed {
			t.Errorf("%q kept as it is: %q", in, out)
		}
	}
}

// gitList is what real git reads from a config file (git config -f FILE
// --list -z): name=value, or the name alone for a boolean; ok is false
// when git refuses the file.
func gitList(t testing.TB, dir string, data []byte) ([]string, bool) {
	f := filepath.Join(dir, "config")
	if err := os.WriteFile(f, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "config", "-f", f, "--list", "-z")
	cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	raw, err := cmd.Output()
	if err != nil {
		return nil, false
	}
	var out []string
	for _, e := range strings.Split(string(raw), "\x00") {
		if e == "" {
			continue
		}
		out = append(out, strings.Replace(e, "\n", "=", 1))
	}
	return out, true
}

// FuzzParseConfigAsGit: a config ParseConfig calls plain is one git reads
// exactly as ParseConfig does (git config -f FILE --list -z is the
// oracle): the same variables, in order, with the same values.
func FuzzParseConfigAsGit(f *testing.F) {
	if _, err := exec.LookPath("git"); err != nil {
		f.Skip("git is not installed")
	}
	for _, s := range []string{
		"[core]\n\tbare = false\n", "[core]\n\tbare # c\n", "[a \"B c\"]\n\tk = \"x ; y\" # z\n", "[a]\n\tk\n\tj = \n",
		"[a]\n\tk = a\\\\b\\\"c\\td\n", "[a.b]\n\tc = d\n", "[a] b = c\n", "[a]\n\tb = c\\\nd\n", "[a]\r\n\tb = c\r\n",
		"[a]\n\tb = \"\n", "[x-y]\n\tz-1 = 2 ; c\n", "[a]\n\tb\r\n", "[a]\n\tb = c\r", "#c\n;d\n\n[a]\n\tb=1",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		pc := ParseConfig(data)
		if !pc.Plain {
			return
		}
		got, ok := gitList(t, dir, data)
		if !ok {
			t.Fatalf("plain, but git refuses it: %q", data)
		}
		var want []string
		for _, v := range pc.Vars {
			if v.Bool {
				want = append(want, v.Name())
			} else {
				want = append(want, v.Name()+"="+v.Value)
			}
		}
		if strings.Join(want, "\x00") != strings.Join(got, "\x00") {
			t.Fatalf("git reads %q as %q, ParseConfig as %q", data, got, want)
		}
	})
}

// FuzzYarnrcYMLHarmless: a .yarnrc.yml judged harmless decodes (YAML's own
// reading, as a map) to safe keys only, and names no yarnPath or plugin.
func FuzzYarnrcYMLHarmless(f *testing.F) {
	for _, s := range []string{
		"nodeLinker: node-modules\n", "yarnPath: x\n", "{nodeLinker: pnp, yarnPath: x}\n", "\"\\x79arnPath\": x\n",
		"? yarnPath\n: x\n", "yarnPath: |\n  x\n", "a: &a {yarnPath: x}\n<<: *a\n", "nodeLinker: pnp\n---\nyarnPath: x\n",
		"!!str yarnPath: x\n", "nodeLinker:\n  yarnPath: x\n", "logFilters:\n  - code: YN0002\n    level: discard\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !YarnrcYMLHarmless(data) {
			return
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var doc map[string]any
			if err := dec.Decode(&doc); err != nil {
				break
			}
			for k := range doc {
				if !yarnSafeKeys[k] {
					t.Fatalf("harmless, but YAML reads key %q: %q", k, data)
				}
			}
		}
		if v := yarnValues(data); len(v) > 0 {
			t.Fatalf("harmless, but it names %q: %q", v, data)
		}
	})
}

// FuzzRustToolchainHarmless: a rust-toolchain judged harmless is, as
// rustup reads it, a channel name or TOML with no path.
func FuzzRustToolchainHarmless(f *testing.F) {
	for _, s := range []string{"stable\n", "[toolchain]\npath = \"x\"\n", "[toolchain]\nchannel = \"1.80\"\n", "toolchain.path = \"/x\"\n", "/x\n"} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, isTOML bool) {
		if !RustToolchainHarmless(data, isTOML) {
			return
		}
		var doc struct {
			Toolchain struct{ Path string } `toml:"toolchain"`
		}
		if _, err := toml.Decode(string(data), &doc); err == nil && doc.Toolchain.Path != "" {
			t.Fatalf("harmless, but TOML names a path: %q", data)
		}
		if strings.ContainsAny(string(data), "/\\") && !isTOML && !strings.Contains(string(data), "[") {
			t.Fatalf("harmless, but the channel line holds a path: %q", data)
		}
	})
}

// todoProgram is an independent reading of a todo list's program lines.
var todoProgram = regexp.MustCompile(`(?m)^[ \t]*(exec|x)([ \t\r]|$)`)

// FuzzTodoSafe: a todo list judged safe holds no line git would run as a
// program.
func FuzzTodoSafe(f *testing.F) {
	for _, s := range []string{"pick 1 a\n", "break\nexec x\n", " x y\n", "exec\tz", "# exec\n", "exec\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if ok, _ := TodoSafe(data); ok && todoProgram.Match(data) {
			t.Fatalf("safe, but it runs a program: %q", data)
		}
	})
}

// FuzzHgrcRefs: every %include line of an hgrc is among what it names.
func FuzzHgrcRefs(f *testing.F) {
	for _, s := range []string{"%include a\n", "[hooks]\nx = ./y\n", "[extensions]\ne = p/q.py\n  cont\n"} {
		f.Add([]byte(s))
	}
	// Mercurial matches its %include pattern against one line at a time:
	// the blanks after %include never reach into the next line ("%include"
	// alone on a line is a parse error, and hg reads nothing of it).
	// Python's \s over bytes holds \v; Go's does not.
	inc := regexp.MustCompile(`(?m)^%include[ \t\f\v]+([^ \t\n\r\f\v]|[^ \t\n\r\f\v].*[^ \t\n\r\f\v])[ \t\f\v]*$`)
	f.Fuzz(func(t *testing.T, data []byte) {
		refs := HgrcRefs(data)
		// Lines end at "\r\n", "\n" or a lone "\r", as Python's
		// bytes.splitlines cuts them.
		lines := bytes.ReplaceAll(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n"))
		for _, m := range inc.FindAllSubmatch(lines, -1) {
			found := false
			for _, r := range refs {
				found = found || r == string(m[1])
			}
			if !found && !bytes.ContainsAny(m[1], "\r") {
				t.Fatalf("%%include %q missing from %q", m[1], refs)
			}
		}
	})
}

// TestTOMLTooComplex: a box-written TOML file shaped to make the reader
// slow (long dotted keys, nested inline tables) is not read, and so never
// judged harmless; a real one is.
func TestTOMLTooComplex(t *testing.T) {
	for _, s := range []string{
		"[toolchain]\nchannel = \"stable\"\n" + strings.Repeat("a.", 20000) + "a=1\n",
		"x=" + strings.Repeat("{a=", 3000) + "1" + strings.Repeat("}", 3000),
	} {
		if RustToolchainHarmless([]byte(s), true) {
			t.Errorf("a file agentbox refuses to read was judged harmless")
		}
	}
	if !RustToolchainHarmless([]byte("[toolchain]\nchannel = \"1.80.0\"\ncomponents = [\"rustfmt\"]\n"), true) {
		t.Error("a real rust-toolchain.toml is not harmless")
	}
}
