package seatbelt

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agentbox/agentbox/plan"
)

// ProxyPortParam is the profile parameter that holds the allowlist proxy's
// port, which only the run knows: sandbox-exec gets it as
// -D PROXY_PORT=N, so the profile `agentbox plan --profile` prints is the
// profile that runs, byte for byte.
const ProxyPortParam = "PROXY_PORT"

// Devices are the device nodes the box may open, each by its exact path:
// never a folder of per-session nodes such as the other terminals. /dev/tty
// is the box's own controlling terminal, whichever it is; /dev/fd holds
// the box's own descriptors.
var Devices = []string{"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/tty"}

// Region is one part of the file system with one access: the subtree at
// Path, less the subtrees of Except (rules that come later in the plan and
// lie within it).
type Region struct {
	Path   string      `json:"path"`
	Access plan.Access `json:"access"`
	Except []string    `json:"except,omitempty"`
	Origin string      `json:"origin,omitempty"`
}

// Rules is the plan as Seatbelt sees it: what may be read and written,
// what stays where it is, the network, and the box's temporary folder.
type Rules struct {
	// Read and Write are the regions whose files the box may read, and
	// write (create, change, remove, rename).
	Read  []Region `json:"read"`
	Write []Region `json:"write,omitempty"`
	// Pinned folders cannot be renamed or removed, although what is in
	// them may be written.
	Pinned []string `json:"pinned,omitempty"`
	// Hidden are the paths the box may neither read nor write (deny list,
	// other workspaces, credentials, the host's /tmp): Seatbelt refuses
	// them; unlike a mount, the name stays visible in its folder.
	Hidden []string `json:"hidden,omitempty"`
	// Network is the plan's mode; Sockets the unix sockets the box may
	// connect to outside its writable regions (network.unix_sockets).
	Network string   `json:"network"`
	Sockets []string `json:"sockets,omitempty"`
	// Tmpdir is the box's TMPDIR: Seatbelt cannot put a folder over /tmp,
	// so the box's temporary folder is a folder of its own in place.
	Tmpdir string `json:"tmpdir,omitempty"`
	// Guards are the paths host programs run or obey inside the writable
	// roots (git hooks and config, agent CLIs' settings...), refused to
	// the box for the whole run whether they exist or not.
	Guards []string `json:"guards,omitempty"`
	// Controls are the control files (paths relative to any folder) that
	// the box may not create or change at any depth of a writable root.
	Controls []string `json:"controls,omitempty"`
}

// layer is one mount of the plan reduced to what Seatbelt can say of it:
// a subtree and its access, in plan order.
type layer struct {
	path   string
	access plan.Access
	origin string
}

