package event

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

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

// TestSummaryUnreachable: an allowed host that could not be reached is one
// line naming it and why, once per host; an allowed connection that was
// made and a denied one print nothing here (the refusal summary has
// denials). The log's line for the event says it too.
func TestSummaryUnreachable(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name string
		evs  []Event
		want string
	}{
		{"reached", []Event{{Kind: Net, Allowed: &yes, Proto: "connect", Target: "example.test:443"}}, ""},
		{"denied", []Event{{Kind: Net, Allowed: &no, Proto: "connect", Target: "evil.test:443", Reason: "no allow rule matches"}}, ""},
		{"refused, twice", []Event{
			{Kind: Net, Allowed: &yes, Proto: "connect", Target: "example.test:1", Unreachable: "connection refused (nothing listens there)"},
			{Kind: Net, Allowed: &yes, Proto: "http", Target: "example.test:1", Unreachable: "connection refused (nothing listens there)"},
		}, "agentbox: example.test:1 is allowed, but it cannot be reached: connection refused (nothing listens there) " +
			"(the box got 502 Bad Gateway)\n"},
		{"no name, socks", []Event{{Kind: Net, Allowed: &yes, Proto: "socks5", Target: "nx.test:80", Unreachable: "its name does not resolve (no such host)"}},
			"agentbox: nx.test:80 is allowed, but it cannot be reached: its name does not resolve (no such host) " +
				"(the box's SOCKS5 connect failed)\n"},
		{"escaped", []Event{{Kind: Net, Allowed: &yes, Proto: "connect", Target: "a\x1b[2J.test:1", Unreachable: "x"}},
			"agentbox: a\\x1b[2J.test:1 is allowed, but it cannot be reached: x (the box got 502 Bad Gateway)\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			s := &Summary{W: &b}
			for _, e := range tc.evs {
				s.Emit(e)
			}
			s.Close()
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
		})
	}
	e := Event{Kind: Net, Allowed: &yes, Proto: "connect", Target: "example.test:1", Reason: `matches allow rule "example.test"`,
		Unreachable: "connection refused (nothing listens there)"}
	want := `network allowed connect example.test:1 (matches allow rule "example.test"), but it cannot be reached: ` +
		"connection refused (nothing listens there)"
	if got := Describe(e); got != want {
		t.Errorf("Describe:\n got %s\nwant %s", got, want)
	}
}
