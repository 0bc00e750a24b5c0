package refusal

import "testing"

// The mount table's escapes are undone: a mount point with a space.
func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/mnt/my\040disk`); got != "/mnt/my disk" {
		t.Errorf("got %q", got)
	}
}
