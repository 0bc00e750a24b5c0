package winsandbox

// Win32 calls that golang.org/x/sys/windows does not wrap, declared once
// here with their documented signatures. Everything else in this package
// uses x/sys/windows directly.

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

var (
	modadvapi32 = windows.NewLazySystemDLL("advapi32.dll")
	modnetapi32 = windows.NewLazySystemDLL("netapi32.dll")

	procCreateRestrictedToken   = modadvapi32.NewProc("CreateRestrictedToken")
	procCreateProcessWithLogonW = modadvapi32.NewProc("CreateProcessWithLogonW")
	procLogonUserW              = modadvapi32.NewProc("LogonUserW")

	procNetUserAdd              = modnetapi32.NewProc("NetUserAdd")
	procNetUserDel              = modnetapi32.NewProc("NetUserDel")
	procNetUserSetInfo          = modnetapi32.NewProc("NetUserSetInfo")
	procNetLocalGroupAdd        = modnetapi32.NewProc("NetLocalGroupAdd")
	procNetLocalGroupDel        = modnetapi32.NewProc("NetLocalGroupDel")
	procNetLocalGroupAddMembers = modnetapi32.NewProc("NetLocalGroupAddMembers")
)

// CreateRestrictedToken flags (winnt.h).
const (
	disableMaxPrivilege = 0x1 // remove every privilege but SeChangeNotifyPrivilege
	luaToken            = 0x4 // a least-privilege (UAC filtered) token
	writeRestricted     = 0x8 // restricting SIDs are checked for write access only
)

// CreateProcessWithLogonW and LogonUserW constants.
const (
	logonWithProfile        = 0x1 // load the user's profile (HKCU) before starting
	logon32LogonInteractive = 2
	logon32ProviderDefault  = 0
)

// NetUser*/NetLocalGroup* constants (lmaccess.h, lmerr.h, winerror.h).
const (
	ufScript           = 0x0001
	ufDontExpirePasswd = 0x10000
	userPrivUser       = 1

	nerrSuccess        = 0
	nerrGroupNotFound  = 2220
	nerrUserNotFound   = 2221
	nerrGroupExists    = 2223
	nerrUserExists     = 2224
	errorMemberInAlias = 1378
	errorAliasExists   = 1379
	errorNoSuchAlias   = 1376
)

// userInfo1 is USER_INFO_1.
type userInfo1 struct {
	Name        *uint16
	Password    *uint16
	PasswordAge uint32
	Priv        uint32
	HomeDir     *uint16
	Comment     *uint16
	Flags       uint32
	ScriptPath  *uint16
}

// userInfo1003 is USER_INFO_1003 (set a password).
type userInfo1003 struct{ Password *uint16 }

// userInfo1008 is USER_INFO_1008 (set account flags).
type userInfo1008 struct{ Flags uint32 }

// localGroupInfo1 is LOCALGROUP_INFO_1.
type localGroupInfo1 struct {
	Name    *uint16
	Comment *uint16
}

// localGroupMembersInfo3 is LOCALGROUP_MEMBERS_INFO_3.
type localGroupMembersInfo3 struct{ DomainAndName *uint16 }

// createRestrictedToken:
//
//	BOOL CreateRestrictedToken(HANDLE ExistingTokenHandle, DWORD Flags,
//	  DWORD DisableSidCount, PSID_AND_ATTRIBUTES SidsToDisable,
//	  DWORD DeletePrivilegeCount, PLUID_AND_ATTRIBUTES PrivilegesToDelete,
//	  DWORD RestrictedSidCount, PSID_AND_ATTRIBUTES SidsToRestrict,
//	  PHANDLE NewTokenHandle);
func createRestrictedToken(existing windows.Token, flags uint32, restrict []windows.SIDAndAttributes) (windows.Token, error) {
	var p *windows.SIDAndAttributes
	if len(restrict) > 0 {
		p = &restrict[0]
	}
	var tok windows.Token
	r, _, err := procCreateRestrictedToken.Call(uintptr(existing), uintptr(flags), 0, 0, 0, 0,
		uintptr(len(restrict)), uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&tok)))
	if r == 0 {
		return 0, err
	}
	return tok, nil
}

