package netproxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/textproto"
	"strings"
	"testing"
)

func TestRequestFraming(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header textproto.MIMEHeader
		want   bodyFraming
		err    string
	}{
		{"none", textproto.MIMEHeader{}, bodyFraming{}, ""},
		{"length", textproto.MIMEHeader{"Content-Length": {"12"}}, bodyFraming{kind: lengthBody, length: 12}, ""},
		{"zero length", textproto.MIMEHeader{"Content-Length": {"0"}}, bodyFraming{}, ""},
		{"same length twice", textproto.MIMEHeader{"Content-Length": {"5, 5"}}, bodyFraming{kind: lengthBody, length: 5}, ""},
		{"chunked", textproto.MIMEHeader{"Transfer-Encoding": {"Chunked"}}, bodyFraming{kind: chunkedBody}, ""},
		{"both", textproto.MIMEHeader{"Content-Length": {"5"}, "Transfer-Encoding": {"chunked"}}, bodyFraming{}, "both"},
		{"gzip", textproto.MIMEHeader{"Transfer-Encoding": {"gzip, chunked"}}, bodyFraming{}, "only chunked"},
		{"two TE fields", textproto.MIMEHeader{"Transfer-Encoding": {"chunked", "chunked"}}, bodyFraming{}, "only chunked"},
		{"conflicting lengths", textproto.MIMEHeader{"Content-Length": {"5", "6"}}, bodyFraming{}, "conflicting"},
		{"signed length", textproto.MIMEHeader{"Content-Length": {"+5"}}, bodyFraming{}, "bad Content-Length"},
		{"negative length", textproto.MIMEHeader{"Content-Length": {"-1"}}, bodyFraming{}, "bad Content-Length"},
		{"hex length", textproto.MIMEHeader{"Content-Length": {"0x10"}}, bodyFraming{}, "bad Content-Length"},
	} {
		got, err := requestFraming(tc.header)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, %v; want error %q", tc.name, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

func TestDecodeChunked(t *testing.T) {
	for _, tc := range []struct {
		name, in, body, rest, err string
		trailer                   []string
	}{
		{name: "plain", in: "3\r\nabc\r\n0\r\n\r\nNEXT", body: "abc", rest: "NEXT"},
		{name: "extensions and upper hex", in: "A;x=y\r\n0123456789\r\n0\r\n\r\n", body: "0123456789"},
		{name: "trailer", in: "1\r\nz\r\n0\r\nX-Sum: 1\r\n\r\n", body: "z", trailer: []string{"X-Sum: 1"}},
		{name: "bare LF", in: "3\nabc\n0\n\n", err: "without CRLF"},
		{name: "no CRLF after data", in: "3\r\nabcd\r\n0\r\n\r\n", err: "no CRLF after a chunk"},
		{name: "size too big", in: "fffffffffffffffff\r\n", err: "bad chunk size"},
		{name: "negative size", in: "-1\r\n", err: "bad chunk size"},
		{name: "empty size", in: "\r\n", err: "bad chunk size"},
		{name: "short", in: "5\r\nab", err: "unexpected EOF"},
		{name: "folded trailer", in: "0\r\n X: 1\r\n\r\n", err: "malformed trailer"},
	} {
		br := bufio.NewReader(strings.NewReader(tc.in))
		d := bodyReader(br, bodyFraming{kind: chunkedBody})
		body, err := io.ReadAll(d)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %q, %v; want error %q", tc.name, body, err, tc.err)
			}
			continue
		}
		rest, _ := io.ReadAll(br)
		if err != nil || string(body) != tc.body || string(rest) != tc.rest || strings.Join(d.Trailer, "|") != strings.Join(tc.trailer, "|") {
			t.Errorf("%s: body %q rest %q trailer %q err %v", tc.name, body, rest, d.Trailer, err)
		}
	}
	// A length body stops at its end and says when the peer stops short.
	br := bufio.NewReader(strings.NewReader("abcdef"))
	if b, err := io.ReadAll(bodyReader(br, bodyFraming{kind: lengthBody, length: 4})); string(b) != "abcd" || err != nil {
		t.Errorf("length: %q %v", b, err)
	}
	if _, err := io.ReadAll(bodyReader(bufio.NewReader(strings.NewReader("ab")), bodyFraming{kind: lengthBody, length: 4})); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short length body: %v", err)
	}
	// Encoded again, a chunked body reads back the same.
	var out bytes.Buffer
	enc := &encoder{w: &out, f: bodyFraming{kind: chunkedBody}}
	enc.Write([]byte("hello "))
	enc.Write([]byte("world"))
	enc.Close([]string{"X: 1"})
	d := bodyReader(bufio.NewReader(&out), bodyFraming{kind: chunkedBody})
	if b, err := io.ReadAll(d); string(b) != "hello world" || err != nil || len(d.Trailer) != 1 {
		t.Errorf("round trip: %q %v %q", b, err, d.Trailer)
	}
}

// oneByOne writes s to w a byte at a time, as a slow peer does.
func oneByOne(w io.Writer, s string) error {
	for i := 0; i < len(s); i++ {
		if _, err := w.Write([]byte{s[i]}); err != nil {
			return err
		}
	}
	return nil
}

func TestReplacer(t *testing.T) {
	for _, in := range []string{
		"a SECRET-VALUE b SECRET-VALUE",
		"SECRET-VALUESECRET-VALUE",
		"SECRET-VALU only a prefix at the end SECRET-VALU",
		"no secret at all, S, SE, SEC",
	} {
		want := strings.ReplaceAll(in, "SECRET-VALUE", "placeholder!")
		for _, split := range []bool{false, true} {
			var out bytes.Buffer
			r := &replacer{w: &out, old: [][]byte{[]byte("SECRET-VALUE")}, new: [][]byte{[]byte("placeholder!")}}
			if split {
				oneByOne(r, in)
			} else {
				r.Write([]byte(in))
			}
			r.Flush()
			if out.String() != want {
				t.Errorf("replacer(%q, split %v) = %q, want %q", in, split, out.String(), want)
			}
		}
	}
	// Only what could start a value is held back.
	var out bytes.Buffer
	r := &replacer{w: &out, old: [][]byte{[]byte("SECRET")}, new: [][]byte{[]byte("xxxxxx")}}
	r.Write([]byte("data: done\n\nSE"))
	if out.String() != "data: done\n\n" {
		t.Errorf("held back wrongly: %q", out.String())
	}
}

func TestDetector(t *testing.T) {
	for _, split := range []bool{false, true} {
		var out bytes.Buffer
		found := -1
		d := newDetector(&out, [][]byte{[]byte("first"), []byte("PLACEHOLDER")}, func(i int) error { found = i; return errExfiltration })
		err := oneByOne(d, "some text then PLACEHOLDER and more")
		if !split {
			out.Reset()
			d = newDetector(&out, [][]byte{[]byte("PLACEHOLDER")}, func(i int) error { found = 1; return errExfiltration })
			_, err = d.Write([]byte("some text then PLACEHOLDER and more"))
		}
		if !errors.Is(err, errExfiltration) || found != 1 {
			t.Errorf("split %v: err %v found %d", split, err, found)
		}
		if strings.Contains(out.String(), "PLACEHOLDER") {
			t.Errorf("split %v: the whole placeholder went out: %q", split, out.String())
		}
	}
	// Nothing is held back.
	var out bytes.Buffer
	d := newDetector(&out, [][]byte{[]byte("PLACEHOLDER")}, func(int) error { return errExfiltration })
	d.Write([]byte("ends in P"))
	if out.String() != "ends in P" {
		t.Errorf("detector held back: %q", out.String())
	}
}
