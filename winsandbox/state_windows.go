package winsandbox

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Where agentbox keeps its Windows state, and why there:
//
//   - %ProgramData%\agentbox (the machine folder), made by setup with a
//     protected DACL: SYSTEM and Administrators full control, Users read,
//     the sandbox group denied everything. It holds setup.json (what setup
//     made: SIDs, port, rules), which every user's runs read, and the
//     folder acl\ where each user's runs record the ACEs they write
//     (acl\<user SID>.json, created by its user: Users may add files there,
//     and CREATOR OWNER makes each file its creator's), so that
//     `setup --uninstall`, run by any administrator, finds them all.
//   - %LOCALAPPDATA%\agentbox (the user folder) holds secrets.json: the
//     sandbox users' passwords, protected with DPAPI for the user who runs
//     agentbox (not for whoever elevated setup: the elevated setup hands the
//     passwords to the non-elevated `agentbox setup` over a pipe, and that
//     process protects them). A profile folder is readable by its user,
//     SYSTEM and Administrators only, and the sandbox users are none of
//     these.

// RecordVersion is the version of the setup record; a record of another
// version means setup must run again.
//
// Version 3: the proxy has a range of ports (ProxyPorts), one per
// allowlist run at a time, and the offline user's firewall rules open the
// whole range; a version 2 setup opened one port.
const RecordVersion = 3

// record is what setup made, written last so that a record exists only after
// every step succeeded.
type record struct {
	Version    int               `json:"version"`
	ProxyPort  int               `json:"proxy_port"`  // the first proxy port
	ProxyPorts int               `json:"proxy_ports"` // how many, from ProxyPort
	GroupSID   string            `json:"group_sid"`
	Users      map[string]string `json:"users"` // name → SID
	Rules      []string          `json:"rules"`
	Filters    []string          `json:"wfp_filters"`
	// Offline is why offline mode (network "none", "allowlist") is
	// unavailable on this machine: local firewall rules do not take
	// effect (group policy). "" when it is available.
	Offline string    `json:"offline_unavailable,omitempty"`
	Time    time.Time `json:"time"`
}

// proxyRange is the proxy ports setup opened.
func (r *record) proxyRange() PortRange {
	return PortRange{First: r.ProxyPort, Count: r.ProxyPorts}
}

// machineDir is %ProgramData%\agentbox.
func machineDir() (string, error) {
	base := os.Getenv("ProgramData")
	if base == "" {
		var err error
		if base, err = windows.KnownFolderPath(windows.FOLDERID_ProgramData, 0); err != nil {
			return "", fmt.Errorf("finding ProgramData: %w", err)
		}
	}
	return filepath.Join(base, "agentbox"), nil
}

// userDir is %LOCALAPPDATA%\agentbox, created when missing.
func userDir() (string, error) {
	base, err := windows.KnownFolderPath(windows.FOLDERID_LocalAppData, 0)
	if err != nil || base == "" {
		if base = os.Getenv("LOCALAPPDATA"); base == "" {
			return "", errors.New("finding LOCALAPPDATA: it is not set")
		}
	}
	dir := filepath.Join(base, "agentbox")
	return dir, os.MkdirAll(dir, 0o700)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// writeJSON writes a state file through a temporary file and a rename, so a
// crash leaves the old file or the new one, never half of one.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// loadRecord reads the setup record and checks its version.
func loadRecord() (*record, error) {
	dir, err := machineDir()
	if err != nil {
		return nil, err
	}
	var r record
	if err := readJSON(filepath.Join(dir, "setup.json"), &r); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errors.New("the Windows sandbox is not set up on this machine")
		}
		return nil, fmt.Errorf("reading the setup record: %w", err)
	}
	if r.Version != RecordVersion {
		return nil, fmt.Errorf("the setup record has version %d, this agentbox needs %d", r.Version, RecordVersion)
	}
	return &r, nil
}

// machineDirSDDL is the machine folder's DACL (protected: nothing
// inherited from ProgramData, whose Users may create files):
//   - SYSTEM, Administrators: full control, inherited;
//   - Users: read and execute, inherited (setup.json is for everyone);
//   - the sandbox group: nothing at all, inherited (deny; the box must not
//     read the ACL records).
//
// The acl\ folder below adds its own entries (aclDirSDDL).
func machineDirSDDL(groupSID string) string {
	return "D:P(D;OICI;FA;;;" + groupSID + ")(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1200a9;;;BU)"
}

