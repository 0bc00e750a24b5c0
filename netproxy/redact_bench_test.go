package netproxy

import (
	"io"
	"strings"
	"testing"
)

// BenchmarkRedactionWriter: an answer's body through one secret's
// redaction, 32 KiB at a time.
func BenchmarkRedactionWriter(b *testing.B) {
	r := &redaction{}
	r.add("sk-ant-agentbox-test-real-key-0123456789", "agentboxaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	chunk := []byte(strings.Repeat("The quick brown fox jumps over the lazy dog; {\"json\": [1, 2, 3]}\n", 512)[:32<<10])
	b.SetBytes(int64(len(chunk)))
	w := r.writer(io.Discard)
	for b.Loop() {
		w.Write(chunk)
	}
}

// BenchmarkRedactionWriterOneForm: the same with the raw value alone, as
// the proxy looked for before.
func BenchmarkRedactionWriterOneForm(b *testing.B) {
	r := &redaction{old: [][]byte{[]byte("sk-ant-agentbox-test-real-key-0123456789")}, new: [][]byte{[]byte("agentboxaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")}}
	chunk := []byte(strings.Repeat("The quick brown fox jumps over the lazy dog; {\"json\": [1, 2, 3]}\n", 512)[:32<<10])
	b.SetBytes(int64(len(chunk)))
	w := r.writer(io.Discard)
	for b.Loop() {
		w.Write(chunk)
	}
}
