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

// agentbox caches right after a run whose tools wrote nothing yet does not
// contradict the run (which names each tool's cache folder): it says no
// cache holds anything yet, and when a tool makes one.
func TestCachesBeforeFirstWrite(t *testing.T) {
	w := newWorld(t)
	w.repo(w.project)
	write(t, w.project+"/package.json", "{}\n")
	r := w.run("run", "--", "sh", "-c", `echo "$npm_config_cache"`)
	expectCode(t, r, 0)
	if !strings.Contains(r.stdout, "/npm") {
		t.Fatalf("the run names no npm cache: %q", r.stdout)
	}
	r = w.run("caches")
	expectCode(t, r, 0)
	expectContains(t, "caches", r.stdout, "no private cache holds anything yet in ")
	expectContains(t, "caches", r.stdout, "a run makes a tool's cache when the tool first writes to it")
}
