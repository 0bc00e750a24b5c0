//go:build unix

package event

import "testing"

// BenchmarkLogRun is what the audit log adds to one run: opening the log,
// recording the run's start and end, closing it.
func BenchmarkLogRun(b *testing.B) {
	dir := logDir(b)
	for i := 0; i < b.N; i++ {
		l, err := OpenLog(dir, LogOptions{})
		if err != nil {
			b.Fatal(err)
		}
		s := NewStream("0123456789ab", l)
		s.Emit(start("0123456789ab"))
		s.Emit(end("0123456789ab", 0))
		s.Close()
	}
}

// BenchmarkLogEvent is one network decision recorded.
func BenchmarkLogEvent(b *testing.B) {
	dir := logDir(b)
	l, err := OpenLog(dir, LogOptions{Cap: b.N + 1})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	e := netEvent("0123456789ab", false, "other.test:443")
	for i := 0; i < b.N; i++ {
		l.Emit(e)
	}
}
