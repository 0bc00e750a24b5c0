package netproxy

// Message bodies, for the requests the proxy reads one by one (see
// intercept.go): where a body ends (RFC 9112 section 6.3), its content
// decoded from chunked transfer coding, and the same content encoded again
// for the other side. The proxy re-encodes every body it reads rather
// than passing the client's framing on, so the far end parses exactly the
// messages the proxy checked, whatever the client sent.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/textproto"
	"strconv"
	"strings"
)

// bodyFraming says where a body ends.
type bodyFraming struct {
	kind   int   // noBody, lengthBody, chunkedBody or closeBody
	length int64 // for lengthBody
}

const (
	noBody = iota
	lengthBody
	chunkedBody
	closeBody // until the connection ends (responses only)
)

// requestFraming reads a request's framing fields strictly: chunked alone,
// or one Content-Length; both, or any other coding, are refused (a
// message read one way here and another way by the origin is how requests
// are smuggled past a proxy).
func requestFraming(h textproto.MIMEHeader) (bodyFraming, error) {
	te, hasTE := h["Transfer-Encoding"]
	cl, hasCL := h["Content-Length"]
	switch {
	case hasTE && hasCL:
		return bodyFraming{}, errors.New("both Transfer-Encoding and Content-Length")
	case hasTE:
		if len(te) != 1 || !strings.EqualFold(strings.TrimSpace(te[0]), "chunked") {
			return bodyFraming{}, fmt.Errorf("transfer coding %q: only chunked is accepted", strings.Join(te, ", "))
		}
		return bodyFraming{kind: chunkedBody}, nil
	case hasCL:
		n, err := contentLength(cl)
		if err != nil {
			return bodyFraming{}, err
		}
		if n == 0 {
			return bodyFraming{}, nil
		}
		return bodyFraming{kind: lengthBody, length: n}, nil
	}
	return bodyFraming{}, nil
}

// responseFraming is RFC 9112 section 6.3 for a response to method.
func responseFraming(method string, code int, h textproto.MIMEHeader) (bodyFraming, error) {
	if method == "HEAD" || code < 200 || code == 204 || code == 304 {
		return bodyFraming{}, nil
	}
	if te, ok := h["Transfer-Encoding"]; ok {
		// Only chunked: a body in another transfer coding (gzip,
		// compress) is one the client decodes and the proxy would pass
		// unread.
		if len(te) != 1 || !strings.EqualFold(strings.TrimSpace(te[0]), "chunked") {
			return bodyFraming{}, fmt.Errorf("transfer coding %q: only chunked is accepted", strings.Join(te, ", "))
		}
		return bodyFraming{kind: chunkedBody}, nil
	}
	if cl, ok := h["Content-Length"]; ok {
		n, err := contentLength(cl)
		if err != nil {
			return bodyFraming{}, err
		}
		return bodyFraming{kind: lengthBody, length: n}, nil
	}
	return bodyFraming{kind: closeBody}, nil
}

// contentLength reads Content-Length: one decimal number (repeated copies
// of the same number allowed, as RFC 9110 section 8.6 does).
func contentLength(values []string) (int64, error) {
	var n int64 = -1
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			part = strings.TrimSpace(part)
			m, err := strconv.ParseInt(part, 10, 64)
			if err != nil || m < 0 || strings.Trim(part, "0123456789") != "" {
				return 0, fmt.Errorf("bad Content-Length %q", v)
			}
			if n >= 0 && m != n {
				return 0, errors.New("conflicting Content-Length values")
			}
			n = m
		}
	}
	return n, nil
}

// errChunked starts every error of a malformed chunked body.
var errChunked = errors.New("chunked body")

// bodyReader returns the decoded content of a body on br.
func bodyReader(br *bufio.Reader, f bodyFraming) *decoded {
	d := &decoded{br: br, f: f, left: f.length}
	return d
}

// decoded reads a body's content: a length's worth, the chunks' data, or
// everything until the connection ends. Trailer holds a chunked body's
// trailer section (its lines, as sent) once Read has returned io.EOF.
type decoded struct {
	br      *bufio.Reader
	f       bodyFraming
	left    int64 // of the length, or of the current chunk
	started bool  // a chunk size has been read
	done    bool
	Trailer []string
}

