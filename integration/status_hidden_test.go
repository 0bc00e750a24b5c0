//go:build linux

package integration

import (
	"strings"
	"testing"
)

// agentbox status in a box that hides nothing (a home with no credentials,
// no deny) says so rather than printing an empty "hidden:".
func TestStatusNothingHidden(t *testing.T) {
	for _, backend := range linuxBackends {
		t.Run(backend, func(t *testing.T) {
			w := newWorld(t)
			r := w.run("run", "--backend", backend, "--", bin, "status")
			expectCode(t, r, 0)
			for _, l := range strings.Split(r.stdout, "\n") {
				if strings.TrimSpace(l) == "hidden:" {
					t.Fatalf("an empty hidden: line:\n%s", r.stdout)
				}
			}
			expectContains(t, "status", r.stdout, "hidden:   nothing (none of the credentials hidden by default, nor a denied path, exists here)")
		})
	}
}
