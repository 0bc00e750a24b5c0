package winsandbox

import (
	"errors"
	"strings"
	"testing"
)

// TestSaid: the start of what the runner writes to its standard error is
// kept, bounded, and reported with the failure it explains.
func TestSaid(t *testing.T) {
	var s said
	s.Write([]byte("panic: boom\r\n\r\ngoroutine 7 [running]:\r\n"))
	err := withSaid(errors.New("runner: unexpected EOF"), s.String())
	want := "runner: unexpected EOF; the runner wrote:\n  panic: boom\n  \n  goroutine 7 [running]:"
	if err.Error() != want {
		t.Errorf("withSaid = %q, want %q", err, want)
	}
	var big said
	big.Write([]byte(strings.Repeat("x", maxSaid-1)))
	big.Write([]byte("yz"))
	big.Write([]byte("more"))
	if got := big.String(); !strings.HasPrefix(got, strings.Repeat("x", maxSaid-1)+"y\n") || !strings.HasSuffix(got, "[5 more bytes]") {
		t.Errorf("a long report keeps %d bytes and ends %q", len(got), got[len(got)-20:])
	}
	if got := withSaid(errors.New("e"), ""); got.Error() != "e" {
		t.Errorf("nothing written: %v", got)
	}
}
