package hostexec

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/plan"
)

// An index reads back as it was written (the folders under its root
// only), and a file cut short, grown, or made for another root reads as no
// index at all, without a panic.
func TestIndexRoundTrip(t *testing.T) {
	idx := &plan.Index{Taken: 1_700_000_000_123_456_789, Dirs: map[string]plan.IndexDir{
		"/r":       {Dev: 2049, Ino: 12, Ctime: 1_699_999_999_000_000_001, Count: 3, Subdirs: []string{"a", "b c"}, Notes: []string{".git"}},
		"/r/a":     {Dev: 2049, Ino: 13, Ctime: -5, Count: 0},
		"/r/b c":   {Dev: 1 << 60, Ino: 1<<64 - 1, Ctime: 7, Count: 1 << 40, Bare: true},
		"/rest":    {Dev: 1, Ino: 1}, // not under /r
		"/other/x": {Dev: 1, Ino: 2},
	}}
	data := EncodeIndex(idx, "/r")
	got := DecodeIndex(data, "/r")
	want := &plan.Index{Taken: idx.Taken, Dirs: map[string]plan.IndexDir{"/r": idx.Dirs["/r"], "/r/a": idx.Dirs["/r/a"], "/r/b c": idx.Dirs["/r/b c"]}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if DecodeIndex(data, "/other") != nil {
		t.Error("an index of /r was read as one of /other")
	}
	for n := 0; n < len(data); n++ {
		if DecodeIndex(data[:n], "/r") != nil {
			t.Fatalf("an index cut to %d of %d bytes was read", n, len(data))
		}
	}
	if DecodeIndex(append(data[:len(data):len(data)], 0), "/r") != nil {
		t.Error("an index with a byte more was read")
	}
	// A count larger than the file: refused before anything is allocated.
	huge := append([]byte(indexMagic), 2, '/', 'r', 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)
	if DecodeIndex(huge, "/r") != nil {
		t.Error("an index claiming 2^64-1 folders was read")
	}
}
