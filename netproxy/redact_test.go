package netproxy

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/base64"
	"errors"
	"io"
	"net/textproto"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/google/go-cmp/cmp"
)

func TestRedactionForms(t *testing.T) {
	const value, stand = "sk-Real/key+0123456789", "agentboxabcdefghijklmn"
	r := &redaction{}
	r.add(value, stand)
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	tests := []struct{ name, in, want string }{
		{"raw", "key " + value + ".", "key " + stand + "."},
		{"query escaped", "k=sk-Real%2Fkey%2B0123456789", "k=" + stand + "____"}, // as long
		{"every byte escaped", percentAll(value, "%%%02X"), percentAll(stand, "%%%02X")},
		{"json escapes", percentAll(value, `\u%04x`), percentAll(stand, `\u%04x`)},
		{"base64", b64(value), b64(stand)},
		{"base64 unpadded", strings.TrimRight(b64(value), "="), strings.TrimRight(b64(stand), "=")},
		{"base64 at offset 1", b64("x" + value), b64("x" + value)[:4] + b64("x" + stand)[4:]},
		// Inside longer data, the characters that also hold bytes
		// around the value stay.
		{"base64 inside", b64(value + "more"), b64(stand)[:28] + b64(value + "more")[28:]},
		{"base64 at offset 2", b64("xy" + value), b64("xy" + value)[:4] + b64("xy" + stand)[4:32] + b64("xy" + value)[32:]},
		{"nothing", "plain text", "plain text"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, r.string(tc.in)); diff != "" {
				t.Errorf("string (-want +got):\n%s", diff)
			}
			var out bytes.Buffer
			w := r.writer(&out)
			for i := 0; i < len(tc.in); i++ { // a byte at a time: every split
				w.Write([]byte{tc.in[i]})
			}
			w.Flush()
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("writer (-want +got):\n%s", diff)
			}
		})
	}
	h := textproto.MIMEHeader{"Sk-Real/key+0123456789": {"1"}, "X-Echo": {value}}
	r.header(h)
	if diff := cmp.Diff(textproto.MIMEHeader{stand: {"1"}, "X-Echo": {stand}}, h); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
}

func TestContentDecoder(t *testing.T) {
	const body = "the content"
	enc := func(w func(io.Writer) io.WriteCloser) string {
		var b bytes.Buffer
		z := w(&b)
		io.WriteString(z, body)
		z.Close()
		return b.String()
	}
	gz := enc(func(w io.Writer) io.WriteCloser { return gzip.NewWriter(w) })
	tests := []struct {
		name    string
		codings []string
		in      string
		err     string
	}{
		{"gzip", []string{"gzip"}, gz, ""},
		{"x-gzip", []string{"X-Gzip"}, gz, ""},
		{"deflate", []string{"deflate"}, enc(func(w io.Writer) io.WriteCloser { return zlib.NewWriter(w) }), ""},
		{"br", []string{"br"}, enc(func(w io.Writer) io.WriteCloser { return brotli.NewWriter(w) }), ""},
		{"identity", []string{"identity"}, body, ""},
		{"gzip then br", []string{"gzip", " br"}, enc(func(w io.Writer) io.WriteCloser {
			bw := brotli.NewWriter(w)
			return &chain{outer: bw, inner: gzip.NewWriter(bw)}
		}), ""},
		{"zstd", []string{"zstd"}, body, `a content coding the proxy cannot read: "zstd"`},
		{"compress", []string{"compress"}, body, `a content coding the proxy cannot read: "compress"`},
		{"too many", []string{"gzip", "gzip", "gzip", "gzip", "gzip"}, body, "5 content codings"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, done, err := contentDecoder(strings.NewReader(tc.in), tc.codings)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				if tc.err != "5 content codings" && !errors.Is(err, errCoding) {
					t.Errorf("error %v is not errCoding", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer done()
			got, err := io.ReadAll(r)
			if err != nil || string(got) != body {
				t.Errorf("decoded %q, %v", got, err)
			}
		})
	}
}

// chain closes inner, then outer.
type chain struct{ outer, inner io.WriteCloser }

func (c *chain) Write(b []byte) (int, error) { return c.inner.Write(b) }
func (c *chain) Close() error {
	c.inner.Close()
	return c.outer.Close()
}

func TestCredentialForms(t *testing.T) {
	forms := CredentialForms("alice:pa+ss/word")
	for _, want := range []string{"alice:pa+ss/word", "pa+ss/word", "alice:pa%2Bss%2Fword", "pa%2Bss%2Fword",
		base64.StdEncoding.EncodeToString([]byte("alice:pa+ss/word"))[:20]} {
		found := false
		for _, f := range forms {
			found = found || strings.Contains(want, f) && len(f) >= len(want)*3/4
		}
		if !found {
			t.Errorf("no form covers %q in %q", want, forms)
		}
	}
	for _, f := range CredentialForms("bob:pw") {
		if f == "pw" {
			t.Errorf("a short password is looked for alone: %q", f)
		}
	}
}
