package winsandbox

import (
	"strings"

	"github.com/agentbox/agentbox/cache"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/provider"
)

// The box's home folder on Windows.
//
// The sandbox users cannot read the user's profile, so with USERPROFILE
// and HOME naming it every program that reads or writes a file in the
// home folder (~\.npmrc, ~\.node_repl_history, Git Bash's
// ~\.bash_history, ~\.config\…, ~\.python_history) got "access denied",
// which many handle worse than a missing file. When the workspace's
// private caches redirect %APPDATA% and %LOCALAPPDATA% (the "appdata"
// entry of [caches], private by default), the rest of the profile goes
// with them: the box gets a home folder of the workspace's own,
// <caches>\home, empty at first and kept between the workspace's runs, in
// USERPROFILE, HOME, HOMEDRIVE and HOMEPATH (git for Windows takes
// HOMEDRIVE and HOMEPATH before USERPROFILE when HOME is unset). The
// user's own home is never read there, and what the box writes there is
// used by no host program.
//
// What an agent CLI needs of the user's home stays reachable: its own
// folder (~\.claude, ~\.codex) is a writable root at its real path, and
// the CLI is told where by its own variable (CLAUDE_CONFIG_DIR,
// CODEX_HOME) when the user has not set it; git gets its global
// configuration from GIT_CONFIG_GLOBAL (gitconfig.go).

// boxHomeDir is the name of the box's home folder in the workspace's
// private caches folder.
const boxHomeDir = "home"

// BoxHome is the box's own home folder and what the spec adds for it.
type BoxHome struct {
	// Path is the folder, in the workspace's private caches folder.
	Path string `json:"path"`
	// Make are the folders made before the run (the home folder and
	// %APPDATA% and %LOCALAPPDATA% in the caches folder: programs take
	// them for granted).
	Make []string `json:"make"`
	// Env are the variables set in the box, NAME=value.
	Env []string `json:"env"`
}

// boxHome returns the box's home folder for p, or nil when the box keeps
// the user's USERPROFILE and HOME: no private caches folder, or
// %APPDATA% not redirected to it (caches.appdata off or host-read-only).
func boxHome(p *plan.Plan) *BoxHome {
	if p.CacheDir == "" || !winAbs(p.CacheDir) {
		return nil
	}
	var appdata *plan.Cache
	for i := range p.Caches {
		if p.Caches[i].Tool == "appdata" {
			appdata = &p.Caches[i]
		}
	}
	if appdata == nil || appdata.Mode != cache.Private || len(appdata.Dirs) == 0 {
		return nil
	}
	h := &BoxHome{Path: winJoin(p.CacheDir, boxHomeDir)}
	h.Make = append(h.Make, h.Path)
	for _, d := range appdata.Dirs {
		if winWithin(d.Path, p.CacheDir) {
			h.Make = append(h.Make, d.Path)
		}
	}
	h.Env = append(h.Env, "USERPROFILE="+h.Path, "HOME="+h.Path)
	if len(h.Path) > 2 && h.Path[1] == ':' {
		h.Env = append(h.Env, "HOMEDRIVE="+h.Path[:2], "HOMEPATH="+h.Path[2:])
	}
	// The agent CLI's own folder by its own variable, which it would
	// otherwise look for in the box's home.
	if name := p.Provider.Name; name != "" && p.Identity.Home != "" {
		for _, pr := range provider.Builtin() {
			if pr.Name != name || pr.HomeVar == "" || len(pr.Writable) == 0 || envGet(p.Environ, pr.HomeVar) != "" || hasVar(p.Provider.ConfinedEnv, pr.HomeVar) {
				continue
			}
			rel, ok := strings.CutPrefix(pr.Writable[0], "~/")
			if !ok {
				continue
			}
			h.Env = append(h.Env, pr.HomeVar+"="+winJoin(p.Identity.Home, strings.ReplaceAll(rel, "/", `\`)))
		}
	}
	return h
}

// hasVar reports whether env (NAME=value) sets name, case-insensitively.
func hasVar(env []string, name string) bool {
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok && strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}
