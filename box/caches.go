package box

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/agentbox/agentbox/cache"
	"github.com/agentbox/agentbox/policy"
)

// CachesOptions are what `agentbox caches` is asked to do.
type CachesOptions struct {
	// Tools limits the listing or clearing to these tools; all when empty.
	Tools []string
	// Clear removes the caches of the current workspace (every workspace
	// with All).
	Clear bool
	All   bool
	JSON  bool
}

// Caches lists the private package and build caches agentbox keeps per
// workspace (under its state folder), marking the one a run here would
// use, or clears them. The current workspace is the one the request
// resolves to (the working folder, --workspace, the policies).
func Caches(req Request, o CachesOptions, w io.Writer) error {
	for _, t := range o.Tools {
		if _, ok := cache.Lookup(t); !ok {
			return hint(fmt.Errorf("caches: unknown tool %q", t), "known: "+strings.Join(cache.Names(), ", "))
		}
	}
	env, err := World()
	if err != nil {
		return err
	}
	root := cache.Root(policy.StateDir(env))
	current := currentCaches(req, env)
	if o.Clear {
		return clearCaches(root, current, o, w)
	}
	entries, err := cache.List(root)
	if err != nil {
		return fmt.Errorf("listing %s: %w", root, err)
	}
	var shown []cache.Entry
	for _, e := range entries {
		if len(o.Tools) == 0 || contains(o.Tools, e.Tool) {
			shown = append(shown, e)
		}
	}
	if o.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Root    string        `json:"root"`
			Current string        `json:"current,omitempty"`
			Caches  []cache.Entry `json:"caches"`
		}{root, current, shown})
	}
	if len(shown) == 0 {
		of := ""
		if len(o.Tools) > 0 {
			of = " of " + strings.Join(o.Tools, ", ")
		}
		// A run names every tool's cache folder, and makes one only when
		// the tool first writes there.
		fmt.Fprintf(w, "no private cache%s holds anything yet in %s: a run makes a tool's cache when the tool first writes to it\n", of, root)
		return nil
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  workspace\ttool\tsize\tfiles\tlast change\tpath")
	for _, e := range shown {
		mark := " "
		if filepath.Dir(e.Path) == current {
			mark = "*"
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%s\t%d\t%s\t%s\n", mark, e.Workspace, e.Tool, size(e.Bytes), e.Files, e.Modified.Format("2006-01-02 15:04"), e.Path)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if current != "" {
		fmt.Fprintln(w, "* the workspace a run here uses; agentbox caches --clear [TOOL...] empties it, --clear --all every workspace's")
	}
	return nil
}

// currentCaches is the private cache folder a run here would use, "" when
// the request does not resolve (an untrusted project policy, say).
func currentCaches(req Request, env policy.Env) string {
	layers, err := policy.Load(env, req.Flags)
	if err != nil {
		return ""
	}
	p, err := policy.Resolve(layers, env, []string{"true"}, policy.Options{AllowBroad: req.Flags.AllowBroad})
	if err != nil {
		return ""
	}
	return p.CacheDir
}

func clearCaches(root, current string, o CachesOptions, w io.Writer) error {
	var dirs []string
	switch {
	case o.All:
		list, err := os.ReadDir(root)
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		for _, d := range list {
			if d.IsDir() {
				dirs = append(dirs, filepath.Join(root, d.Name()))
			}
		}
	case current == "":
		return hint(fmt.Errorf("caches: no workspace resolves here"), "pass --all to clear every workspace's caches")
	default:
		dirs = []string{current}
	}
	var freed int64
	for _, d := range dirs {
		entries, _ := cache.List(filepath.Dir(d))
		for _, e := range entries {
			if filepath.Dir(e.Path) == d && (len(o.Tools) == 0 || contains(o.Tools, e.Tool)) {
				freed += e.Bytes
			}
		}
		if err := cache.Clear(d, o.Tools); err != nil {
			return err
		}
		if len(o.Tools) == 0 {
			os.Remove(d) // empty now; a run creates it again
		}
		fmt.Fprintf(w, "cleared %s\n", d)
	}
	fmt.Fprintf(w, "freed %s\n", size(freed))
	return nil
}

func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
