//go:build windows

// uiprobe is what the Windows CI workflow runs inside and outside the box
// to check that the box cannot reach the user's desktop (docs/windows.md):
//
//	uiprobe desktop        prints this process's "station\desktop"
//	uiprobe clipboard      prints the clipboard's text; exit 3 when it cannot be read
//	uiprobe type TEXT      tries to type TEXT into every Notepad window it can
//	                       find (WM_SETTEXT, WM_CHAR and SendInput); exit 3 when
//	                       it finds none
//	uiprobe notepad-text   prints the text of the first Notepad's edit control
//	                       (the host reads what the box may have typed)
//
// It lives under testdata so `go build ./...` leaves it out; the workflow
// builds it by its path.
package main

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

var (
	user32                  = windows.NewLazySystemDLL("user32.dll")
	procGetProcessWindowStn = user32.NewProc("GetProcessWindowStation")
	procGetThreadDesktop    = user32.NewProc("GetThreadDesktop")
	procGetUserObjectInfo   = user32.NewProc("GetUserObjectInformationW")
	procOpenClipboard       = user32.NewProc("OpenClipboard")
	procCloseClipboard      = user32.NewProc("CloseClipboard")
	procGetClipboardData    = user32.NewProc("GetClipboardData")
	procFindWindowExW       = user32.NewProc("FindWindowExW")
	procEnumChildWindows    = user32.NewProc("EnumChildWindows")
	procGetClassNameW       = user32.NewProc("GetClassNameW")
	procSendMessageW        = user32.NewProc("SendMessageW")
	procPostMessageW        = user32.NewProc("PostMessageW")
	procSetForegroundWindow = user32.NewProc("SetForegroundWindow")
	procSendInput           = user32.NewProc("SendInput")
	kernel32                = windows.NewLazySystemDLL("kernel32.dll")
	procGlobalLock          = kernel32.NewProc("GlobalLock")
	procGlobalUnlock        = kernel32.NewProc("GlobalUnlock")
)

const (
	uoiName        = 2
	cfUnicodeText  = 13
	wmSetText      = 0x000C
	wmGetText      = 0x000D
	wmChar         = 0x0102
	inputKeyboard  = 1
	keyeventfKeyUp = 0x2
	keyeventfUni   = 0x4
)

func objName(h uintptr) string {
	buf := make([]uint16, 256)
	var n uint32
	if r, _, _ := procGetUserObjectInfo.Call(h, uoiName, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)*2), uintptr(unsafe.Pointer(&n))); r == 0 {
		return "?"
	}
	return windows.UTF16ToString(buf)
}

// notepads returns every top-level Notepad window this process can see
// and, for each, its edit controls.
func notepads() (tops []uintptr, edits []uintptr) {
	class, _ := windows.UTF16PtrFromString("Notepad")
	var w uintptr
	for {
		w, _, _ = procFindWindowExW.Call(0, w, uintptr(unsafe.Pointer(class)), 0)
		if w == 0 {
			break
		}
		tops = append(tops, w)
		cb := syscall.NewCallback(func(child, _ uintptr) uintptr {
			buf := make([]uint16, 64)
			procGetClassNameW.Call(child, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
			switch windows.UTF16ToString(buf) {
			case "Edit", "RichEditD2DPT", "RICHEDIT50W":
				edits = append(edits, child)
			}
			return 1
		})
		procEnumChildWindows.Call(w, cb, 0)
	}
	return tops, edits
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: uiprobe desktop|clipboard|type TEXT|notepad-text")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "desktop":
		ws, _, _ := procGetProcessWindowStn.Call()
		dt, _, _ := procGetThreadDesktop.Call(uintptr(windows.GetCurrentThreadId()))
		fmt.Printf("%s\\%s\n", objName(ws), objName(dt))
	case "clipboard":
		if r, _, e := procOpenClipboard.Call(0); r == 0 {
			fmt.Fprintf(os.Stderr, "OpenClipboard: %v\n", e)
			os.Exit(3)
		}
		defer procCloseClipboard.Call()
		h, _, e := procGetClipboardData.Call(cfUnicodeText)
		if h == 0 {
			fmt.Fprintf(os.Stderr, "GetClipboardData: %v\n", e)
			os.Exit(3)
		}
		p, _, _ := procGlobalLock.Call(h)
		if p == 0 {
			os.Exit(3)
		}
		fmt.Println(windows.UTF16PtrToString(*(**uint16)(unsafe.Pointer(&p))))
		procGlobalUnlock.Call(h)
	case "type":
		if len(os.Args) < 3 {
			os.Exit(2)
		}
		text := os.Args[2]
		tops, edits := notepads()
		fmt.Printf("found %d Notepad windows, %d edit controls\n", len(tops), len(edits))
		if len(tops) == 0 {
			os.Exit(3)
		}
		u, _ := windows.UTF16PtrFromString(text)
		for _, e := range edits {
			r, _, err := procSendMessageW.Call(e, wmSetText, 0, uintptr(unsafe.Pointer(u)))
			fmt.Printf("WM_SETTEXT: %d %v\n", r, err)
			for _, c := range text {
				procPostMessageW.Call(e, wmChar, uintptr(c), 0)
			}
		}
		for _, w := range tops {
			r, _, _ := procSetForegroundWindow.Call(w)
			fmt.Printf("SetForegroundWindow: %d\n", r)
		}
		type keyInput struct {
			Type      uint32
			_         uint32
			Vk, Scan  uint16
			Flags     uint32
			Time      uint32
			ExtraInfo uintptr
			_         [8]byte
		}
		var in []keyInput
		for _, c := range windows.StringToUTF16(text) {
			if c == 0 {
				break
			}
			in = append(in, keyInput{Type: inputKeyboard, Scan: c, Flags: keyeventfUni}, keyInput{Type: inputKeyboard, Scan: c, Flags: keyeventfUni | keyeventfKeyUp})
		}
		if len(in) > 0 {
			n, _, err := procSendInput.Call(uintptr(len(in)), uintptr(unsafe.Pointer(&in[0])), unsafe.Sizeof(in[0]))
			fmt.Printf("SendInput: %d of %d (%v)\n", n, len(in), err)
		}
	case "notepad-text":
		_, edits := notepads()
		if len(edits) == 0 {
			fmt.Fprintln(os.Stderr, "no Notepad edit control found")
			os.Exit(3)
		}
		buf := make([]uint16, 4096)
		procSendMessageW.Call(edits[0], wmGetText, uintptr(len(buf)), uintptr(unsafe.Pointer(&buf[0])))
		fmt.Println(windows.UTF16ToString(buf))
	default:
		os.Exit(2)
	}
}
