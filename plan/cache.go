package plan

import (
	"fmt"
	"io"
	"strings"
)

// Cache is how the box gets one tool's package or build caches.
type Cache struct {
	// Tool is the tool's key in the [caches] table ("npm", "go", …).
	Tool string `json:"tool"`
	// Mode is "private", "host-read-only", "host-writable" or "off".
	Mode   string `json:"mode"`
	Origin Origin `json:"origin"`
	// Dirs are the tool's cache folders as the box uses them; none when
	// the mode is "off".
	Dirs []CacheDir `json:"dirs,omitempty"`
	// Reads are the host's own caches the box reads beneath its private
	// ones (go's build cache and module downloads): what the host has
	// built or fetched is used, what the box adds goes to its private
	// folders only. The host's folders stay read-only.
	Reads []CacheRead `json:"reads,omitempty"`
}

// CacheRead is a host cache the box reads, read-only, beneath its private
// one.
type CacheRead struct {
	// Host is the host's cache folder.
	Host string `json:"host"`
	// Var is the variable, NAME=value, that makes the tool read it. With
	// Prepend, the value goes before the value the variable has already
	// (in the environment, or the tool's own settings file), with a comma:
	// a list such as GOPROXY, whose inherited value may hold credentials
	// and so is not in the plan.
	Var     string `json:"var"`
	Prepend bool   `json:"prepend,omitempty"`
	// How says how the tool reads it.
	How string `json:"how"`
}

// CacheDir is one cache folder of a tool.
type CacheDir struct {
	// Path is the folder the tool uses in the box: the workspace's private
	// folder, or the host's own cache.
	Path string `json:"path"`
	// Host is the host's own cache folder (what the tool uses outside the
	// box).
	Host string `json:"host"`
	// Var is the variable, NAME=value, that points the tool at Path.
	Var string `json:"var"`
	// Also says what else the variable moves besides the cache.
	Also string `json:"also,omitempty"`
}

// writeCaches prints the caches section of `agentbox plan`: per tool, the
// mode, the variables that point the tool at its folders, and the rule,
// then the host caches each tool reads (with Fit's table marks).
func (p *Plan) writeCaches(w io.Writer) {
	if len(p.Caches) == 0 {
		return
	}
	e := Escape
	if p.CacheDir != "" {
		fmt.Fprintf(w, "caches:    %s (this workspace's own; the host's caches stay read-only unless a tool says host-writable)\n", e(p.CacheDir))
	} else {
		fmt.Fprintln(w, "caches:")
	}
	for _, c := range p.Caches {
		var vars []string
		for _, d := range c.Dirs {
			v := d.Var
			if p.CacheDir != "" {
				// The folder is on the caches: line already.
				v = strings.ReplaceAll(v, p.CacheDir+"/", "…/")
			}
			v = e(v)
			if d.Also != "" {
				v += " (also moves " + e(d.Also) + ")"
			}
			vars = append(vars, v)
		}
		fmt.Fprintf(w, "  %s\t%s\v%s\t(%s)\n", e(c.Tool), e(c.Mode), strings.Join(vars, ", "), e(c.Origin.String()))
	}
	for _, c := range p.Caches {
		for _, rd := range c.Reads {
			if rd.Host == "" {
				fmt.Fprintf(w, "  %s: %s (%s)\n", e(c.Tool), e(rd.How), e(rd.Var))
				continue
			}
			fmt.Fprintf(w, "  %s reads the host's %s, read-only: %s\n", e(c.Tool), e(rd.Host), e(rd.How))
		}
	}
}
