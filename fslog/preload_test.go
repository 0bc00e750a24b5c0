package fslog

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbox/agentbox/plan"
)

// rec builds a datagram as preload.c sends it.
func rec(op, flags byte, errno, lost uint32, strs ...string) []byte {
	b := []byte("fsl1")
	b = append(b, op, flags, 0, 0)
	b = binary.LittleEndian.AppendUint32(b, errno)
	b = binary.LittleEndian.AppendUint32(b, lost)
	for _, s := range strs {
		b = append(append(b, s...), 0)
	}
	return b
}

// A record is taken exactly as preload.c writes it, and nothing else is:
// whatever the box sends, agentbox reads a record or nothing.
func TestParseRecord(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want record
		ok   bool
	}{
		{name: "a create, relative", in: rec(3, recExcl|recNoFollow, 30, 0, "open", "/usr/lib", "x", "", "", "touch"), ok: true,
			want: record{op: Create, noFollow: true, flags: openExcl, errno: 30, call: "open", prog: "touch",
				base: [2]string{"/usr/lib", ""}, path: [2]string{"x", ""}}},
		{name: "a rename, with the count of what was not sent", in: rec(7, recNoFollow, 30, 12, "renameat2", "", "/a", "/w", "b", "mv"), ok: true,
			want: record{op: Rename, noFollow: true, errno: 30, lost: 12, call: "renameat2", prog: "mv",
				base: [2]string{"", "/w"}, path: [2]string{"/a", "b"}}},
		{name: "a truncating write", in: rec(2, recTrunc, 13, 0, "fopen", "", "/etc/y", "", "", ""), ok: true,
			want: record{op: Write, flags: openTrunc, errno: 13, call: "fopen", path: [2]string{"/etc/y", ""}}},
		{name: "the last operation", in: rec(14, 0, 1, 0, "setxattr", "", "/f", "", "", "p"), ok: true,
			want: record{op: Xattr, errno: 1, call: "setxattr", prog: "p", path: [2]string{"/f", ""}}},
		{name: "a long program name is left out", in: rec(4, 0, 30, 0, "mkdir", "", "/d", "", "", strings.Repeat("n", 65)), ok: true,
			want: record{op: Mkdir, errno: 30, call: "mkdir", path: [2]string{"/d", ""}}},
		{name: "only a count of what was lost", in: rec(0, 0, 0, 77, "", "", "", "", "", ""), ok: true, want: record{lost: 77}},
		{name: "a count with a path", in: rec(0, 0, 0, 77, "", "", "/x", "", "", "")},
		{name: "too short", in: []byte("fsl1\x03")},
		{name: "another magic", in: append([]byte("fsl2"), rec(3, 0, 30, 0, "open", "", "/x", "", "", "")[4:]...)},
		{name: "no operation, with a call", in: rec(0, 0, 30, 0, "open", "", "/x", "", "", "")},
		{name: "an operation past the last", in: rec(15, 0, 30, 0, "open", "", "/x", "", "", "")},
		{name: "a string missing", in: rec(3, 0, 30, 0, "open", "", "/x", "", "")},
		{name: "a string too many", in: rec(3, 0, 30, 0, "open", "", "/x", "", "", "", "")},
		{name: "the last string unended", in: rec(3, 0, 30, 0, "open", "", "/x", "", "", "p")[:len(rec(3, 0, 30, 0, "open", "", "/x", "", "", "p"))-1]},
		{name: "no path", in: rec(3, 0, 30, 0, "open", "", "", "", "", "")},
		{name: "a rename with one path", in: rec(7, 0, 30, 0, "rename", "", "/a", "", "", "")},
		{name: "a create with two", in: rec(3, 0, 30, 0, "open", "", "/a", "", "/b", "")},
		{name: "a call name that is no call", in: rec(3, 0, 30, 0, "open\x1b[2J", "", "/x", "", "", "")},
		{name: "a call name too long", in: rec(3, 0, 30, 0, strings.Repeat("a", 33), "", "/x", "", "", "")},
		{name: "a path longer than PATH_MAX", in: rec(3, 0, 30, 0, "open", "", "/"+strings.Repeat("x", 4096), "", "", "")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseRecord(tc.in)
			if ok != tc.ok {
				t.Fatalf("parseRecord: ok = %v, want %v (%+v)", ok, tc.ok, got)
			}
			if !ok {
				return
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(record{})); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
		})
	}
}

