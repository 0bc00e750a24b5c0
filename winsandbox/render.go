package winsandbox

import (
	"fmt"
	"strings"
)

// Render prints the spec one fact per line, in the order Run applies it; the
// golden files and `agentbox plan` on Windows use this form.
func (s *Spec) Render() string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	p("group %s", s.Group)
	for _, u := range s.Users {
		if u == s.User {
			p("user %s (runs the command)", u)
		} else {
			p("user %s", u)
		}
	}
	for _, c := range s.Capabilities {
		p("capability %s %s", c.SID, c.Root)
	}
	for _, a := range s.ACEs {
		kind := "allow"
		if a.Deny {
			kind = "deny"
		}
		var flags []string
		if a.Inherit {
			flags = append(flags, "inherit")
		}
		if a.IfUsersCannotRead {
			flags = append(flags, "if-users-cannot-read")
		}
		if !a.Deny {
			// A grant lasts only while a run holds it (acl.go).
			flags = append(flags, "for-the-run")
		}
		f := ""
		if len(flags) > 0 {
			f = " [" + strings.Join(flags, ",") + "]"
		}
		p("ace %s %s %s (0x%x)%s %s  # %s", a.Path, kind, a.Trustee, FileRights(a.Rights), f, a.Rights, a.Origin)
	}
	for _, r := range s.Firewall {
		ports := ""
		if r.RemotePorts != "" {
			ports = " ports " + r.RemotePorts
		}
		p("firewall %q %s %s %s remote %s%s user %s", r.Name, r.Direction, r.Action, r.Protocol, r.RemoteAddresses, ports, r.LocalUserAuthorizedList)
	}
	for _, f := range s.Filters {
		match := ""
		if f.Protocol != 0 {
			match += fmt.Sprintf(" protocol %d", f.Protocol)
		}
		if f.RemoteV4 != "" {
			match += " remote " + f.RemoteV4
		}
		if f.RemotePort != 0 {
			match += fmt.Sprintf(" remote-port %d", f.RemotePort)
		}
		ip := "v4"
		if f.IPv6 {
			ip = "v6"
		}
		action := "block"
		if f.Permit {
			action = "permit"
		}
		if f.Weight != 0 {
			action += fmt.Sprintf(" weight %d", f.Weight)
		}
		p("wfp %q %s %s %s%s user {%s} key %s", f.Name, action, f.Layer, ip, match, OfflineUser, f.Key)
	}
	if s.ProxyPort != 0 {
		p("proxy 127.0.0.1:%d (agentbox's allowlist proxy; it serves the processes of this run's job only)", s.ProxyPort)
	}
	for _, ph := range s.Placeholders {
		p("placeholder %s (an empty folder, read-only for the box, during the run)", ph)
	}
	if s.Home != nil {
		p("home %s (the box's own home folder, in USERPROFILE, HOME, HOMEDRIVE and HOMEPATH; made before the run with %s)", s.Home.Path, strings.Join(s.Home.Make[1:], ", "))
	}
	for _, g := range s.GitPlaceholders {
		p("placeholder %s %q (a file of agentbox's, read-only for the box, during the run)", g.Path, g.Content)
	}
	for _, f := range s.Git {
		p("git-file %s %q", f.Path, f.Content)
	}
	if s.Refuse != nil {
		p("refuse %d %s", s.Refuse.Status, s.Refuse.Reason)
	}
	sp := s.Spawn
	if sp.Application != "" {
		p("spawn application %s", sp.Application)
	}
	p("spawn command-line %s", sp.CommandLine)
	p("spawn cwd %s", sp.Cwd)
	// The runner adds its logon SID and Everyone (restrictedToken).
	p("spawn restricting-sids %s (and the runner's logon SID, Everyone)", strings.Join(sp.RestrictingSIDs, " "))
	if l := sp.Limits; l.ActiveProcesses != 0 || l.MemoryBytes != 0 || l.CPUSeconds != 0 {
		p("spawn limits processes=%d memory=%d cpu=%ds", l.ActiveProcesses, l.MemoryBytes, l.CPUSeconds)
	}
	p("spawn desktop a window station and desktop of the run's own (%s<random>\\%s), for the runner and the command", stationPrefix, privateDesk)
	p("spawn ui-restrictions %s (both jobs: the runner's and the command's)", uiLimitText(sp.Limits.UI))
	for _, kv := range sp.Env {
		p("env %s", kv)
	}
	for _, n := range s.Notes {
		p("note %s", n)
	}
	return b.String()
}
