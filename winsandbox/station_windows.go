package winsandbox

import (
	"crypto/rand"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The Windows half of station.go: making a run's own window station and
// desktop, and a job's UI restrictions.

var (
	procCreateWindowStationW    = moduser32.NewProc("CreateWindowStationW")
	procSetProcessWindowStation = moduser32.NewProc("SetProcessWindowStation")
	procCreateDesktopW          = moduser32.NewProc("CreateDesktopW")
	procCloseDesktop            = moduser32.NewProc("CloseDesktop")
	procCloseWindowStation      = moduser32.NewProc("CloseWindowStation")
)

// privateDesktop makes a window station and a desktop in it for one run
// (privateStationName), with the DACL sddl (stationSDDL), and returns
// "station\desktop" and the
// function that closes both (they go when their last handle closes: the
// run's processes hold theirs until they end).
func privateDesktop(sddl string) (string, func(), error) {
	sd, err := windows.SecurityDescriptorFromString(sddl)
	if err != nil {
		return "", nil, fmt.Errorf("window station security descriptor: %w", err)
	}
	sa := &windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), SecurityDescriptor: sd}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", nil, err
	}
	station, deskName := privateStationName(b)
	name, _ := windows.UTF16PtrFromString(station)
	const winstaAllAccess, genericAll = 0x37f, 0x10000000
	ws, _, e := procCreateWindowStationW.Call(uintptr(unsafe.Pointer(name)), 0, winstaAllAccess, uintptr(unsafe.Pointer(sa)))
	if ws == 0 {
		return "", nil, failed("CreateWindowStationW", e)
	}
	closeStation := func() { procCloseWindowStation.Call(ws) }
	// CreateDesktop makes the desktop in the calling process's window
	// station: agentbox switches to the new one for the call, on a locked
	// thread, and back.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	old, _, _ := procGetProcessWindowStation.Call()
	if r, _, e := procSetProcessWindowStation.Call(ws); r == 0 {
		closeStation()
		return "", nil, failed("SetProcessWindowStation", e)
	}
	desk, _ := windows.UTF16PtrFromString(deskName)
	d, _, e := procCreateDesktopW.Call(uintptr(unsafe.Pointer(desk)), 0, 0, 0, genericAll, uintptr(unsafe.Pointer(sa)))
	procSetProcessWindowStation.Call(old)
	runtime.KeepAlive(sd)
	if d == 0 {
		closeStation()
		return "", nil, failed("CreateDesktopW", e)
	}
	return station + `\` + deskName, func() { procCloseDesktop.Call(d); closeStation() }, nil
}

// setUILimits sets a job's UI restrictions (JOBOBJECT_BASIC_UI_RESTRICTIONS).
func setUILimits(job windows.Handle, flags uint32) error {
	info := windows.JOBOBJECT_BASIC_UI_RESTRICTIONS{UIRestrictionsClass: flags}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectBasicUIRestrictions,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		return fmt.Errorf("SetInformationJobObject(JobObjectBasicUIRestrictions %s): %w", uiLimitText(flags), err)
	}
	return nil
}
