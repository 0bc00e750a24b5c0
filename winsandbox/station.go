package winsandbox

import "strings"

// The window station and desktop the runner and the command run on, the
// pure half (the Win32 calls are in station_windows.go).
//
// A program that loads user32 (PowerShell, whoami, where, most GUI-aware
// tools) connects to a window station and a desktop when it starts, and
// dies with STATUS_DLL_INIT_FAILED (0xC0000142) when it may not. On the
// interactive desktop (WinSta0\Default) the Secondary Logon service grants
// the sandbox user's new logon access to it. Under OpenSSH (and in any
// service) the process's window station is a non-interactive one
// ("Service-0x0-…$") of session 0, and the new logon gets no access there:
// Codex's Windows sandbox met exactly this in the field. There agentbox
// makes a window station and desktop of the run's own, which only the
// sandbox group, the run's capability SIDs and the caller may use, and
// starts the runner and the command on it; they are gone when the run
// ends (the last handle closes). A private desktop also keeps the box
// from any other desktop's windows.

// wsfVisible is USEROBJECTFLAGS' flag of a window station that has
// visible display surfaces: the interactive one.
const wsfVisible = 0x1

// needPrivateStation reports whether the run needs a window station of its
// own: the process's station is not the interactive one, WinSta0 with
// visible surfaces in a session other than 0 (services' session, where
// OpenSSH's sessions live too). known is false when the station could not
// be read, which counts as not interactive.
func needPrivateStation(station string, flags, session uint32, known bool) bool {
	return !known || session == 0 || flags&wsfVisible == 0 || !strings.EqualFold(station, "WinSta0")
}

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
