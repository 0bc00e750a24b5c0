package winsandbox

import (
	"fmt"
	"strings"
)

// Local accounts, the pure half: how setup names the sandbox group and
// users to LookupAccountName, and how it checks that the account found is
// this computer's own (the Win32 calls are in setup_windows.go).
//
// Local accounts live in the computer's account domain, which is named by
// the computer's NetBIOS name: at most 15 characters, upper case. The DNS
// host name (what os.Hostname returns) is another name; past 15
// characters, or when an administrator set them apart, `HOST\name` names
// no domain and the lookup fails. And a bare name is looked up in the
// computer's domain and then in the machine's Active Directory domain, so
// on a domain member a domain account of the same name could come back.
// So the name is qualified with the NetBIOS name, and what comes back is
// checked: its domain is that name and its SID lies in the computer's
// account domain.

// SID types of LookupAccountName (SID_NAME_USE).
const (
	sidTypeUser   = 1
	sidTypeDomain = 3
	sidTypeAlias  = 4 // a local group
)

// netbiosName is the computer's NetBIOS name: the one Windows reports
// (GetComputerNameEx(ComputerNameNetBIOS)), or, when it reports none, the
// one Windows derives from the DNS host name by default: the first label,
// upper case, cut to 15 characters.
func netbiosName(reported, dnsHost string) string {
	if n := strings.TrimSpace(reported); n != "" {
		return strings.ToUpper(n)
	}
	label, _, _ := strings.Cut(strings.TrimSpace(dnsHost), ".")
	if len(label) > 15 {
		label = label[:15]
	}
	return strings.ToUpper(label)
}

// accountName is name as this computer's account: NETBIOS\name, or the
// bare name when the NetBIOS name is unknown (localAccount then still
// checks where the account found lives).
func accountName(netbios, name string) string {
	if netbios == "" {
		return name
	}
	return netbios + `\` + name
}

// foundAccount is what LookupAccountName returned for a name.
type foundAccount struct {
	SID    string
	Domain string
	Type   uint32
}

// localAccount checks that the account found for name is this computer's
// account of the expected type: its domain is the computer's NetBIOS name
// (when known) and its SID is the computer's account domain SID followed
// by one relative ID (when the domain SID is known). Anything else (a
// domain account, a well-known or built-in one of the same name) is an
// error: setup would otherwise grant, record or delete the wrong account.
func localAccount(name string, found foundAccount, wantType uint32, netbios, domainSID string) error {
	if found.Type != wantType {
		return fmt.Errorf("%s is a %s, not a local %s", name, sidTypeName(found.Type), sidTypeName(wantType))
	}
	if netbios != "" && !strings.EqualFold(found.Domain, netbios) {
		return fmt.Errorf("%s was found in domain %q, not on this computer (%s)", name, found.Domain, netbios)
	}
	if domainSID != "" && !sidInDomain(found.SID, domainSID) {
		return fmt.Errorf("%s has SID %s, which is not in this computer's account domain (%s)", name, found.SID, domainSID)
	}
	return nil
}

// sidInDomain reports whether sid is domain followed by exactly one
// relative ID.
func sidInDomain(sid, domain string) bool {
	rest, ok := strings.CutPrefix(strings.ToUpper(sid), strings.ToUpper(domain)+"-")
	if !ok || rest == "" {
		return false
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func sidTypeName(t uint32) string {
	switch t {
	case sidTypeUser:
		return "user"
	case sidTypeDomain:
		return "domain"
	case sidTypeAlias:
		return "group"
	case 2:
		return "domain group"
	case 5:
		return "well-known group"
	}
	return fmt.Sprintf("SID of type %d", t)
}