// Translate turns the plan's mount list into Seatbelt's regions. The mount
// list is ordered: a later mount covers what an earlier one put at or
// below its path. Seatbelt has no mounts, so a path's access is that of
// the last mount at or above it, and each region is a subtree less the
// subtrees later mounts take over. A bind whose source is not its path
// cannot be remapped: the path is hidden and the source gets the access in
// place (the box's /tmp is its own folder, named by TMPDIR). /proc does not
// exist on macOS; the fresh /dev becomes the host's /dev hidden but for
// the exact nodes in Devices. A path that cannot be written in a profile
// (a control character, or not absolute) is an error, never left out.
func Translate(p *plan.Plan) (Rules, error) {
	var ls []layer
	var pinned []string
	add := func(path string, a plan.Access, origin string) {
		ls = append(ls, layer{path: path, access: a, origin: origin})
	}
	for _, m := range p.Mounts {
		origin := m.Origin.String()
		switch m.Op {
		case plan.Proc:
			// No /proc on macOS.
		case plan.Dev:
			add(m.Path, plan.Hidden, origin)
		case plan.Pin:
			pinned = append(pinned, m.Path)
		case plan.RemountRO:
			// The mount at exactly this path becomes read-only; what was
			// mounted below it keeps its own access.
			for i := len(ls) - 1; i >= 0; i-- {
				if ls[i].path == m.Path {
					if ls[i].access == plan.ReadWrite {
						ls[i].access = plan.ReadOnly
					}
					break
				}
			}
		case plan.Tmpfs:
			// An empty folder of the box's own over a host folder: the
			// host's stays out of reach. The box's own /tmp is the bind
			// that follows it, if any.
			add(m.Path, plan.Hidden, origin)
		case plan.HideDir, plan.HideFile:
			add(m.Path, plan.Hidden, origin)
		case plan.Bind, plan.ROBind:
			if src := m.Src(); src != m.Path {
				add(m.Path, plan.Hidden, origin)
				add(src, m.Access, origin)
				continue
			}
			add(m.Path, m.Access, origin)
		default:
			return Rules{}, fmt.Errorf("seatbelt: %s %s: a mount operation this backend does not know", m.Op, m.Path)
		}
	}
	r := Rules{Network: p.Network.Mode, Pinned: pinned, Sockets: p.Network.UnixSockets, Tmpdir: tmpDir(p)}
	for i, l := range ls {
		if !expressible(l.path) {
			return Rules{}, fmt.Errorf("seatbelt: %q (%s): a path a profile cannot name", l.path, l.origin)
		}
		covered := false
		var except []string
		for _, later := range ls[i+1:] {
			switch {
			case plan.Within(l.path, later.path):
				covered = true
			case plan.Within(later.path, l.path) && !contains(except, later.path):
				except = append(except, later.path)
			}
		}
		if covered {
			continue
		}
		reg := Region{Path: l.path, Access: l.access, Except: except, Origin: l.origin}
		switch l.access {
		case plan.ReadWrite:
			r.Read = append(r.Read, reg)
			r.Write = append(r.Write, reg)
		case plan.ReadOnly:
			r.Read = append(r.Read, reg)
		case plan.Hidden:
			if !contains(r.Hidden, l.path) {
				r.Hidden = append(r.Hidden, l.path)
			}
		}
	}
	for _, s := range append(append([]string{}, pinned...), r.Sockets...) {
		if !expressible(s) {
			return Rules{}, fmt.Errorf("seatbelt: %q: a path a profile cannot name", s)
		}
	}
	if r.Tmpdir != "" && !expressible(r.Tmpdir) {
		return Rules{}, fmt.Errorf("seatbelt: %q (TMPDIR): a path a profile cannot name", r.Tmpdir)
	}
	return r, nil
}

// tmpDir is the box's TMPDIR: its own folder in place of /tmp.
func tmpDir(p *plan.Plan) string {
	switch p.Tmp.Mode {
	case plan.TmpWorkspace, plan.TmpPrivate:
		return p.Tmp.HostDir
	case plan.TmpHost:
		return "/tmp"
	}
	return ""
}

