package winsandbox

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The Windows half of station.go: reading the process's window station
// and making a run's own.

var (
	procCreateWindowStationW    = moduser32.NewProc("CreateWindowStationW")
	procSetProcessWindowStation = moduser32.NewProc("SetProcessWindowStation")
	procCreateDesktopW          = moduser32.NewProc("CreateDesktopW")
	procCloseDesktop            = moduser32.NewProc("CloseDesktop")
	procCloseWindowStation      = moduser32.NewProc("CloseWindowStation")
)

// userObjectFlags is USEROBJECTFLAGS.
type userObjectFlags struct {
	Inherit  int32
	Reserved int32
	Flags    uint32
}

// processStation reads this process's window station: its name, its
// USEROBJECTFLAGS flags and the process's session. known is false when
// any of it cannot be read.
func processStation() (name string, flags, session uint32, known bool) {
	if moduser32.Load() != nil {
		return "", 0, 0, false
	}
	if windows.ProcessIdToSessionId(windows.GetCurrentProcessId(), &session) != nil {
		return "", 0, 0, false
	}
	ws, _, _ := procGetProcessWindowStation.Call()
	if ws == 0 {
		return "", 0, session, false
	}
	const uoiFlags, uoiName = 1, 2
	var f userObjectFlags
	var n uint32
	if r, _, _ := procGetUserObjectInformationW.Call(ws, uoiFlags, uintptr(unsafe.Pointer(&f)), unsafe.Sizeof(f), uintptr(unsafe.Pointer(&n))); r == 0 {
		return "", 0, session, false
	}
	buf := make([]uint16, 256)
	if r, _, _ := procGetUserObjectInformationW.Call(ws, uoiName, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)*2), uintptr(unsafe.Pointer(&n))); r == 0 {
		return "", f.Flags, session, false
	}
	return windows.UTF16ToString(buf), f.Flags, session, true
}

// privateDesktop makes a window station and a desktop in it for one run,
// with the DACL sddl (stationSDDL), and returns "station\desktop" and the
// function that closes both (they go when their last handle closes: the
// run's processes hold theirs until they end).
func privateDesktop(sddl string) (string, func(), error) {
	sd, err := windows.SecurityDescriptorFromString(sddl)
	if err != nil {
		return "", nil, fmt.Errorf("window station security descriptor: %w", err)
	}
	sa := &windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), SecurityDescriptor: sd}
	var b [8]byte
	rand.Read(b[:])
	station := "agentbox-" + hex.EncodeToString(b[:])
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
	desk, _ := windows.UTF16PtrFromString("Default")
	d, _, e := procCreateDesktopW.Call(uintptr(unsafe.Pointer(desk)), 0, 0, 0, genericAll, uintptr(unsafe.Pointer(sa)))
	procSetProcessWindowStation.Call(old)
	runtime.KeepAlive(sd)
	if d == 0 {
		closeStation()
		return "", nil, failed("CreateDesktopW", e)
	}
	return station + `\Default`, func() { procCloseDesktop.Call(d); closeStation() }, nil
}
