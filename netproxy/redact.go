package netproxy

// Redaction: what the box receives from a host the proxy reads (a named
// host, or the upstream proxy) never holds a value the box must not have:
// a secret's value, or the upstream's credentials. Each value is looked
// for in the forms a box could undo without knowing it: as it is,
// percent-encoded (every byte, or only those a URL escapes), as JSON
// escapes, and in base64 (standard and URL alphabets, padded or not, at
// each of the three offsets a value can start at inside a longer
// encoding, to its end when it ends the encoded bytes). Each form is
// replaced by the same form of what stands for the value (a secret's
// placeholder), as long, so lengths stay true. The redaction runs over
// the status line, every header field's name and value, trailer fields,
// the body after its content coding is undone, and every message the
// proxy writes itself about what the host sent.
//
// What it cannot see: a host that transforms what it echoes (reverses
// it, encrypts it, splits it across fields or chunks of a coding the
// proxy does not know) can hand it back in a form no list of encodings
// covers. Method and path rules narrow which requests reach a host at all.

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/textproto"
	"net/url"
	"strings"

	"github.com/andybalholm/brotli"
)

// redaction is a set of values' forms and what replaces each.
type redaction struct {
	old, new [][]byte
}

// add puts value's forms in r, each replaced by the same form of stand
// (padded to the form's length when stand's form is shorter).
func (r *redaction) add(value, stand string) {
	if value == "" {
		return
	}
	forms := func(s string) []string {
		out := []string{s, url.QueryEscape(s), url.PathEscape(s), percentAll(s, "%%%02X"), percentAll(s, "%%%02x"),
			percentAll(s, `\u%04x`), percentAll(s, `\u%04X`), jsonForm(s)}
		// Where the value ends the encoded bytes, the last group holds
		// only its bytes and padding: that whole tail first (a longer
		// form wins where both start), then the core alone.
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			for k := 0; k < 3; k++ {
				out = append(out, base64Tail(enc, s, k))
			}
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			for k := 0; k < 3; k++ {
				out = append(out, base64Core(enc, s, k))
			}
		}
		return out
	}
	olds, news := forms(value), forms(stand)
	for i, o := range olds {
		if len(o) < 4 {
			continue
		}
		n := news[i]
		if len(n) > len(o) {
			n = n[:len(o)]
		}
		n += strings.Repeat("_", len(o)-len(n))
		if r.has(o) {
			continue
		}
		r.old = append(r.old, []byte(o))
		r.new = append(r.new, []byte(n))
	}
}

func (r *redaction) has(o string) bool {
	for _, b := range r.old {
		if string(b) == o {
			return true
		}
	}
	return false
}

// percentAll writes every byte of s with format.
func percentAll(s, format string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, format, s[i])
	}
	return b.String()
}

