//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With the host's /tmp shared (--tmp host) and agentbox's configuration,
// state and cache folders under /tmp (XDG_CONFIG_HOME, XDG_STATE_HOME and
// XDG_CACHE_HOME point there), the box still cannot change them: an agent
// that could would write a looser user config or trust its own project
// policy for the next run. Each attempt prints a marker when it works; the
// files must be unchanged on the host and nothing new may appear.
func TestHostTmpKeepsOwnFoldersReadOnly(t *testing.T) {
	w := newWorld(t)
	xdg, err := os.MkdirTemp("/tmp", "abit-xdg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(xdg) })
	config := filepath.Join(xdg, "config", "agentbox", "config.toml")
	store := filepath.Join(xdg, "state", "agentbox", "trusted")
	cacheDir := filepath.Join(xdg, "cache", "agentbox")
	const configText = "version = 1\n[network]\nmode = \"open\"\n"
	const storeText = ""
	write(t, config, configText)
	write(t, store, storeText)
	mkdir(t, cacheDir)
	w.env = append(w.env, "XDG_CONFIG_HOME="+filepath.Join(xdg, "config"),
		"XDG_STATE_HOME="+filepath.Join(xdg, "state"), "XDG_CACHE_HOME="+filepath.Join(xdg, "cache"))

	script := `
X=` + xdg + `
try() { if ( eval "$2" ) 2>/dev/null; then echo "BROKE:$1"; fi; }
try config-append 'printf "[sandbox]\nenforce = \"best-effort\"\n" >> $X/config/agentbox/config.toml'
try config-new 'echo x > $X/config/agentbox/new.toml'
try store-append 'echo "0000000000000000000000000000000000000000000000000000000000000000 /evil/.agentbox.toml" >> $X/state/agentbox/trusted'
try store-new 'echo x > $X/state/agentbox/new'
try cache-new 'echo x > $X/cache/agentbox/new'
try config-rename 'mv $X/config $X/config.old'
try state-rename 'mv $X/state $X/state.old'
try cache-rename 'mv $X/cache $X/cache.old'
try config-dir-rename 'mv $X/config/agentbox $X/config/agentbox.old'
try state-dir-rename 'mv $X/state/agentbox $X/state/agentbox.old'
echo done`
	r := w.sh([]string{"--tmp", "host"}, script)
	expectCode(t, r, 0)
	expectContains(t, "stdout", r.stdout, "done")
	if strings.Contains(r.stdout, "BROKE:") {
		t.Errorf("the box changed agentbox's own folders under the host's /tmp:\n%s", r)
	}
	for path, want := range map[string]string{config: configText, store: storeText} {
		if got, err := os.ReadFile(path); err != nil || string(got) != want {
			t.Errorf("%s on the host: %q, %v; want %q unchanged", path, got, err, want)
		}
	}
	for _, p := range []string{
		filepath.Join(xdg, "config", "agentbox", "new.toml"), filepath.Join(xdg, "state", "agentbox", "new"),
		filepath.Join(cacheDir, "new"), filepath.Join(xdg, "config.old"), filepath.Join(xdg, "state.old"),
		filepath.Join(xdg, "cache.old"), filepath.Join(xdg, "config", "agentbox.old"), filepath.Join(xdg, "state", "agentbox.old"),
	} {
		if exists(p) {
			t.Errorf("%s exists on the host: the box made it", p)
		}
	}
}

// The same when agentbox's folders under the host's /tmp do not exist yet:
// agentbox makes them before the run (0700) and keeps them read-only, so
// the box cannot plant a user config or a trust store for the next run.
func TestHostTmpMissingOwnFolders(t *testing.T) {
	w := newWorld(t)
	xdg, err := os.MkdirTemp("/tmp", "abit-xdg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(xdg) })
	w.env = append(w.env, "XDG_CONFIG_HOME="+filepath.Join(xdg, "config"),
		"XDG_STATE_HOME="+filepath.Join(xdg, "state"), "XDG_CACHE_HOME="+filepath.Join(xdg, "cache"))
	script := `
X=` + xdg + `
try() { if ( eval "$2" ) 2>/dev/null; then echo "BROKE:$1"; fi; }
try config 'mkdir -p $X/config/agentbox && printf "[sandbox]\nenforce = \"best-effort\"\n" > $X/config/agentbox/config.toml'
try store 'mkdir -p $X/state/agentbox && echo x > $X/state/agentbox/trusted'
try cache 'mkdir -p $X/cache/agentbox && echo x > $X/cache/agentbox/new'
try config-rename 'mv $X/config $X/config.old'
echo done`
	r := w.sh([]string{"--tmp", "host"}, script)
	expectCode(t, r, 0)
	expectContains(t, "stdout", r.stdout, "done")
	if strings.Contains(r.stdout, "BROKE:") {
		t.Errorf("the box made agentbox's own files under the host's /tmp:\n%s", r)
	}
	for _, p := range []string{
		filepath.Join(xdg, "config", "agentbox", "config.toml"), filepath.Join(xdg, "state", "agentbox", "trusted"),
		filepath.Join(xdg, "cache", "agentbox", "new"), filepath.Join(xdg, "config.old"),
	} {
		if exists(p) {
			t.Errorf("%s exists on the host: the box made it", p)
		}
	}
}
