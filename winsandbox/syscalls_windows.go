package winsandbox

// Win32 calls that golang.org/x/sys/windows does not wrap, declared once
// here with their documented signatures. Everything else in this package
// uses x/sys/windows directly.
//
// LazyProc.Call returns GetLastError as its error, which can be 0 when a
// function fails without setting it; failed turns that into a real error,
// so no failure is ever reported as "The operation completed successfully".

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

var (
	modadvapi32  = windows.NewLazySystemDLL("advapi32.dll")
	modnetapi32  = windows.NewLazySystemDLL("netapi32.dll")
	modshell32   = windows.NewLazySystemDLL("shell32.dll")
	moduserenv   = windows.NewLazySystemDLL("userenv.dll")
	moduser32    = windows.NewLazySystemDLL("user32.dll")
	modiphlpapi  = windows.NewLazySystemDLL("iphlpapi.dll")
	modfwpuclnt  = windows.NewLazySystemDLL("fwpuclnt.dll")
	modkernel32  = windows.NewLazySystemDLL("kernel32.dll")
	procShellExe = modshell32.NewProc("ShellExecuteExW")

	procCreateRestrictedToken   = modadvapi32.NewProc("CreateRestrictedToken")
	procCreateProcessWithLogonW = modadvapi32.NewProc("CreateProcessWithLogonW")
	procLogonUserW              = modadvapi32.NewProc("LogonUserW")
	procAdjustTokenPrivileges   = modadvapi32.NewProc("AdjustTokenPrivileges")

	procNetUserAdd              = modnetapi32.NewProc("NetUserAdd")
	procNetUserDel              = modnetapi32.NewProc("NetUserDel")
	procNetUserSetInfo          = modnetapi32.NewProc("NetUserSetInfo")
	procNetUserGetLocalGroups   = modnetapi32.NewProc("NetUserGetLocalGroups")
	procNetLocalGroupAdd        = modnetapi32.NewProc("NetLocalGroupAdd")
	procNetLocalGroupDel        = modnetapi32.NewProc("NetLocalGroupDel")
	procNetLocalGroupAddMembers = modnetapi32.NewProc("NetLocalGroupAddMembers")

	procCreateProfile  = moduserenv.NewProc("CreateProfile")
	procDeleteProfileW = moduserenv.NewProc("DeleteProfileW")

	procGetProcessWindowStation   = moduser32.NewProc("GetProcessWindowStation")
	procGetThreadDesktop          = moduser32.NewProc("GetThreadDesktop")
	procGetUserObjectInformationW = moduser32.NewProc("GetUserObjectInformationW")

	procGetExtendedTcpTable = modiphlpapi.NewProc("GetExtendedTcpTable")
	procGetCurrentThreadId  = modkernel32.NewProc("GetCurrentThreadId")

	procFwpmEngineOpen0         = modfwpuclnt.NewProc("FwpmEngineOpen0")
	procFwpmEngineClose0        = modfwpuclnt.NewProc("FwpmEngineClose0")
	procFwpmTransactionBegin0   = modfwpuclnt.NewProc("FwpmTransactionBegin0")
	procFwpmTransactionCommit0  = modfwpuclnt.NewProc("FwpmTransactionCommit0")
	procFwpmTransactionAbort0   = modfwpuclnt.NewProc("FwpmTransactionAbort0")
	procFwpmProviderAdd0        = modfwpuclnt.NewProc("FwpmProviderAdd0")
	procFwpmProviderDeleteByKey = modfwpuclnt.NewProc("FwpmProviderDeleteByKey0")
	procFwpmSubLayerAdd0        = modfwpuclnt.NewProc("FwpmSubLayerAdd0")
	procFwpmSubLayerDeleteByKey = modfwpuclnt.NewProc("FwpmSubLayerDeleteByKey0")
	procFwpmFilterAdd0          = modfwpuclnt.NewProc("FwpmFilterAdd0")
	procFwpmFilterDeleteByKey0  = modfwpuclnt.NewProc("FwpmFilterDeleteByKey0")
	procFwpmFilterGetByKey0     = modfwpuclnt.NewProc("FwpmFilterGetByKey0")
	procFwpmFreeMemory0         = modfwpuclnt.NewProc("FwpmFreeMemory0")
)

// errNoCode stands in for a failure that left no error code.
var errNoCode = errors.New("failed without an error code")

