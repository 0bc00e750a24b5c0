package winsandbox

import (
	"strings"

	"github.com/agentbox/agentbox/hostexec"
)

// git's global configuration for the box, the pure half.
//
// The box's git runs as a sandbox user, which cannot read the caller's
// profile: git warns "Permission denied" for the caller's .gitconfig and
// XDG files, and a commit fails for want of user.name. Granting the box
// read on .gitconfig would hand it what that file may hold besides
// (credential helpers, tokens in url.*.insteadOf or http.extraHeader).
// So the box gets a global configuration of its own (GIT_CONFIG_GLOBAL,
// which replaces both ~/.gitconfig and the XDG file): the few variables
// of the caller's global configuration that say who commits and how files
// are checked in and out, and copies of the caller's global ignore and
// attributes files, so that what the caller's git ignores the box's git
// ignores too (an agent's `git add -A` does not pick up what the caller
// keeps out). It is written per run into the box's temporary folder
// (the box may change it: it is the box's own git's configuration, which
// no host program reads) and removed afterwards. The repository's own
// configuration still comes after it, as for the caller's git.

// gitKeys are the variables of the caller's global configuration the
// box's git gets. Nothing that names a program (aliases, credential
// helpers, editors, pagers, hooks, filters) or may hold a secret.
var gitKeys = []struct{ section, key string }{
	{"user", "name"}, {"user", "email"},
	{"core", "autocrlf"}, {"core", "eol"}, {"core", "safecrlf"},
	{"init", "defaultbranch"},
}

// GitFacts are the caller's global git configuration as read from the
// profile: its variables (plain include.path files followed; includeIf
// is not, so an identity chosen by includeIf does not reach the box), and
// the global ignore and attributes files' content ("" when there is none).
type GitFacts struct {
	Vars       []hostexec.ConfigVar
	Ignore     string
	Attributes string
}

// GitFile is one file of the box's git configuration, written by Run.
type GitFile struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// gitGlobalFiles are the files git reads as the global configuration for
// environ and home, in the order git reads them (the later wins): the XDG
// file, then ~/.gitconfig. Git for Windows takes HOME when it is set, else
// the profile folder.
func gitGlobalFiles(environ []string, home string) (config []string, xdgGit string) {
	if h := envGet(environ, "HOME"); winAbs(h) {
		home = h
	}
	xdg := envGet(environ, "XDG_CONFIG_HOME")
	if !winAbs(xdg) {
		xdg = ""
		if home != "" {
			xdg = winJoin(home, ".config")
		}
	}
	if xdg != "" {
		xdgGit = winJoin(xdg, "git")
		config = append(config, winJoin(xdgGit, "config"))
	}
	if home != "" {
		config = append(config, winJoin(home, ".gitconfig"))
	}
	return config, xdgGit
}

// boxGit returns the files of the box's git configuration in dir, and the
// variable that points git at it; nothing when the caller chose a global
// configuration of their own (GIT_CONFIG_GLOBAL).
func boxGit(environ []string, facts *GitFacts, dir string) ([]GitFile, []string) {
	if facts == nil || dir == "" || envGet(environ, "GIT_CONFIG_GLOBAL") != "" {
		return nil, nil
	}
	var vars []hostexec.ConfigVar
	for _, k := range gitKeys {
		// Git reads the last value of a variable.
		if vs := hostexec.Values(facts.Vars, k.section, k.key); len(vs) > 0 {
			vars = append(vars, hostexec.ConfigVar{Section: k.section, Key: k.key, Value: vs[len(vs)-1]})
		}
	}
	config := winJoin(dir, "config")
	files := []GitFile{}
	// The global ignore and attributes files: copies, or the empty file,
	// so git does not look in the caller's profile (and warn) for them.
	for _, f := range []struct{ key, name, content string }{
		{"excludesfile", "ignore", facts.Ignore},
		{"attributesfile", "attributes", facts.Attributes},
	} {
		p := winJoin(dir, f.name)
		files = append(files, GitFile{Path: p, Content: f.content})
		vars = append(vars, hostexec.ConfigVar{Section: "core", Key: f.key, Value: strings.ReplaceAll(p, `\`, "/")})
	}
	files = append([]GitFile{{Path: config, Content: string(hostexec.WriteConfig(vars))}}, files...)
	return files, []string{"GIT_CONFIG_GLOBAL=" + config}
}

// gitSideFiles are the caller's global ignore and attributes files:
// core.excludesFile and core.attributesFile as the global configuration
// sets them (the last value; "~/" is the home folder), or git's defaults
// in the XDG folder.
func gitSideFiles(vars []hostexec.ConfigVar, xdgGit, home string) (ignore, attributes string) {
	pick := func(key, def string) string {
		vs := hostexec.Values(vars, "core", key)
		if len(vs) == 0 {
			if xdgGit == "" {
				return ""
			}
			return winJoin(xdgGit, def)
		}
		v := strings.ReplaceAll(vs[len(vs)-1], "/", `\`)
		if rest, ok := strings.CutPrefix(v, `~\`); ok && home != "" {
			return winJoin(home, rest)
		}
		if !winAbs(v) {
			return "" // relative to where git runs: not the caller's file
		}
		return v
	}
	return pick("excludesfile", "ignore"), pick("attributesfile", "attributes")
}