// createProcessWithLogon:
//
//	BOOL CreateProcessWithLogonW(LPCWSTR lpUsername, LPCWSTR lpDomain,
//	  LPCWSTR lpPassword, DWORD dwLogonFlags, LPCWSTR lpApplicationName,
//	  LPWSTR lpCommandLine, DWORD dwCreationFlags, LPVOID lpEnvironment,
//	  LPCWSTR lpCurrentDirectory, LPSTARTUPINFOW lpStartupInfo,
//	  LPPROCESS_INFORMATION lpProcessInformation);
func createProcessWithLogon(user, domain, password *uint16, logonFlags uint32, app, cmdline *uint16, flags uint32, env *uint16, cwd *uint16, si *windows.StartupInfo, pi *windows.ProcessInformation) error {
	r, _, err := procCreateProcessWithLogonW.Call(uintptr(unsafe.Pointer(user)), uintptr(unsafe.Pointer(domain)),
		uintptr(unsafe.Pointer(password)), uintptr(logonFlags), uintptr(unsafe.Pointer(app)), uintptr(unsafe.Pointer(cmdline)),
		uintptr(flags), uintptr(unsafe.Pointer(env)), uintptr(unsafe.Pointer(cwd)), uintptr(unsafe.Pointer(si)), uintptr(unsafe.Pointer(pi)))
	if r == 0 {
		return err
	}
	return nil
}

// logonUser:
//
//	BOOL LogonUserW(LPCWSTR lpszUsername, LPCWSTR lpszDomain,
//	  LPCWSTR lpszPassword, DWORD dwLogonType, DWORD dwLogonProvider,
//	  PHANDLE phToken);
func logonUser(user, domain, password *uint16, logonType, provider uint32) (windows.Token, error) {
	var tok windows.Token
	r, _, err := procLogonUserW.Call(uintptr(unsafe.Pointer(user)), uintptr(unsafe.Pointer(domain)),
		uintptr(unsafe.Pointer(password)), uintptr(logonType), uintptr(provider), uintptr(unsafe.Pointer(&tok)))
	if r == 0 {
		return 0, err
	}
	return tok, nil
}

// netStatus turns a NET_API_STATUS into an error (nil for NERR_Success).
func netStatus(r uintptr) error {
	if r == nerrSuccess {
		return nil
	}
	return windows.Errno(r)
}

// netUserAdd: NET_API_STATUS NetUserAdd(LPCWSTR servername, DWORD level,
// LPBYTE buf, LPDWORD parm_err);
func netUserAdd(level uint32, buf unsafe.Pointer) error {
	var parmErr uint32
	r, _, _ := procNetUserAdd.Call(0, uintptr(level), uintptr(buf), uintptr(unsafe.Pointer(&parmErr)))
	return netStatus(r)
}

// netUserDel: NET_API_STATUS NetUserDel(LPCWSTR servername, LPCWSTR username);
func netUserDel(user *uint16) error {
	r, _, _ := procNetUserDel.Call(0, uintptr(unsafe.Pointer(user)))
	return netStatus(r)
}

// netUserSetInfo: NET_API_STATUS NetUserSetInfo(LPCWSTR servername,
// LPCWSTR username, DWORD level, LPBYTE buf, LPDWORD parm_err);
func netUserSetInfo(user *uint16, level uint32, buf unsafe.Pointer) error {
	var parmErr uint32
	r, _, _ := procNetUserSetInfo.Call(0, uintptr(unsafe.Pointer(user)), uintptr(level), uintptr(buf), uintptr(unsafe.Pointer(&parmErr)))
	return netStatus(r)
}

// netLocalGroupAdd: NET_API_STATUS NetLocalGroupAdd(LPCWSTR servername,
// DWORD level, LPBYTE buf, LPDWORD parm_err);
func netLocalGroupAdd(level uint32, buf unsafe.Pointer) error {
	var parmErr uint32
	r, _, _ := procNetLocalGroupAdd.Call(0, uintptr(level), uintptr(buf), uintptr(unsafe.Pointer(&parmErr)))
	return netStatus(r)
}

// netLocalGroupDel: NET_API_STATUS NetLocalGroupDel(LPCWSTR servername,
// LPCWSTR groupname);
func netLocalGroupDel(group *uint16) error {
	r, _, _ := procNetLocalGroupDel.Call(0, uintptr(unsafe.Pointer(group)))
	return netStatus(r)
}

// netLocalGroupAddMembers: NET_API_STATUS NetLocalGroupAddMembers(
// LPCWSTR servername, LPCWSTR groupname, DWORD level, LPBYTE buf,
// DWORD totalentries);
func netLocalGroupAddMembers(group *uint16, level uint32, buf unsafe.Pointer, n uint32) error {
	r, _, _ := procNetLocalGroupAddMembers.Call(0, uintptr(unsafe.Pointer(group)), uintptr(level), uintptr(buf), uintptr(n))
	return netStatus(r)
}

// unsafePointer converts the address of an ACE's SidStart field, where the
// SID begins, to an unsafe.Pointer.
func unsafePointer(p *uint32) unsafe.Pointer { return unsafe.Pointer(p) }
