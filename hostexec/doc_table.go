package hostexec

import (
	"fmt"
	"io"
	"strings"

	"github.com/agentbox/agentbox/provider"
)

// WriteRegistry writes the registry as Markdown tables, one per class of
// trigger: every entry with its program, where it applies, how it is kept
// and why. docs/host-programs.md holds this very output (a test makes sure
// it does), so the documentation lists exactly what every run keeps.
func WriteRegistry(w io.Writer, providers []provider.Provider) error {
	type row struct{ program, path, where, keep, why string }
	classes := []Trigger{OnCd, OnOpen, OnCommit, OnAgent, Loosens, AtLogin}
	rows := map[Trigger][]row{}
	project := func(s Spec) row {
		keep := "read-only (Landlock: restored); made during the run: moved away"
		switch {
		case s.Watch:
			keep = "not kept itself (" + s.Program + " asks again after any change)"
		case s.Block:
			keep = "read-only (Landlock: restored); missing at the top of a project: blocked; made elsewhere: moved away"
		case s.Harmless != HarmlessNever:
			keep = "read-only (Landlock: restored); made during the run: moved away unless it " + harmlessText[s.Harmless]
		}
		if s.Refs != RefsNone {
			keep += "; " + refsText[s.Refs]
		}
		return row{s.Program, s.Path, "any folder of a writable root", keep, s.Why}
	}
	for _, s := range projectSpecs(providers) {
		t := s.Trigger
		if t == "" {
			t = OnAgent
		}
		rows[t] = append(rows[t], project(s))
	}
	rows[OnCd] = append([]row{{"git", ".git (folders, files, symlinks), bare repositories, worktree and submodule folders",
		"any folder of a writable root, .git folders included",
		"config, config.worktree, commondir, hooks (wherever core.hooksPath leads), info/exclude and info/attributes read-only (Landlock: restored); every file a config includes, whatever the condition; made during the run: config rewritten to keys that run nothing, hooks moved away",
		"core.fsmonitor, core.pager, aliases, filters run on every git command; a prompt runs git status on every cd"}}, rows[OnCd]...)
	for _, m := range hookManagers {
		rows[OnCommit] = append(rows[OnCommit], row{m.Mark, strings.Join(m.Files, ", "),
			"the top of a work tree whose installed hooks call " + m.Mark,
			"read-only (Landlock: restored); missing at the top of the project: blocked; entry: and run: scripts they name kept too",
			"the installed hooks run what it says"})
	}
	rows[OnCommit] = append(rows[OnCommit],
		row{"git", "the files installed hooks name; programs they run through npx and the like (node_modules/.bin)", "the work tree", "read-only (in package trees, and under Landlock: restored)", "the hooks run them"},
		row{"npx", "the package of a program a hook or an agent CLI's command runs through npx and the like, and the packages it depends on (dependencies, optionalDependencies, peerDependencies, transitively, where require finds them)", "node_modules folders", "restored, one folder per package; a dependency not installed, or a NAME.js, .json or .node require would find before it: moved away after the run; beyond 1000 packages, or a package.json agentbox cannot read: the whole node_modules folder restored", "the program loads them"},
		row{"pre-commit", "pre_commit, every standard library module and every top-level module of the hook interpreter's site-packages, as NAME.py, .pyc, .so or a package folder", "the top of a work tree whose installed hook runs python -m pre_commit", "made during the run: moved away; one that exists: read-only (a namespace folder: its __init__ moved away if made)", "python -m puts the current folder first on the module path"},
		row{"pre-commit", "the interpreter its installed hook runs (INSTALL_PYTHON), the virtual environment's pyvenv.cfg and site-packages", "wherever it is, within a writable root", "the interpreter and pyvenv.cfg kept; a .pth or sitecustomize the box adds to site-packages moved away after the run", ".pth files and sitecustomize run at every start of the interpreter"})
	for _, s := range homeSpecs {
		keep := "with the home folder writable: read-only (Landlock: restored), missing: blocked; otherwise kept where it leads into a writable root (a symlink into a dotfiles repository)"
		if s.Sources {
			keep += "; what it sources is kept too, wherever it is"
		}
		rows[AtLogin] = append(rows[AtLogin], row{s.Program, "~/" + s.Path, "the home folder", keep, s.Why})
	}
	for _, c := range classes {
		if _, err := fmt.Fprintf(w, "\n### %s\n\n| program | path | where | how it is kept | why |\n|---|---|---|---|---|\n", strings.ToUpper(string(c[:1]))+string(c[1:])); err != nil {
			return err
		}
		for _, r := range rows[c] {
			if _, err := fmt.Fprintf(w, "| %s | `%s` | %s | %s | %s |\n", r.program, r.path, r.where, r.keep, r.why); err != nil {
				return err
			}
		}
	}
	return nil
}

var harmlessText = map[Harmless]string{
	HarmlessVersion: "names versions only (no path)",
	HarmlessRustup:  "names a toolchain and nothing else (read as rustup reads it: a channel name, or TOML with only channel, components, targets and profile)",
	HarmlessYarnrc:  "holds only settings that run and loosen nothing (read as YAML for .yarnrc.yml; nodeLinker, enableTelemetry and the like)",
}

var refsText = map[Refs]string{
	RefsShell:   "what it sources is kept",
	RefsDirenv:  "what it loads (source_env, dotenv, use nix/flake) is kept; folders it puts on PATH (PATH_add, layout node) are watched: a program there shadowing a command on your PATH is moved away after the run",
	RefsYarnrc:  "the release yarnPath or yarn-path names and the plugins are kept",
	RefsRustup:  "a toolchain path it names is kept",
	RefsBunfig:  "the preload scripts are kept",
	RefsMise:    "what [env] _.source and _.file load and [hooks] run is kept; _.path folders are watched",
	RefsToolVer: "a path: version's folder is kept",
	RefsEntries: "the scripts entry: and run: name are kept",
	RefsHgrc:    "the files it %includes, the extensions it loads by path and the scripts its hooks name are kept",
}
