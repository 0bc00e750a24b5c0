package supervise

import (
	"fmt"
	"io/fs"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/agentbox/agentbox/plan"
)

// owned checks that the folder at path is a plain folder of the calling
// user: not a reparse point (a junction or symbolic link to somewhere
// else: Lstat does not always report a junction as a link), and owned by
// the user's SID or by the token's default owner (Administrators, for a
// folder an elevated process made). The temporary folder is shared ground
// when TEMP points somewhere common (C:\Windows\Temp), so a folder another
// user made in agentbox's name is never used.
func owned(path string, fi fs.FileInfo, id plan.Identity) error {
	if d, ok := fi.Sys().(*syscall.Win32FileAttributeData); ok && d.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0 {
		return fmt.Errorf("it is a reparse point (a junction or link); agentbox only uses plain folders it made")
	}
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return fmt.Errorf("reading its owner: %w", err)
	}
	owner, _, err := sd.Owner()
	if err != nil || owner == nil {
		return fmt.Errorf("reading its owner: %v", err)
	}
	tok := windows.GetCurrentProcessToken()
	user, err := tok.GetTokenUser()
	if err != nil {
		return fmt.Errorf("reading this process's user: %w", err)
	}
	if owner.Equals(user.User.Sid) {
		return nil
	}
	if def := tokenOwner(tok); def != nil && owner.Equals(def) {
		return nil
	}
	return fmt.Errorf("it belongs to %s, not to you (%s)", accountName(owner), accountName(user.User.Sid))
}

// tokenOwner is the token's default owner (TOKEN_OWNER), or nil.
func tokenOwner(tok windows.Token) *windows.SID {
	buf := make([]byte, 128)
	var n uint32
	if err := windows.GetTokenInformation(tok, windows.TokenOwner, &buf[0], uint32(len(buf)), &n); err != nil {
		return nil
	}
	owner := (*struct{ Owner *windows.SID })(unsafe.Pointer(&buf[0])).Owner
	if owner == nil {
		return nil
	}
	sid, err := owner.Copy()
	if err != nil {
		return nil
	}
	return sid
}

// accountName is DOMAIN\name of a SID, or the SID itself.
func accountName(s *windows.SID) string {
	name, domain, _, err := s.LookupAccount("")
	if err != nil {
		return s.String()
	}
	if domain != "" {
		return domain + `\` + name
	}
	return name
}
