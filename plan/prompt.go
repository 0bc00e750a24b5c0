package plan

import (
	"fmt"
	"strings"
)

// Prompt is the short notice an agent can be given about its sandbox:
// what it can write, what /tmp is, what is hidden and the network. It is
// made from the plan that runs, so it cannot drift from what is enforced.
func (p *Plan) Prompt(backend string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are running inside an agentbox sandbox (%s backend).\n", backend)
	fmt.Fprintf(&b, "- You can write only in: %s.\n", strings.Join(p.writableForPrompt(), ", "))
	fmt.Fprintln(&b, "- Everything else on this machine is read-only; writes there fail with \"Read-only file system\" or \"Permission denied\".")
	switch p.Tmp.Mode {
	case TmpWorkspace:
		fmt.Fprintln(&b, "- /tmp (TMPDIR) is private to this workspace and shared by its runs.")
	case TmpPrivate:
		fmt.Fprintln(&b, "- /tmp (TMPDIR) is empty and private to this run; it is gone afterwards.")
	case TmpHost:
		fmt.Fprintln(&b, "- /tmp is the machine's shared /tmp.")
	}
	if d := p.Denied(); len(d) > 0 {
		fmt.Fprintf(&b, "- Hidden (empty or inaccessible): %s.\n", strings.Join(d, ", "))
	}
	if p.Workspace.Root != "" {
		fmt.Fprintf(&b, "- Other workspaces under %s are hidden.\n", p.Workspace.Root)
	}
	switch p.Network.Mode {
	case NetOpen:
		fmt.Fprintln(&b, "- The network is open.")
	case NetNone:
		fmt.Fprintln(&b, "- There is no network (only loopback inside the sandbox).")
	case NetAllowlist:
		fmt.Fprintf(&b, "- The network is limited to: %s (through the proxy in HTTP_PROXY/ALL_PROXY).\n", strings.Join(p.Network.Allow, ", "))
	}
	if p.Workspace.TaskDir != "" {
		fmt.Fprintf(&b, "- Write your work under the task folder %s, not the workspace root.\n", p.Workspace.TaskDir)
	}
	return b.String()
}

func (p *Plan) writableForPrompt() []string {
	var out []string
	for _, w := range p.Writable() {
		if w == "/tmp" {
			continue
		}
		out = append(out, w)
	}
	if len(out) == 0 {
		return []string{"nothing but /tmp"}
	}
	return out
}