// aclDirSDDL adds to the machine folder's entries: Users may create files
// in acl\ (FILE_ADD_FILE on the folder only), and the creator of a file
// owns it fully (CREATOR OWNER, inherit only). One user cannot read or
// change another's record.
func aclDirSDDL(groupSID string) string {
	return "D:P(D;OICI;FA;;;" + groupSID + ")(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;;0x100023;;;BU)(A;OICIIO;FA;;;CO)"
}

// makeDir creates dir (if missing) and sets its DACL from sddl, replacing
// whatever it had.
func makeDir(dir, sddl string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sd, err := windows.SecurityDescriptorFromString(sddl)
	if err != nil {
		return fmt.Errorf("security descriptor %q: %w", sddl, err)
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return err
	}
	err = windows.SetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil)
	if err != nil {
		return fmt.Errorf("setting the ACL of %s: %w", dir, err)
	}
	return nil
}

// Passwords: random, and known only to setup (which sets them) and to the
// users setup ran for, each holding them DPAPI-protected in their own
// secrets.json.

// newPassword returns 32 random bytes in base64url with a fixed prefix that
// satisfies any complexity policy (upper, lower, digit, symbol).
func newPassword() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "Ab1!" + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

func protect(secret []byte) ([]byte, error) {
	if len(secret) == 0 {
		return nil, errors.New("empty secret")
	}
	in := windows.DataBlob{Size: uint32(len(secret)), Data: &secret[0]}
	var out windows.DataBlob
	if err := windows.CryptProtectData(&in, nil, nil, 0, nil, windows.CRYPTPROTECT_UI_FORBIDDEN, &out); err != nil {
		return nil, fmt.Errorf("CryptProtectData: %w", err)
	}
	defer windows.LocalFree(windows.Handle(unsafe.Pointer(out.Data)))
	return append([]byte(nil), unsafe.Slice(out.Data, out.Size)...), nil
}

func unprotect(blob []byte) ([]byte, error) {
	if len(blob) == 0 {
		return nil, errors.New("empty secret")
	}
	in := windows.DataBlob{Size: uint32(len(blob)), Data: &blob[0]}
	var out windows.DataBlob
	if err := windows.CryptUnprotectData(&in, nil, nil, 0, nil, windows.CRYPTPROTECT_UI_FORBIDDEN, &out); err != nil {
		return nil, fmt.Errorf("CryptUnprotectData: %w", err)
	}
	defer windows.LocalFree(windows.Handle(unsafe.Pointer(out.Data)))
	return append([]byte(nil), unsafe.Slice(out.Data, out.Size)...), nil
}

// secretsFile is the user's secrets.json.
func secretsFile() (string, error) {
	dir, err := userDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "secrets.json"), nil
}

// savePasswords protects the passwords for the calling user and stores
// them, replacing what was there.
func savePasswords(pw map[string]string) error {
	path, err := secretsFile()
	if err != nil {
		return err
	}
	secrets := map[string][]byte{}
	for u, p := range pw {
		blob, err := protect([]byte(p))
		if err != nil {
			return err
		}
		secrets[u] = blob
	}
	return writeJSON(path, secrets)
}

func loadPassword(user string) (string, error) {
	path, err := secretsFile()
	if err != nil {
		return "", err
	}
	secrets := map[string][]byte{}
	if err := readJSON(path, &secrets); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", errors.New("this user has no sandbox passwords: setup has not run for this user")
		}
		return "", fmt.Errorf("reading the sandbox passwords: %w", err)
	}
	p, err := unprotect(secrets[user])
	var code windows.Errno
	if errors.As(err, &code) && dpapiNoKey(uint32(code)) {
		return "", errDPAPINoKey
	}
	if err != nil {
		return "", fmt.Errorf("password of %s: %w", user, err)
	}
	return string(p), nil
}

// errDPAPINoKey is loadPassword's error when this logon cannot decrypt
// the stored passwords (dpapiNoKey).
var errDPAPINoKey = errors.New(dpapiNoKeyLine)

// currentUserSID is the SID of the calling process's user.
func currentUserSID() (string, error) {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return "", fmt.Errorf("reading this process's user: %w", err)
	}
	return u.User.Sid.String(), nil
}
