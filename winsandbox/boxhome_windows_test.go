package winsandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/cache"
	"github.com/agentbox/agentbox/plan"
)

// TestWindowsRunBoxHome runs a plan with the workspace's private caches
// through the whole run path under Wine: the command's USERPROFILE and
// HOME are the workspace's own home folder, which exists (made before
// the run, with %APPDATA% there), and the command can write in it.
func TestWindowsRunBoxHome(t *testing.T) {
	me := wineSetup(t)
	w := New()
	project := tempDir(t)
	caches := filepath.Join(tempDir(t), "caches", "proj")
	tmp := filepath.Join(tempDir(t), "agentbox-"+me)
	roaming := filepath.Join(caches, "appdata-roaming")
	p := winePlan(project, tmp, "RUN", plan.Network{Mode: plan.NetOpen}, "cmd", "/d", "/c",
		`echo [%USERPROFILE%] [%HOME%]& echo x>%USERPROFILE%\.node_repl_history& type %USERPROFILE%\.node_repl_history& if exist %APPDATA%\nul echo appdata-there`)
	p.Mounts = append(p.Mounts, plan.Mount{Stage: plan.StageWritable, Op: plan.Bind, Path: caches, Access: plan.ReadWrite})
	p.Prepare = append(p.Prepare, plan.Prepare{Path: filepath.Dir(caches), Mode: 0o700}, plan.Prepare{Path: caches, Mode: 0o700})
	p.CacheDir = caches
	p.Caches = []plan.Cache{{Tool: "appdata", Mode: cache.Private, Dirs: []plan.CacheDir{{Path: roaming, Var: "APPDATA=" + roaming}}}}
	p.Environ = append(p.Environ, "APPDATA="+roaming)
	if err := w.Complete(p); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	code, out, err := wineRun(w, p)
	home := filepath.Join(caches, "home")
	if err != nil || code != 0 || !strings.Contains(out, "["+home+"] ["+home+"]") || !strings.Contains(out, "appdata-there") || !strings.Contains(out, "x\r\n") {
		t.Errorf("run: status %d, output %q, error %v; want USERPROFILE and HOME %s, %%APPDATA%% there, a file written at home", code, out, err, home)
	}
	if _, err := os.Stat(filepath.Join(home, ".node_repl_history")); err != nil {
		t.Errorf("the box's file at home: %v", err)
	}
}
