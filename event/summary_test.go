package event

import "testing"

// TestUnseenLineWords: an ignored tree and an untracked folder are called
// so, one folder is "1 folder", and a change reported twice is named once.
func TestUnseenLineWords(t *testing.T) {
	evs := []Event{
		{Kind: Unseen, Path: "/p/build", Action: "ignored tree", Detail: "1 folder changed: git ignores it"},
		{Kind: Unseen, Path: "/p/build", Action: "ignored tree", Detail: "1 folder changed: git ignores it"},
		{Kind: Unseen, Path: "/p/node_modules", Action: "untracked tree", Detail: "3 folders changed, 1 new or changed program: …"},
	}
	got := UnseenLine(evs, "r1")
	want := "agentbox: out of git's sight the box changed ignored tree: /p/build (1 folder); inside untracked folder: /p/node_modules (3 folders); agentbox log --run r1 lists them"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
