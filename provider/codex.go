package provider

import (
	"strings"
)

// CodexSandboxOff returns argv with Codex's own sandbox turned off
// (--sandbox danger-full-access right after the codex command at index i),
// for a Codex that agentbox confines: two nested sandboxes lock each other
// up. It leaves argv alone, with the reason, when the user already chose a
// sandbox mode — a flag, a -c sandbox_mode=… override, a profile, or
// sandbox_mode in one of the config files given — or asked for Codex's own
// sandbox with `codex sandbox`. The rule was checked against Codex 0.171.0
// (provider/VERIFIED.md): -s placed first is accepted by every subcommand.
func CodexSandboxOff(argv []string, i int, configs [][]byte) ([]string, string) {
	if i < 0 || i >= len(argv) {
		return argv, ""
	}
	rest := argv[i+1:]
	for j, a := range rest {
		if a == "--" {
			break
		}
		switch {
		case j == 0 && a == "sandbox":
			return argv, "left alone: `codex sandbox` asks for Codex's own sandbox"
		case a == "-s" || a == "--sandbox" || strings.HasPrefix(a, "--sandbox=") || (strings.HasPrefix(a, "-s") && len(a) > 2 && !strings.HasPrefix(a, "--")):
			return argv, "left alone: the command chooses a sandbox mode (" + a + ")"
		case a == "--dangerously-bypass-approvals-and-sandbox" || a == "--yolo" || a == "--approve-for-me":
			return argv, "left alone: the command chooses a sandbox mode (" + a + ")"
		case a == "-p" || a == "--profile" || strings.HasPrefix(a, "--profile="):
			return argv, "left alone: a Codex profile may choose the sandbox mode"
		case (a == "-c" || a == "--config") && j+1 < len(rest) && strings.HasPrefix(strings.TrimSpace(rest[j+1]), "sandbox_mode"):
			return argv, "left alone: the command sets sandbox_mode"
		case strings.HasPrefix(a, "--config=sandbox_mode") || strings.HasPrefix(a, "-csandbox_mode"):
			return argv, "left alone: the command sets sandbox_mode"
		}
	}
	for _, c := range configs {
		for _, line := range strings.Split(string(c), "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "[") {
				break // only the top-level key chooses the default mode
			}
			if k, _, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "sandbox_mode" {
				return argv, "left alone: sandbox_mode is set in Codex's config"
			}
		}
	}
	out := append([]string(nil), argv[:i+1]...)
	out = append(out, "--sandbox", "danger-full-access")
	out = append(out, rest...)
	return out, "Codex's own sandbox turned off (--sandbox danger-full-access): agentbox confines it"
}
