package winsandbox

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// The window station and desktop the runner and the command run on, the
// pure half (the Win32 calls are in station_windows.go).
//
// A program that loads user32 (PowerShell, whoami, where, most GUI-aware
// tools) connects to a window station and a desktop when it starts, and
// dies with STATUS_DLL_INIT_FAILED (0xC0000142) when it may not. agentbox
// makes a window station and desktop of the run's own, which only the
// sandbox group, the run's capability SIDs and the caller may use, names
// it in the runner's start (so the Secondary Logon service grants the new
// logon nothing of the caller's desktop), and starts the runner and the
// command on it; they are gone when the run ends (the last handle
// closes). Under OpenSSH and in services, where the caller's station is a
// non-interactive one of session 0, that is what lets user32 programs
// start at all.
//
// Every run gets one, on the interactive desktop too: on the user's own
// desktop (WinSta0\Default) a process of the box could send keystrokes
// to the user's windows (Win+R, then a command runs as the user), post
// input to consoles, set hooks that load a DLL from the project into the
// user's programs, read the clipboard and capture the screen. A window
// station of its own has its own clipboard, atom table and desktops, and
// no window of the user's; the job UI restrictions (JobUILimits) keep
// the box's processes from the handles of windows outside their job, from
// the clipboard, global atoms, system parameters, display settings,
// desktop switching and logging off, on both jobs of a run (the runner's
// and the command's).

// stationSDDL is the DACL of a run's own window station and desktop:
// full access for the sandbox group (the runner, and the command's normal
// access check), the run's capability SIDs (the command's token is
// write-restricted: its write accesses are checked against its
// restricting SIDs too) and the caller (agentbox makes the desktop in
// the station, and closes both); nothing for anyone else. Protected, so
// nothing is inherited.
func stationSDDL(groupSID, callerSID string, capabilities []string) string {
	sddl := "D:P(A;;GA;;;" + groupSID + ")"
	for _, c := range capabilities {
		sddl += "(A;;GA;;;" + c + ")"
	}
	if callerSID != "" {
		sddl += "(A;;GA;;;" + callerSID + ")"
	}
	return sddl
}

// The job UI restrictions (JOBOBJECT_BASIC_UI_RESTRICTIONS'
// UIRestrictionsClass, winnt.h's JOB_OBJECT_UILIMIT_*).
const (
	uiLimitHandles          = 0x01
	uiLimitReadClipboard    = 0x02
	uiLimitWriteClipboard   = 0x04
	uiLimitSystemParameters = 0x08
	uiLimitDisplaySettings  = 0x10
	uiLimitGlobalAtoms      = 0x20
	uiLimitDesktop          = 0x40
	uiLimitExitWindows      = 0x80
)

// uiLimitNames names each UI restriction, in flag order.
var uiLimitNames = []struct {
	flag uint32
	name string
}{
	{uiLimitHandles, "handles"},
	{uiLimitReadClipboard, "read-clipboard"},
	{uiLimitWriteClipboard, "write-clipboard"},
	{uiLimitSystemParameters, "system-parameters"},
	{uiLimitDisplaySettings, "display-settings"},
	{uiLimitGlobalAtoms, "global-atoms"},
	{uiLimitDesktop, "desktop"},
	{uiLimitExitWindows, "exit-windows"},
}

// JobUILimits are the UI restrictions both jobs of every run carry: all
// of them.
const JobUILimits uint32 = uiLimitHandles | uiLimitReadClipboard | uiLimitWriteClipboard | uiLimitSystemParameters |
	uiLimitDisplaySettings | uiLimitGlobalAtoms | uiLimitDesktop | uiLimitExitWindows

// uiLimitText names the restrictions in flags, space-separated, with any
// unknown bits in hex.
func uiLimitText(flags uint32) string {
	var out []string
	for _, l := range uiLimitNames {
		if flags&l.flag != 0 {
			out = append(out, l.name)
			flags &^= l.flag
		}
	}
	if flags != 0 {
		out = append(out, fmt.Sprintf("%#x", flags))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, " ")
}

// stationPrefix begins the name of every run's own window station;
// privateDesk is the name of the desktop in it. Neither is "Default", so
// a process can tell from its desktop's name that it is not on the
// user's.
const (
	stationPrefix = "agentbox-"
	privateDesk   = "agentbox"
)

// privateStationName is the window station and desktop of a run, from 8
// random bytes: "agentbox-<16 hex digits>" and "agentbox".
func privateStationName(random [8]byte) (station, desktop string) {
	return stationPrefix + hex.EncodeToString(random[:]), privateDesk
}

// isPrivateDesktop reports whether name ("station\desktop") is a run's own
// window station and desktop, as privateStationName makes them.
func isPrivateDesktop(name string) bool {
	st, desk, ok := strings.Cut(name, `\`)
	if !ok || desk != privateDesk || !strings.HasPrefix(st, stationPrefix) {
		return false
	}
	h := st[len(stationPrefix):]
	if len(h) != 16 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil && strings.ToLower(h) == h
}

// checkSpawnUI is the runner's check of a spawn request's window station
// and job: the command starts only on a run's own window station and
// desktop, in a job with every UI restriction. A request without them
// (an older agentbox, a bug) is refused, never run on the user's desktop.
func checkSpawnUI(req *SpawnRequest) error {
	if !isPrivateDesktop(req.Desktop) {
		return fmt.Errorf("the command's desktop %q is not a window station and desktop of the run's own; the box never runs on the user's desktop", req.Desktop)
	}
	if missing := JobUILimits &^ req.Limits.UI; missing != 0 {
		return errors.New("the command's job lacks the UI restrictions " + uiLimitText(missing))
	}
	return nil
}
