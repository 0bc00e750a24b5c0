package winsandbox

// The command's token's own DACL and default DACL (the pure half;
// restrictedToken in runner_windows.go applies them).
//
// The command's token is write-restricted: every write access (and
// TOKEN_ADJUST_DEFAULT, PROCESS_DUP_HANDLE, a pipe's write end are write
// accesses) must be granted to one of its restricting SIDs as well as to
// its user. The token object itself gets its DACL from the runner's
// default DACL, which grants the logon SID read only: MSYS2 and Cygwin
// programs (Git Bash, git's shell hooks) set their token's default DACL
// at start (NtSetInformationToken(TokenDefaultDacl)) and die with
// STATUS_ACCESS_DENIED and "couldn't create signal pipe, Win32 error 5".
// So the token's own DACL and its default DACL (what every process,
// thread, pipe and event the command creates without inheritance gets)
// grant full access to the user, SYSTEM, the logon SID and each of the
// run's capability SIDs: every restricting SID the command carries but
// Everyone, which would open them to every process of the machine.

// tokenDACLSIDs are the SIDs the command's token's DACL and default DACL
// grant full access: the user, SYSTEM, the logon SID and each capability
// SID, in that order, without repeats.
func tokenDACLSIDs(user, logon string, capabilities []string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, s := range append([]string{user, sidSystem, logon}, capabilities...) {
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	return out
}
