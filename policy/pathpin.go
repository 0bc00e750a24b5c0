package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/agentbox/agentbox/plan"
)

// A trusted project policy's paths are pinned by what they lead to, not by
// their text: `writable = ["out/gen"]` is inside the project when trusted,
// and a box that replaced out/gen with a link to a folder elsewhere would
// make that folder writable in the next run. Trust records every symbolic
// link each path of the policy leads through (the link and what it says);
// a run accepts a path only when every link on its way is one trust
// recorded, saying the same. A policy trusted before links were recorded
// has none: its paths must lead through no link.

// maxLinks is how many links a path may lead through, as the kernel's
// limit (ELOOP).
const maxLinks = 40

// linksOn returns the symbolic links met resolving the absolute path p
// part by part, as the kernel follows them (a link's path and its text),
// in the order met. A part that does not exist ends the walk: nothing
// below it can be a link yet.
func linksOn(fsys FS, p string) ([][2]string, error) {
	var out [][2]string
	cur, rest := splitPath(p)
	if cur == "" {
		return nil, fmt.Errorf("%s: not an absolute path", p)
	}
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		fi, err := fsys.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if len(out) >= maxLinks {
			return nil, fmt.Errorf("%s: too many levels of symbolic links", p)
		}
		target, err := fsys.Readlink(next)
		if err != nil {
			return nil, err
		}
		out = append(out, [2]string{next, target})
		root, parts := splitPath(target)
		if root != "" {
			cur = root
		}
		rest = append(parts, rest...)
	}
	return out, nil
}

// splitPath returns the root of p (its volume and a separator, "" for a
// relative path) and its names, on the separators of the OS.
func splitPath(p string) (string, []string) {
	vol := filepath.VolumeName(p)
	rest := p[len(vol):]
	root := ""
	if rest != "" && os.IsPathSeparator(rest[0]) {
		root = vol + string(filepath.Separator)
	}
	parts := strings.FieldsFunc(rest, func(r rune) bool { return r < 0x80 && os.IsPathSeparator(uint8(r)) })
	return root, parts
}

// pathEntries are the entries of l that name a path, each with its key.
func pathEntries(l *Layer) []keyedEntry {
	var out []keyedEntry
	for _, k := range []string{"filesystem.writable", "filesystem.read_only", "filesystem.deny", "network.unix_sockets"} {
		for _, e := range l.Lists[k] {
			out = append(out, keyedEntry{k, e})
		}
	}
	if e, ok := l.Scalars["workspace.root"]; ok {
		out = append(out, keyedEntry{"workspace.root", e})
	}
	for _, p := range l.Providers {
		for _, e := range p.Writable {
			out = append(out, keyedEntry{"providers." + p.Name + ".writable", e})
		}
	}
	for _, s := range l.Secrets {
		if s.File.Value != "" {
			out = append(out, keyedEntry{"network.secret.file", s.File})
		}
	}
	return out
}

type keyedEntry struct {
	key string
	e   Entry
}

// LinkedPath is a path of a policy that leads through symbolic links.
type LinkedPath struct {
	Key, Value string
	// Links are the links on its way, "link -> what it says" each.
	Links []string
	// Target is where it leads now ("" when it does not exist).
	Target string
}

// PathLinks returns the symbolic links the paths of l lead through in
// env (a link's path and its text: what trust records), and, for the
// message trust prints, each path that leads through any. A path that
// cannot be expanded or resolved is left out: resolution reports it.
func PathLinks(l *Layer, env Env) (map[string]string, []LinkedPath) {
	r := &resolver{env: env}
	links := map[string]string{}
	var linked []LinkedPath
	for _, ke := range pathEntries(l) {
		p, err := r.expand(ke.e)
		if err != nil {
			continue
		}
		on, err := linksOn(env.FS, p)
		if err != nil || len(on) == 0 {
			continue
		}
		lp := LinkedPath{Key: ke.key, Value: ke.e.Value}
		for _, l := range on {
			links[l[0]] = l[1]
			lp.Links = append(lp.Links, l[0]+" -> "+l[1])
		}
		lp.Target, _ = env.FS.EvalSymlinks(p)
		linked = append(linked, lp)
	}
	sort.SliceStable(linked, func(i, j int) bool { return linked[i].Key < linked[j].Key })
	return links, linked
}