// expressible reports whether path can stand in a profile: an absolute
// path with no control character and no double quote (a writable root
// stands inside a regular expression literal, #"…", which has no escape
// for one).
func expressible(path string) bool {
	if !strings.HasPrefix(path, "/") {
		return false
	}
	for _, c := range path {
		if c < 0x20 || c == 0x7f || c == '"' {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Quote writes s as an SBPL string literal.
func Quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		if c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	b.WriteByte('"')
	return b.String()
}

// Profile writes the SBPL profile of r. Every allow is narrowed by
// require-not rather than followed by a deny, so that no rule depends on
// how Seatbelt orders an allow and a deny that both match.
func Profile(r Rules) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("(version 1)\n")
	w("; agentbox: deny everything not allowed below.\n")
	w("(deny default)\n\n")
	w("; Processes: run programs and fork; signals and process information only\n")
	w("; within the box (its own tree, the same sandbox).\n")
	w("(allow process-exec process-fork)\n")
	w("(allow signal (target same-sandbox))\n")
	w("(allow process-info* (target same-sandbox))\n\n")
	w("; What nearly every program reads to start: system settings and preferences,\n")
	w("; the kernel's read-only facts.\n")
	w("(allow sysctl-read)\n")
	w("(allow user-preference-read)\n\n")
	w("; Mach services a command-line program needs: logging, user and group\n")
	w("; lookups, the temporary-folder helper, certificate trust, name resolution.\n")
	w("(allow mach-lookup\n")
	for _, s := range machServices {
		w("  (global-name %s)\n", Quote(s))
	}
	w(")\n\n")
	w("; POSIX shared memory and semaphores (Python's multiprocessing, node).\n")
	w("(allow ipc-posix-shm ipc-posix-sem)\n\n")
	w("; Reads: the host, less what the plan hides.\n")
	w("(allow file-read*\n")
	for _, reg := range r.Read {
		w("  %s\n", region(reg))
	}
	w(")\n")
	w("; The box's own descriptors and the exact device nodes it may open.\n")
	w("(allow file-read* file-write* file-ioctl\n")
	w("  (subpath \"/dev/fd\")\n")
	for _, d := range Devices {
		w("  (literal %s)\n", Quote(d))
	}
	w(")\n\n")
	w("; Writes: the writable roots, less the read-only paths inside them and\n")
	w("; less the pinned folders themselves.\n")
	if len(r.Write) > 0 {
		w("(allow file-write*\n")
		for _, reg := range r.Write {
			w("  %s\n", writable(reg, r))
		}
		w(")\n")
	}
	w("\n")
	w("; Network: %s.\n", r.Network)
	switch r.Network {
	case plan.NetOpen:
		w("; Internet sockets only: a host service behind a unix socket is no more the\n")
		w("; box's in open mode than in any other.\n")
		w("(allow network-outbound (remote ip \"*:*\"))\n")
		w("(allow network-inbound network-bind (local ip \"*:*\"))\n")
		w("(allow system-socket)\n")
	case plan.NetAllowlist:
		w("; Only agentbox's proxy on the host's loopback, whose port only the run knows.\n")
		w("(allow network-outbound (remote tcp (string-append \"localhost:\" (param %s))))\n", Quote(ProxyPortParam))
	default:
		w("; No network: nothing but the unix sockets below.\n")
	}
	sockets := socketRegions(r)
	if len(sockets) > 0 {
		w("; Unix sockets inside the writable roots, and those the policy names.\n")
		w("(allow network-outbound network-bind network-inbound\n")
		for _, s := range sockets {
			w("  %s\n", s)
		}
		w(")\n")
	}
	return b.String()
}

// machServices are the Mach services the box may look up: what the peers
// found command-line programs cannot start without, and nothing that
// reaches the user's session (the pasteboard, window server, launch
// services that open apps).
var machServices = []string{
	"com.apple.system.logger",
	"com.apple.system.notification_center",
	"com.apple.system.opendirectoryd.libinfo",
	"com.apple.system.opendirectoryd.membership",
	"com.apple.bsd.dirhelper",
	"com.apple.logd",
	"com.apple.trustd.agent",
	"com.apple.SecurityServer",
	"com.apple.ocspd",
	"com.apple.SystemConfiguration.DNSConfiguration",
	"com.apple.SystemConfiguration.configd",
	"com.apple.cfprefsd.daemon",
	"com.apple.cfprefsd.agent",
	"com.apple.coreservices.launchservicesd",
}

// region is the filter for reg: its subtree less its exceptions.
func region(reg Region) string {
	parts := regionParts(reg)
	if len(parts) == 1 {
		return parts[0]
	}
	return "(require-all " + strings.Join(parts, " ") + ")"
}

// regionParts are the filters of reg: its subtree, then one require-not a
// later rule inside it.
func regionParts(reg Region) []string {
	parts := []string{"(subpath " + Quote(reg.Path) + ")"}
	for _, e := range reg.Except {
		parts = append(parts, "(require-not (subpath "+Quote(e)+"))")
	}
	return parts
}

// writable is the filter of the writable region reg: its subtree less its
// exceptions, the pinned folders themselves (not what is in them), the
// guards and, at any depth, the control files.
func writable(reg Region, r Rules) string {
	parts := regionParts(reg)
	for _, p := range r.Pinned {
		if plan.Within(p, reg.Path) {
			parts = append(parts, "(require-not (literal "+Quote(p)+"))")
		}
	}
	for _, g := range r.Guards {
		if plan.Within(g, reg.Path) && !contains(reg.Except, g) {
			parts = append(parts, "(require-not (subpath "+Quote(g)+"))")
		}
	}
	if len(r.Controls) > 0 {
		parts = append(parts, "(require-not (regex #\""+controlRegex(reg.Path, r.Controls)+"\"))")
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(require-all\n    " + strings.Join(parts, "\n    ") + ")"
}

// socketRegions are the unix-socket filters: inside every writable region
// (less its exceptions) and each socket the policy names.
func socketRegions(r Rules) []string {
	var out []string
	for _, reg := range r.Write {
		out = append(out, region(reg))
	}
	socks := append([]string{}, r.Sockets...)
	sort.Strings(socks)
	for _, s := range socks {
		out = append(out, "(literal "+Quote(s)+")")
	}
	return out
}