// maxChunkLine bounds a chunk-size line with its extensions.
const maxChunkLine = 4096

func (d *decoded) Read(b []byte) (int, error) {
	if d.done {
		return 0, io.EOF
	}
	switch d.f.kind {
	case noBody:
		d.done = true
		return 0, io.EOF
	case closeBody:
		return d.br.Read(b)
	case lengthBody:
		if d.left == 0 {
			d.done = true
			return 0, io.EOF
		}
		n, err := d.br.Read(b[:min(int64(len(b)), d.left)])
		d.left -= int64(n)
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return n, err
	}
	// chunked
	if d.left == 0 {
		if d.started {
			if err := d.crlf(); err != nil {
				return 0, err
			}
		}
		size, err := d.chunkSize()
		if err != nil {
			return 0, err
		}
		d.started = true
		if size == 0 {
			if err := d.trailer(); err != nil {
				return 0, err
			}
			d.done = true
			return 0, io.EOF
		}
		d.left = size
	}
	n, err := d.br.Read(b[:min(int64(len(b)), d.left)])
	d.left -= int64(n)
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// line reads one line ending in CRLF, at most max bytes.
func (d *decoded) line(max int) (string, error) {
	var b []byte
	for {
		frag, err := d.br.ReadSlice('\n')
		b = append(b, frag...)
		if len(b) > max {
			return "", fmt.Errorf("%w: line too long", errChunked)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
		if !bytes.HasSuffix(b, []byte("\r\n")) {
			return "", fmt.Errorf("%w: a line without CRLF", errChunked)
		}
		return string(b[:len(b)-2]), nil
	}
}

func (d *decoded) crlf() error {
	var b [2]byte
	if _, err := io.ReadFull(d.br, b[:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	if string(b[:]) != "\r\n" {
		return fmt.Errorf("%w: no CRLF after a chunk", errChunked)
	}
	return nil
}

// chunkSize reads "SIZE[;extensions]": extensions are dropped.
func (d *decoded) chunkSize() (int64, error) {
	l, err := d.line(maxChunkLine)
	if err != nil {
		return 0, err
	}
	hex, _, _ := strings.Cut(l, ";")
	hex = strings.TrimRight(hex, " \t")
	if hex == "" || len(hex) > 15 || strings.Trim(hex, "0123456789abcdefABCDEF") != "" {
		return 0, fmt.Errorf("%w: bad chunk size %q", errChunked, l)
	}
	return strconv.ParseInt(hex, 16, 64)
}

// trailer reads the trailer section up to its empty line.
func (d *decoded) trailer() error {
	total := 0
	for {
		l, err := d.line(maxHead)
		if err != nil {
			return err
		}
		if l == "" {
			return nil
		}
		if total += len(l); total > maxHead || len(d.Trailer) >= maxFields {
			return fmt.Errorf("%w: trailer section too large", errChunked)
		}
		// As strictly as a header field (RFC 9112 section 5, RFC 9110
		// section 5.5): a token for a name, right before the colon; no
		// control character but a tab in the value (a bare CR is how a
		// second request hides in a trailer for an origin that ends lines
		// at one).
		name, _, ok := strings.Cut(l, ":")
		if !ok || !token(name) || strings.IndexFunc(l, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) >= 0 {
			return fmt.Errorf("%w: malformed trailer field", errChunked)
		}
		d.Trailer = append(d.Trailer, l)
	}
}

// encoder writes a body's content in bodyFraming f to w: as it is for a
// length or the connection's end, as chunks for chunked (Close writes the
// last chunk and the trailer section).
type encoder struct {
	w io.Writer
	f bodyFraming
}

func (e *encoder) Write(b []byte) (int, error) {
	if e.f.kind != chunkedBody || len(b) == 0 {
		return e.w.Write(b)
	}
	if _, err := fmt.Fprintf(e.w, "%x\r\n", len(b)); err != nil {
		return 0, err
	}
	n, err := e.w.Write(b)
	if err == nil {
		_, err = io.WriteString(e.w, "\r\n")
	}
	return n, err
}

// Close ends a chunked body with trailer, the trailer section's lines.
func (e *encoder) Close(trailer []string) error {
	if e.f.kind != chunkedBody {
		return nil
	}
	var b strings.Builder
	b.WriteString("0\r\n")
	for _, l := range trailer {
		b.WriteString(l + "\r\n")
	}
	b.WriteString("\r\n")
	_, err := io.WriteString(e.w, b.String())
	return err
}

// replacer writes a stream to w with every old[i] replaced by new[i] (as
// long), holding back only a tail that could be the start of one until
// more comes or Flush. Where several start at the same place, the longest
// wins: a shorter one that is a prefix of a longer one waits for the rest.
type replacer struct {
	w        io.Writer
	old, new [][]byte
	buf      []byte
}

func (r *replacer) Write(p []byte) (int, error) {
	if len(r.old) == 0 {
		return r.w.Write(p)
	}
	r.buf = append(r.buf, p...)
	if err := r.drain(false); err != nil {
		return 0, err
	}
	return len(p), nil
}

// drain writes what can be written of buf; final when the stream ended.
func (r *replacer) drain(final bool) error {
	for {
		at, which := -1, -1
		for i, o := range r.old {
			if j := bytes.Index(r.buf, o); j >= 0 && (at < 0 || j < at || j == at && len(o) > len(r.old[which])) {
				at, which = j, i
			}
		}
		if at < 0 {
			break
		}
		if !final {
			rest := r.buf[at:]
			for _, o := range r.old {
				if len(o) > len(rest) && bytes.HasPrefix(o, rest) {
					// A longer one may still complete here.
					if _, err := r.w.Write(r.buf[:at]); err != nil {
						return err
					}
					r.buf = append(r.buf[:0], rest...)
					return nil
				}
			}
		}
		if _, err := r.w.Write(r.buf[:at]); err != nil {
			return err
		}
		if _, err := r.w.Write(r.new[which]); err != nil {
			return err
		}
		r.buf = r.buf[at+len(r.old[which]):]
	}
	keep := 0
	if !final {
		for _, o := range r.old {
			for k := min(len(o)-1, len(r.buf)); k > keep; k-- {
				if bytes.HasSuffix(r.buf, o[:k]) {
					keep = k
					break
				}
			}
		}
	}
	if n := len(r.buf) - keep; n > 0 {
		if _, err := r.w.Write(r.buf[:n]); err != nil {
			return err
		}
		r.buf = append(r.buf[:0], r.buf[n:]...)
	}
	return nil
}

// Flush writes what was held back, replaced: the stream has ended.
func (r *replacer) Flush() error {
	if len(r.buf) == 0 {
		return nil
	}
	err := r.drain(true)
	r.buf = r.buf[:0]
	return err
}

// detector writes a stream to w as it comes, and stops it at the first of
// needles: the write that would complete one is not made, found is told
// which, and its error is returned. Nothing is held back (a client that
// waits for an answer after its last byte gets one), and no needle ever
// leaves whole.
type detector struct {
	w       io.Writer
	needles [][]byte
	found   func(i int) error
	tail    []byte // the last bytes written, up to the longest needle's length - 1
	max     int
}

func newDetector(w io.Writer, needles [][]byte, found func(i int) error) *detector {
	d := &detector{w: w, needles: needles, found: found}
	for _, n := range needles {
		d.max = max(d.max, len(n))
	}
	return d
}

func (d *detector) Write(p []byte) (int, error) {
	if len(d.needles) == 0 {
		return d.w.Write(p)
	}
	window := append(append([]byte(nil), d.tail...), p...)
	for i, n := range d.needles {
		if bytes.Contains(window, n) {
			return 0, d.found(i)
		}
	}
	n, err := d.w.Write(p)
	if keep := d.max - 1; len(window) > keep {
		window = window[len(window)-keep:]
	}
	d.tail = window
	return n, err
}