// checkPinned refuses path p of entry e of a trusted project policy when
// it leads through a link that trust did not record as it is now.
func (r *resolver) checkPinned(e Entry, p string) error {
	l := r.pinned[e.Origin.File]
	if l == nil {
		return nil
	}
	on, err := linksOn(r.env.FS, p)
	if err != nil {
		return originError(e.Origin, fmt.Sprintf("%s: %v", p, err))
	}
	for _, link := range on {
		if t, ok := l.Links[link[0]]; ok && t == link[1] {
			continue
		}
		return originError(e.Origin, fmt.Sprintf("%s leads through the link %s -> %s, which is not what you trusted (a box may have made it): remove the link, or look at it and run agentbox trust %s",
			Escape(e.Value), Escape(link[0]), Escape(link[1]), Escape(l.File)))
	}
	return nil
}

// linkedEntry is a path of a layer trust does not pin (flags, variables,
// the user's configuration, an untrusted-free built-in) that leads
// through symbolic links.
type linkedEntry struct {
	e     Entry
	path  string
	links [][2]string
	// err is why the path could not be followed part by part: inside a
	// writable folder (a box may have made a part of it unreadable) the
	// path is refused, never taken as leading through no link.
	err error
}

// noteLinks records the links path p of entry e leads through, for
// checkLinked; a trusted project policy's paths are checked by
// checkPinned instead. A path that cannot be walked is left to the
// stages that use it.
func (r *resolver) noteLinks(e Entry, p string) {
	if r.pinned[e.Origin.File] != nil {
		return
	}
	on, err := linksOn(r.env.FS, p)
	if err != nil || len(on) > 0 {
		r.linked = append(r.linked, linkedEntry{e: e, path: p, links: on, err: err})
		return
	}
	if r.linkFree == nil {
		r.linkFree = map[string]Entry{}
	}
	r.linkFree[p] = e
}

// checkLinked refuses a path of any layer that leads through a symbolic
// link lying in a folder this plan lets the box write: a box may have made
// that link in an earlier run (`--writable build`, where the box replaced
// build with a link to a folder elsewhere). The path it leads to, given
// as such, is accepted.
func (r *resolver) checkLinked() error {
	// A path without a link when walked part by part, and through one
	// when a stage resolved it: a box may be swapping a folder on its way
	// while the plan is made, so that the rule lands on another file.
	if len(r.changed) > 0 {
		c := r.changed[0]
		return originError(c.e.Origin, fmt.Sprintf("%s changed while the plan was made: it had no symbolic link on its way, and now leads to %s (a box may be swapping a folder on its way): nothing ran; run again, or give the path it leads to if that is what you mean",
			Escape(c.e.Value), Escape(c.links[0][1])))
	}
	writable := r.p.Writable()
	for _, le := range r.linked {
		if le.err != nil {
			for _, w := range writable {
				if plan.Within(le.path, w) && le.path != w {
					return originError(le.e.Origin, fmt.Sprintf("%s cannot be followed part by part inside the writable folder %s (%v), so agentbox cannot tell whether a box made a link on its way: make it readable, or give the path it leads to",
						Escape(le.e.Value), Escape(w), le.err))
				}
			}
			continue
		}
		for _, link := range le.links {
			for _, w := range writable {
				if !plan.Within(link[0], w) || link[0] == w {
					continue
				}
				target, _ := r.env.FS.EvalSymlinks(le.path)
				if target == "" {
					target = "what it leads to"
				}
				return originError(le.e.Origin, fmt.Sprintf("%s leads through the link %s -> %s, in the writable folder %s (a box may have made it): give the path it leads to, %s, if that is what you mean",
					Escape(le.e.Value), Escape(link[0]), Escape(link[1]), Escape(w), Escape(target)))
			}
		}
	}
	return nil
}