// jsonForm is s as encoding/json writes it inside a string.
func jsonForm(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// base64Core is the part of the base64 encoding of s, preceded by k other
// bytes, that depends on s's bytes alone.
func base64Core(enc *base64.Encoding, s string, k int) string {
	full := enc.EncodeToString(append(make([]byte, k), s...))
	from := (k + 2) / 3 * 4
	to := (k + len(s)) / 3 * 4
	if to <= from {
		return ""
	}
	return full[from:to]
}

// ValueForms are the forms of a secret's value the redaction looks for
// (raw, percent-encoded, JSON escapes, base64 at each offset).
func ValueForms(value string) []string {
	r := &redaction{}
	r.add(value, value)
	out := make([]string, len(r.old))
	for i, o := range r.old {
		out[i] = string(o)
	}
	return out
}

// base64Tail is the encoding of s, preceded by k other bytes, from the
// first character that depends on s's bytes alone to the end.
func base64Tail(enc *base64.Encoding, s string, k int) string {
	full := enc.EncodeToString(append(make([]byte, k), s...))
	return full[(k+2)/3*4:]
}

// empty reports whether there is nothing to redact.
func (r *redaction) empty() bool { return r == nil || len(r.old) == 0 }

// string redacts s.
func (r *redaction) string(s string) string {
	if r.empty() {
		return s
	}
	var b strings.Builder
	w := r.writer(&b)
	w.Write([]byte(s))
	w.Flush()
	return b.String()
}

// header redacts every field's name and values.
func (r *redaction) header(h textproto.MIMEHeader) {
	if r.empty() {
		return
	}
	for name, values := range h {
		for i, v := range values {
			values[i] = r.string(v)
		}
		if n := r.fold(name); n != name {
			delete(h, name)
			h[n] = append(h[n], values...)
		}
	}
}

// fold redacts s in any case: a field's name reaches the client in
// canonical case (textproto), which would hide a value in it from string.
func (r *redaction) fold(s string) string {
	lower := strings.ToLower(s)
	for i, o := range r.old {
		lo := strings.ToLower(string(o))
		for from := 0; len(lower) == len(s); {
			j := strings.Index(lower[from:], lo)
			if j < 0 {
				break
			}
			j += from
			s = s[:j] + string(r.new[i]) + s[j+len(o):]
			lower = strings.ToLower(s)
			from = j + len(r.new[i])
		}
	}
	return s
}

// writer writes a stream to w redacted (see replacer).
func (r *redaction) writer(w io.Writer) *replacer {
	if r.empty() {
		return &replacer{w: w}
	}
	return &replacer{w: w, old: r.old, new: r.new}
}

// redaction is the proxy's: every secret's value, and the upstream's
// credentials.
func (p *Proxy) buildRedaction() {
	r := &redaction{}
	for _, s := range p.secrets {
		r.add(s.Value, s.Placeholder)
	}
	if u := p.opts.Upstream; u != nil {
		for _, f := range CredentialForms(u.Credentials) {
			if !r.has(f) {
				r.old = append(r.old, []byte(f))
				r.new = append(r.new, bytes.Repeat([]byte("*"), len(f)))
			}
		}
	}
	p.red = r
}

// minPassword is the shortest upstream password looked for alone (its
// "user:password" form is looked for whatever its length): a shorter one
// would turn up by chance in what hosts answer.
const minPassword = 6

// errCoding is a content coding the proxy cannot undo.
var errCoding = errors.New("a content coding the proxy cannot read")

// maxCodings bounds the content codings of one answer.
const maxCodings = 4

// contentDecoder returns body with the answer's content codings undone
// (the last applied first), or an error naming a coding it cannot undo.
// zstd is not among them: its decoder would add to every start of agentbox
// (twice per command) for a coding the proxy never asks for (it asks for
// identity, see session.serve), so a host that sends it anyway is refused.
func contentDecoder(body io.Reader, codings []string) (io.Reader, func(), error) {
	if len(codings) > maxCodings {
		return nil, nil, fmt.Errorf("%d content codings", len(codings))
	}
	var closers []func()
	done := func() {
		for _, c := range closers {
			c()
		}
	}
	r := body
	for i := len(codings) - 1; i >= 0; i-- {
		switch c := strings.ToLower(strings.TrimSpace(codings[i])); c {
		case "identity", "":
		case "gzip", "x-gzip":
			r = &lazy{open: func(in io.Reader) (io.Reader, error) { return gzip.NewReader(in) }, in: r}
		case "deflate":
			r = &lazy{open: openDeflate, in: r}
		case "br":
			r = brotli.NewReader(r)
		default:
			done()
			return nil, nil, fmt.Errorf("%w: %q", errCoding, c)
		}
	}
	return r, done, nil
}

// openDeflate reads "deflate": zlib as RFC 9110 says, or a bare deflate
// stream as some servers send.
func openDeflate(in io.Reader) (io.Reader, error) {
	var head [2]byte
	n, err := io.ReadFull(in, head[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		if errors.Is(err, io.EOF) {
			return bytes.NewReader(nil), nil
		}
		return nil, err
	}
	rest := io.MultiReader(bytes.NewReader(head[:n]), in)
	if n == 2 && head[0]&0x0f == 8 && (uint16(head[0])<<8|uint16(head[1]))%31 == 0 {
		return zlib.NewReader(rest)
	}
	return flate.NewReader(rest), nil
}

// lazy opens a decoder on its first Read, so an empty body is not an
// error where the decoder wants a header.
type lazy struct {
	open func(io.Reader) (io.Reader, error)
	in   io.Reader
	r    io.Reader
}

func (l *lazy) Read(b []byte) (int, error) {
	if l.r == nil {
		r, err := l.open(l.in)
		if err != nil {
			return 0, err
		}
		l.r = r
	}
	return l.r.Read(b)
}
