package winsandbox

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"
)

var (
	procLsaOpenPolicy                     = modadvapi32.NewProc("LsaOpenPolicy")
	procLsaEnumerateAccountsWithUserRight = modadvapi32.NewProc("LsaEnumerateAccountsWithUserRight")
	procLsaFreeMemory                     = modadvapi32.NewProc("LsaFreeMemory")
	procLsaClose                          = modadvapi32.NewProc("LsaClose")
	procLsaNtStatusToWinError             = modadvapi32.NewProc("LsaNtStatusToWinError")
)

// ReadMachine reads what MachineProblems decides from (machine.go): the
// Secondary Logon service's start type and the logon rights of the local
// security policy (which a standard user may not read: then they are not
// judged), with or without a setup; then the setup record and each
// sandbox account (looked up, its flags, whether it is hidden from the
// sign-in screen). It logs on as no one and changes nothing.
func ReadMachine() MachineFacts {
	f := MachineFacts{Seclogon: seclogonStart(), Rights: logonRights()}
	rec, err := loadRecord()
	if err != nil {
		return f
	}
	f.SetUp = true
	f.GroupSID = rec.GroupSID
	for _, u := range []string{OfflineUser, OnlineUser} {
		a := AccountFacts{Name: u}
		sid, err := lookupLocal(u, sidTypeUser)
		switch {
		case errors.Is(err, windows.ERROR_NONE_MAPPED):
		case err != nil:
			a.Err = err.Error()
		default:
			a.Exists = true
		}
		userSID := rec.Users[u]
		if sid != nil {
			userSID = sid.String()
		}
		f.UserSIDs = append(f.UserSIDs, userSID)
		if a.Exists {
			a.FlagsKnown, a.Disabled = accountDisabled(u)
		}
		if k, err := registry.OpenKey(registry.LOCAL_MACHINE, specialAccounts, registry.QUERY_VALUE); err == nil {
			if v, _, err := k.GetIntegerValue(u); err == nil && v == 0 {
				a.Hidden = "hidden"
			} else if err == nil || errors.Is(err, registry.ErrNotExist) {
				a.Hidden = "visible"
			}
			k.Close()
		} else if errors.Is(err, registry.ErrNotExist) {
			a.Hidden = "visible" // no account is hidden at all
		}
		f.Accounts = append(f.Accounts, a)
	}
	return f
}

// accountDisabled reads a local account's ACCOUNTDISABLE flag; known is
// false when the account could not be read.
func accountDisabled(u string) (known, disabled bool) {
	name, _ := windows.UTF16PtrFromString(u)
	var buf *byte
	if err := windows.NetUserGetInfo(nil, name, 1, &buf); err != nil {
		return false, false
	}
	defer windows.NetApiBufferFree(buf)
	info := (*userInfo1)(unsafe.Pointer(buf))
	return true, info.Flags&ufAccountDisable != 0
}

// seclogonStart reads the Secondary Logon service's start type.
func seclogonStart() ServiceFacts {
	m, err := windows.OpenSCManager(nil, nil, windows.SC_MANAGER_CONNECT)
	if err != nil {
		return ServiceFacts{Err: fmt.Sprintf("the service manager: %v", err)}
	}
	defer windows.CloseServiceHandle(m)
	name, _ := windows.UTF16PtrFromString("seclogon")
	s, err := windows.OpenService(m, name, windows.SERVICE_QUERY_CONFIG)
	if errors.Is(err, windows.ERROR_SERVICE_DOES_NOT_EXIST) {
		return ServiceFacts{Start: "missing"}
	}
	if err != nil {
		return ServiceFacts{Err: err.Error()}
	}
	defer windows.CloseServiceHandle(s)
	var need uint32
	windows.QueryServiceConfig(s, nil, 0, &need)
	buf := make([]byte, max(need, 512))
	cfg := (*windows.QUERY_SERVICE_CONFIG)(unsafe.Pointer(&buf[0]))
	if err := windows.QueryServiceConfig(s, cfg, uint32(len(buf)), &need); err != nil {
		return ServiceFacts{Err: err.Error()}
	}
	return ServiceFacts{Start: startTypeName(cfg.StartType)}
}

func startTypeName(t uint32) string {
	switch t {
	case windows.SERVICE_BOOT_START:
		return "boot"
	case windows.SERVICE_SYSTEM_START:
		return "system"
	case windows.SERVICE_AUTO_START:
		return "auto"
	case windows.SERVICE_DEMAND_START:
		return "demand"
	case windows.SERVICE_DISABLED:
		return "disabled"
	}
	return fmt.Sprintf("start type %d", t)
}

// logonRights reads which SIDs hold SeDenyInteractiveLogonRight and
// SeInteractiveLogonRight in the local security policy.
func logonRights() LogonRights {
	const policyViewLocalInformation, policyLookupNames = 0x1, 0x800
	var attrs windows.OBJECT_ATTRIBUTES
	attrs.Length = uint32(unsafe.Sizeof(attrs))
	var h uintptr
	if st, _, _ := procLsaOpenPolicy.Call(0, uintptr(unsafe.Pointer(&attrs)), policyViewLocalInformation|policyLookupNames, uintptr(unsafe.Pointer(&h))); st != 0 {
		return LogonRights{Err: "reading the local security policy: " + lsaError(st).Error()}
	}
	defer procLsaClose.Call(h)
	r := LogonRights{Known: true}
	var err error
	if r.Deny, err = accountsWithRight(h, "SeDenyInteractiveLogonRight"); err != nil {
		return LogonRights{Err: err.Error()}
	}
	if r.Allow, err = accountsWithRight(h, "SeInteractiveLogonRight"); err != nil {
		return LogonRights{Err: err.Error()}
	}
	return r
}

// accountsWithRight lists the SIDs holding one user right (none is not an
// error).
func accountsWithRight(policy uintptr, right string) ([]string, error) {
	const statusNoMoreEntries, statusObjectNameNotFound = 0x8000001A, 0xC0000034
	u, err := windows.NewNTUnicodeString(right)
	if err != nil {
		return nil, err
	}
	var buf unsafe.Pointer
	var n uint32
	st, _, _ := procLsaEnumerateAccountsWithUserRight.Call(policy, uintptr(unsafe.Pointer(u)), uintptr(unsafe.Pointer(&buf)), uintptr(unsafe.Pointer(&n)))
	if st == statusNoMoreEntries || st == statusObjectNameNotFound {
		return nil, nil
	}
	if st != 0 {
		return nil, fmt.Errorf("reading who holds %s: %w", right, lsaError(st))
	}
	defer procLsaFreeMemory.Call(uintptr(buf))
	// LSA_ENUMERATION_INFORMATION is one PSID.
	sids := unsafe.Slice((**windows.SID)(buf), n)
	var out []string
	for _, s := range sids {
		out = append(out, s.String())
	}
	return out, nil
}

func lsaError(st uintptr) error {
	e, _, _ := procLsaNtStatusToWinError.Call(st)
	return windows.Errno(e)
}