// A path is made absolute from the folder the library named, without
// cleaning ("a/../b" goes through a, which may be a link).
func TestRecordAbsolute(t *testing.T) {
	tests := []struct {
		base, path, want string
	}{
		{"", "/etc/x", "/etc/x"},
		{"/ignored", "/etc/x", "/etc/x"},
		{"/usr/lib", "x", "/usr/lib/x"},
		{"/usr/lib", "a/../b", "/usr/lib/a/../b"},
		{"/", "x", "/x"},
		{"", "x", ""},
		{"(unreachable)/x", "y", ""},
	}
	for _, tc := range tests {
		r := record{base: [2]string{tc.base}, path: [2]string{tc.path}}
		if got := r.absolute(0); got != tc.want {
			t.Errorf("absolute(%q, %q) = %q, want %q", tc.base, tc.path, got, tc.want)
		}
	}
}

// The preloaded log's folder is the run's own, beside agentbox's
// temporary folders, and the box must see it at its own path; a folder
// LD_PRELOAD cannot name, or one the box does not see, leaves the log off
// with the reason.
func TestPlanPreload(t *testing.T) {
	root := plan.Mount{Stage: plan.StageRoot, Op: plan.ROBind, Path: "/", Access: plan.ReadOnly}
	hideBase := func(base string) plan.Mount {
		return plan.Mount{Stage: plan.StageTmp, Op: plan.HideDir, Path: base, Access: plan.Hidden}
	}
	tests := []struct {
		name    string
		base    string
		mounts  []plan.Mount
		want    string // Log.Preload
		wantWhy string
	}{
		{name: "in the runtime folder", base: "/run/user/1000/agentbox/tmp",
			mounts: []plan.Mount{root, hideBase("/run/user/1000/agentbox/tmp")}, want: "/run/user/1000/agentbox/fslog-0123456789ab"},
		{name: "in a writable home", base: "/home/u/.local/state/agentbox/tmp",
			mounts: []plan.Mount{root, {Stage: plan.StageWritable, Op: plan.Bind, Path: "/home/u", Access: plan.ReadWrite},
				{Stage: plan.StageReadOnly, Op: plan.ROBind, Path: "/home/u/.local/state/agentbox", Access: plan.ReadOnly}},
			want: "/home/u/.local/state/agentbox/fslog-0123456789ab"},
		{name: "a space", base: "/home/my user/.local/state/agentbox/tmp", mounts: []plan.Mount{root},
			wantWhy: "its folder /home/my user/.local/state/agentbox/fslog-0123456789ab holds a space, which LD_PRELOAD cannot name"},
		{name: "a colon", base: "/home/a:b/.local/state/agentbox/tmp", mounts: []plan.Mount{root},
			wantWhy: "its folder /home/a:b/.local/state/agentbox/fslog-0123456789ab holds \":\", which LD_PRELOAD cannot name"},
		{name: "a dollar", base: "/home/$x/.local/state/agentbox/tmp", mounts: []plan.Mount{root},
			wantWhy: "its folder /home/$x/.local/state/agentbox/fslog-0123456789ab holds \"$\", which LD_PRELOAD cannot name"},
		{name: "under the box's own /tmp", base: "/tmp/h/.local/state/agentbox/tmp",
			mounts:  []plan.Mount{root, {Stage: plan.StageTmp, Op: plan.Bind, Source: "/tmp/h/.local/state/agentbox/tmp/p", Path: "/tmp", Access: plan.ReadWrite}},
			wantWhy: "its folder /tmp/h/.local/state/agentbox/fslog-0123456789ab is not visible in the box (/tmp is bind)"},
		{name: "hidden", base: "/home/u/.local/state/agentbox/tmp",
			mounts:  []plan.Mount{root, {Stage: plan.StageDeny, Op: plan.HideDir, Path: "/home/u/.local", Access: plan.Hidden}},
			wantWhy: "its folder /home/u/.local/state/agentbox/fslog-0123456789ab is not visible in the box (/home/u/.local is hide-dir)"},
		{name: "no folder", wantWhy: "no folder of agentbox's own for it"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &plan.Plan{RunID: "0123456789ab", Tmp: plan.Tmp{Base: tc.base}, Mounts: tc.mounts}
			why := PlanPreload(p)
			if why != tc.wantWhy {
				t.Errorf("PlanPreload: %q, want %q", why, tc.wantWhy)
			}
			if p.Log.Preload != tc.want {
				t.Errorf("Log.Preload = %q, want %q", p.Log.Preload, tc.want)
			}
			var want []plan.Prepare
			if tc.want != "" {
				want = []plan.Prepare{{Path: tc.want, Mode: 0o700, Fresh: true, Private: true,
					Origin: plan.Origin{Key: "log.filesystem (the preloaded log's library and socket)"}}}
			}
			if diff := cmp.Diff(want, p.Prepare); diff != "" {
				t.Errorf("Prepare (-want +got):\n%s", diff)
			}
		})
	}
}