// failed returns the error of a failed LazyProc.Call: err, unless it is
// Errno(0) ("success"), which becomes errNoCode.
func failed(name string, err error) error {
	if errno, ok := err.(windows.Errno); ok && errno == 0 || err == nil {
		return fmt.Errorf("%s: %w", name, errNoCode)
	}
	return fmt.Errorf("%s: %w", name, err)
}

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
	ufAccountDisable   = 0x0002
	ufLockout          = 0x0010
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

// userInfo2 is USER_INFO_2 (NetUserGetInfo level 2): what --check reads
// of a sandbox user without logging on.
type userInfo2 struct {
	Name         *uint16
	Password     *uint16
	PasswordAge  uint32
	Priv         uint32
	HomeDir      *uint16
	Comment      *uint16
	Flags        uint32
	ScriptPath   *uint16
	AuthFlags    uint32
	FullName     *uint16
	UsrComment   *uint16
	Parms        *uint16
	Workstations *uint16
	LastLogon    uint32
	LastLogoff   uint32
	AcctExpires  uint32
	MaxStorage   uint32
	UnitsPerWeek uint32
	LogonHours   *byte
	BadPwCount   uint32
	NumLogons    uint32
	LogonServer  *uint16
	CountryCode  uint32
	CodePage     uint32
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

// localGroupMembersInfo0 is LOCALGROUP_MEMBERS_INFO_0: a member by SID.
type localGroupMembersInfo0 struct{ SID *windows.SID }

// jobAccounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION: how many
// processes a job still holds, among others.
type jobAccounting struct {
	TotalUserTime, TotalKernelTime, ThisPeriodTotalUserTime, ThisPeriodTotalKernelTime int64
	TotalPageFaultCount, TotalProcesses, ActiveProcesses, TotalTerminatedProcesses     uint32
}

// localGroupUsersInfo0 is LOCALGROUP_USERS_INFO_0.
type localGroupUsersInfo0 struct{ Name *uint16 }

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
		return 0, failed("CreateRestrictedToken", err)
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
		return failed("CreateProcessWithLogonW", err)
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
		return 0, failed("LogonUserW", err)
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

// netUserGetLocalGroups: NET_API_STATUS NetUserGetLocalGroups(
// LPCWSTR servername, LPCWSTR username, DWORD level, DWORD flags,
// LPBYTE *bufptr, DWORD prefmaxlen, LPDWORD entriesread,
// LPDWORD totalentries); level 0, the groups' names.
func netUserGetLocalGroups(user string) ([]string, error) {
	u, err := windows.UTF16PtrFromString(user)
	if err != nil {
		return nil, err
	}
	var buf *byte
	var read, total uint32
	r, _, _ := procNetUserGetLocalGroups.Call(0, uintptr(unsafe.Pointer(u)), 0, 0,
		uintptr(unsafe.Pointer(&buf)), 0xffffffff, uintptr(unsafe.Pointer(&read)), uintptr(unsafe.Pointer(&total)))
	if err := netStatus(r); err != nil {
		return nil, err
	}
	defer windows.NetApiBufferFree(buf)
	var out []string
	for _, g := range unsafe.Slice((*localGroupUsersInfo0)(unsafe.Pointer(buf)), read) {
		out = append(out, windows.UTF16PtrToString(g.Name))
	}
	return out, nil
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

// createProfile: HRESULT CreateProfile(LPCWSTR pszUserSid,
// LPCWSTR pszUserName, LPWSTR pszProfilePath, DWORD cchProfilePath);
// HRESULT_FROM_WIN32(ERROR_ALREADY_EXISTS) when the profile exists.
func createProfile(sid, name string) (string, error) {
	s, err := windows.UTF16PtrFromString(sid)
	if err != nil {
		return "", err
	}
	n, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return "", err
	}
	buf := make([]uint16, windows.MAX_PATH)
	r, _, _ := procCreateProfile.Call(uintptr(unsafe.Pointer(s)), uintptr(unsafe.Pointer(n)), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	const alreadyExists = 0x800700b7
	if uint32(r) == alreadyExists {
		return "", nil
	}
	if r != 0 {
		return "", fmt.Errorf("CreateProfile: HRESULT %#x", uint32(r))
	}
	return windows.UTF16ToString(buf), nil
}

// deleteProfile: BOOL DeleteProfileW(LPCWSTR lpSidString,
// LPCWSTR lpProfilePath, LPCWSTR lpComputerName).
func deleteProfile(sid string) error {
	s, err := windows.UTF16PtrFromString(sid)
	if err != nil {
		return err
	}
	r, _, err := procDeleteProfileW.Call(uintptr(unsafe.Pointer(s)), 0, 0)
	if r == 0 {
		return failed("DeleteProfileW", err)
	}
	return nil
}

// shellExecuteInfo is SHELLEXECUTEINFOW.
type shellExecuteInfo struct {
	Size         uint32
	Mask         uint32
	Hwnd         uintptr
	Verb         *uint16
	File         *uint16
	Parameters   *uint16
	Directory    *uint16
	Show         int32
	InstApp      uintptr
	IDList       uintptr
	Class        *uint16
	KeyClass     uintptr
	HotKey       uint32
	IconOrMonitr uintptr
	Process      windows.Handle
}

// seeMaskNoCloseProcess: ShellExecuteEx returns the process handle.
// seeMaskNoAsync: the call finishes its work before returning (the process
// exits right after in a console program).
const (
	seeMaskNoCloseProcess = 0x40
	seeMaskNoAsync        = 0x100
	errorCancelled        = 1223
)

// shellExecuteEx: BOOL ShellExecuteExW(SHELLEXECUTEINFOW *pExecInfo).
func shellExecuteEx(info *shellExecuteInfo) error {
	info.Size = uint32(unsafe.Sizeof(*info))
	r, _, err := procShellExe.Call(uintptr(unsafe.Pointer(info)))
	if r == 0 {
		return failed("ShellExecuteExW", err)
	}
	return nil
}

// desktopName returns this process's window station and desktop as
// "WinSta0\Default", or "" when user32 cannot say (no desktop at all).
func desktopName() string {
	if moduser32.Load() != nil {
		return ""
	}
	name := func(h uintptr) string {
		const uoiName = 2
		buf := make([]uint16, 256)
		var n uint32
		r, _, _ := procGetUserObjectInformationW.Call(h, uoiName, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)*2), uintptr(unsafe.Pointer(&n)))
		if r == 0 {
			return ""
		}
		return windows.UTF16ToString(buf)
	}
	ws, _, _ := procGetProcessWindowStation.Call()
	tid, _, _ := procGetCurrentThreadId.Call()
	dt, _, _ := procGetThreadDesktop.Call(tid)
	if ws == 0 || dt == 0 {
		return ""
	}
	w, d := name(ws), name(dt)
	if w == "" || d == "" {
		return ""
	}
	return w + `\` + d
}

// tcpTable reads the IPv4 TCP connections and their owners:
// GetExtendedTcpTable(TCP_TABLE_OWNER_PID_CONNECTIONS, AF_INET), whose
// rows are MIB_TCPROW_OWNER_PID (tcpRow).
func tcpTable() ([]tcpRow, error) {
	const tcpTableOwnerPIDConnections = 4
	size := uint32(16 << 10)
	for tries := 0; tries < 5; tries++ {
		buf := make([]byte, size)
		r, _, _ := procGetExtendedTcpTable.Call(uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&size)), 0,
			windows.AF_INET, tcpTableOwnerPIDConnections, 0)
		if r == uintptr(windows.ERROR_INSUFFICIENT_BUFFER) {
			continue
		}
		if r != 0 {
			return nil, fmt.Errorf("GetExtendedTcpTable: %w", windows.Errno(r))
		}
		// MIB_TCPTABLE_OWNER_PID: a DWORD count, then the rows from byte 4.
		n := *(*uint32)(unsafe.Pointer(&buf[0]))
		if uintptr(n) > (uintptr(len(buf))-4)/unsafe.Sizeof(tcpRow{}) {
			return nil, errors.New("GetExtendedTcpTable: more rows than the buffer holds")
		}
		return append([]tcpRow(nil), unsafe.Slice((*tcpRow)(unsafe.Pointer(&buf[4])), n)...), nil
	}
	return nil, errors.New("GetExtendedTcpTable: the table kept growing")
}

// unsafePointer converts the address of an ACE's SidStart field, where the
// SID begins, to an unsafe.Pointer.
func unsafePointer(p *uint32) unsafe.Pointer { return unsafe.Pointer(p) }
