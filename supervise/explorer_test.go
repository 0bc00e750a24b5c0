package supervise

import (
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExplorerName(t *testing.T) {
	for name, want := range map[string]bool{
		"desktop.ini": true, "Desktop.INI": true, "desktop.ini. . ": true, "a.url": true, "A.URL": true,
		"x.lnk": true, "x.lnk.": true, "Docs.library-ms": true, "s.searchConnector-ms": true,
		"desktop.ini.bak": false, "desktop.in": false, "url": false, "x.lnk2": false, "readme.md": false,
		"mydesktop.ini": false, "x.url.txt": false,
	} {
		if got := explorerName(name); got != want {
			t.Errorf("explorerName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestExplorerVerdict(t *testing.T) {
	rec := explorerRecord{Files: map[string]string{explorerKey("/r/a/desktop.ini"): "file 1", explorerKey("/r/x.lnk"): ""}, Complete: true}
	incomplete := explorerRecord{Files: rec.Files}
	for _, tc := range []struct {
		name     string
		rec      explorerRecord
		p, now   string
		wantMove bool
		wantWhy  string
	}{
		{"the user's own, unchanged", rec, "/r/a/desktop.ini", "file 1", false, ""},
		{"the user's own, other case", rec, "/r/A/Desktop.ini", "file 1", false, ""},
		{"changed", rec, "/r/a/desktop.ini", "file 2", true, "changed during the run"},
		{"now a link", rec, "/r/a/desktop.ini", `link \\srv\s`, true, "changed during the run"},
		{"unreadable now", rec, "/r/a/desktop.ini", "", true, "changed during the run"},
		{"unreadable before and now", rec, "/r/x.lnk", "", true, "changed during the run"},
		{"new", rec, "/r/b/desktop.ini", "file 1", true, "created during the run"},
		{"record incomplete: the user's own stays", incomplete, "/r/a/desktop.ini", "file 1", false, ""},
		{"record incomplete: unknown goes", incomplete, "/r/b/x.url", "file 3", true, "not known from before the run (the roots could not be searched to the end before it)"},
	} {
		move, why := explorerVerdict(tc.rec, tc.p, tc.now)
		if move != tc.wantMove || why != tc.wantWhy {
			t.Errorf("%s: got %v %q, want %v %q", tc.name, move, why, tc.wantMove, tc.wantWhy)
		}
	}
}

// TestFindExplorer: recorded before, searched after: what the box made or
// changed at any depth of a root is found; the user's own unchanged files
// are not; links are not followed.
func TestFindExplorer(t *testing.T) {
	// Not t.TempDir: under Wine os.RemoveAll cannot remove folders the
	// way it asks, which would fail the test for nothing it tests.
	dir, err := os.MkdirTemp("", "agentbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	root := filepath.Join(dir, "root")
	outside := filepath.Join(dir, "outside")
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "docs", "desktop.ini"), "[.ShellClassInfo]\n")
	write(filepath.Join(root, "site.url"), "[InternetShortcut]\nURL=https://example.com\n")
	write(filepath.Join(root, "keep.lnk"), "L")
	write(filepath.Join(outside, "far.lnk"), "L")
	if runtime.GOOS != "windows" { // the Windows walk's links: TestWindowsAfterRunMovesOutsideLink
		if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
			t.Fatal(err)
		}
	}
	before, err := recordExplorer([]string{root})
	if err != nil || !before.Complete || len(before.Files) != 3 {
		t.Fatalf("record: %v %+v", err, before)
	}
	// The run: a new desktop.ini deep down, one changed, new ones in
	// other cases and with a trailing dot.
	write(filepath.Join(root, "a", "b", "c", "d", "desktop.ini"), "[.ShellClassInfo]\nIconResource=\\\\srv\\s\\i.ico,0\n")
	write(filepath.Join(root, "site.url"), "[InternetShortcut]\nURL=file://srv/s\n")
	write(filepath.Join(root, "src", "Docs.Library-MS"), "<libraryDescription/>")
	write(filepath.Join(root, "src", "q.searchConnector-ms"), "<searchConnectorDescription/>")
	last := "x.lnk." // Windows drops the trailing dot itself
	if runtime.GOOS == "windows" {
		last = "x.LNK"
	}
	write(filepath.Join(root, "src", last), "L")
	write(filepath.Join(outside, "new.url"), "U")
	got, err := findExplorer([]string{root}, before)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range got {
		lines = append(lines, filepath.ToSlash(strings.TrimPrefix(f.Path, root))+": "+f.Why)
	}
	sort.Strings(lines)
	want := []string{
		"/a/b/c/d/desktop.ini: created during the run",
		"/site.url: changed during the run",
		"/src/Docs.Library-MS: created during the run",
		"/src/q.searchConnector-ms: created during the run",
		"/src/" + last + ": created during the run",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("found (-want +got):\n%s", diff)
	}
}

// A root that cannot be listed to the end makes an incomplete record, and
// then everything found after the run that is not the user's unchanged
// own goes.
func TestRecordExplorerIncomplete(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a folder no one may list is made with Unix permission bits, which Windows ignores")
	}
	if os.Geteuid() == 0 {
		t.Skip("root lists every folder: an unlistable folder cannot be made here")
	}
	root := t.TempDir()
	locked := filepath.Join(root, "locked")
	if err := os.Mkdir(locked, 0o000); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	rec, err := recordExplorer([]string{root})
	if err == nil || rec.Complete {
		t.Fatalf("got %v %+v, want an incomplete record and an error", err, rec)
	}
}
