package winsandbox

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"
)

// RecordVersion is the version of the setup record; a record of another
// version means setup must run again.
const RecordVersion = 1

// record is what setup made, written last so that a record exists only after
// every step succeeded.
type record struct {
	Version   int               `json:"version"`
	ProxyPort int               `json:"proxy_port"`
	GroupSID  string            `json:"group_sid"`
	Users     map[string]string `json:"users"` // name → SID
	Rules     []string          `json:"rules"`
	Time      time.Time         `json:"time"`
}

// stateDir is %LOCALAPPDATA%\agentbox, created with a DACL inherited from
// the user's profile (readable by the user, SYSTEM and Administrators only).
func stateDir() (string, error) {
	base := os.Getenv("LOCALAPPDATA")
	if base == "" {
		return "", errors.New("LOCALAPPDATA is not set")
	}
	dir := filepath.Join(base, "agentbox")
	return dir, os.MkdirAll(dir, 0o700)
}

func readJSON(name string, v any) error {
	dir, err := stateDir()
	if err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// writeJSON writes a state file through a temporary file and a rename, so a
// crash leaves the old file or the new one, never half of one.
func writeJSON(name string, v any) error {
	dir, err := stateDir()
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, name+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}

// loadRecord reads the setup record and checks its version.
func loadRecord() (*record, error) {
	var r record
	if err := readJSON("setup.json", &r); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errors.New("the Windows sandbox is not set up; run `agentbox setup` in an elevated terminal")
		}
		return nil, fmt.Errorf("reading the setup record: %w", err)
	}
	if r.Version != RecordVersion {
		return nil, fmt.Errorf("the setup record has version %d, this agentbox needs %d; run `agentbox setup` in an elevated terminal", r.Version, RecordVersion)
	}
	return &r, nil
}

// Passwords: random, protected with DPAPI (CryptProtectData, user scope, no
// UI) and stored in %LOCALAPPDATA%\agentbox\secrets.json. Only the user who
// ran setup can decrypt them, and only on this machine.

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

func savePassword(user, password string) error {
	secrets := map[string][]byte{}
	readJSON("secrets.json", &secrets) // a missing or broken file is replaced
	blob, err := protect([]byte(password))
	if err != nil {
		return err
	}
	secrets[user] = blob
	return writeJSON("secrets.json", secrets)
}

func loadPassword(user string) (string, error) {
	secrets := map[string][]byte{}
	if err := readJSON("secrets.json", &secrets); err != nil {
		return "", fmt.Errorf("reading the sandbox passwords: %w", err)
	}
	p, err := unprotect(secrets[user])
	if err != nil {
		return "", fmt.Errorf("password of %s: %w", user, err)
	}
	return string(p), nil
}

// specialAccounts lists accounts hidden from the sign-in screen (a DWORD 0
// per user name).
const specialAccounts = `SOFTWARE\Microsoft\Windows NT\CurrentVersion\Winlogon\SpecialAccounts\UserList`

// Setup creates or repairs the sandbox group, users, firewall rules and the
// setup record. Every step is idempotent: an existing group or user is
// reused and repaired (new password, flags reset), firewall rules are
// replaced by name, and the record is written last.
func Setup(opts SetupOptions) error {
	logf := func(format string, a ...any) {
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, format+"\n", a...)
		}
	}
	if !windows.GetCurrentProcessToken().IsElevated() {
		return elevate(opts)
	}
	port := opts.ProxyPort
	if port == 0 {
		port = DefaultProxyPort
	}
	if err := ensureGroup(); err != nil {
		return fmt.Errorf("group %s: %w", GroupName, err)
	}
	logf("group %s: ok", GroupName)
	rec := &record{Version: RecordVersion, ProxyPort: port, Users: map[string]string{}}
	for _, u := range []string{OfflineUser, OnlineUser} {
		password, err := newPassword()
		if err != nil {
			return err
		}
		if err := ensureUser(u, password); err != nil {
			return fmt.Errorf("user %s: %w", u, err)
		}
		if err := savePassword(u, password); err != nil {
			return fmt.Errorf("storing the password of %s: %w", u, err)
		}
		sid, _, _, err := windows.LookupSID("", u)
		if err != nil {
			return fmt.Errorf("looking up %s: %w", u, err)
		}
		rec.Users[u] = sid.String()
		logf("user %s (%s): ok, hidden from sign-in, password never expires", u, sid)
	}
	gsid, _, _, err := windows.LookupSID("", GroupName)
	if err != nil {
		return fmt.Errorf("looking up %s: %w", GroupName, err)
	}
	rec.GroupSID = gsid.String()
	rules := FirewallRules(port)
	if err := setFirewallRules(rules, rec.Users[OfflineUser]); err != nil {
		return fmt.Errorf("firewall: %w", err)
	}
	for _, r := range rules {
		rec.Rules = append(rec.Rules, r.Name)
	}
	logf("firewall: %d rules for %s", len(rules), OfflineUser)
	rec.Time = time.Now().UTC()
	if err := writeJSON("setup.json", rec); err != nil {
		return fmt.Errorf("writing the setup record: %w", err)
	}
	logf("setup record: version %d", RecordVersion)
	return nil
}

// elevate relaunches agentbox elevated with the runas verb, once: the
// relaunched process carries ElevatedArg and never relaunches again, so a
// refused or failed elevation can never turn into a loop of prompts.
func elevate(opts SetupOptions) error {
	hint := "agentbox setup must run elevated; open a terminal with \"Run as administrator\" and run `agentbox setup` there"
	if opts.NoElevate || slices.Contains(opts.Args, ElevatedArg) {
		return errors.New(hint)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("%s (%v)", hint, err)
	}
	var args []string
	for _, a := range append(slices.Clone(opts.Args), ElevatedArg) {
		args = append(args, quoteArg(a))
	}
	verb, _ := windows.UTF16PtrFromString("runas")
	file, _ := windows.UTF16PtrFromString(exe)
	params, _ := windows.UTF16PtrFromString(strings.Join(args, " "))
	if err := windows.ShellExecute(0, verb, file, params, nil, windows.SW_SHOWNORMAL); err != nil {
		return fmt.Errorf("%s (relaunching elevated failed: %v)", hint, err)
	}
	return errors.New("setup continues in the elevated window; run `agentbox setup --check` when it is done")
}

func ensureGroup() error {
	name, _ := windows.UTF16PtrFromString(GroupName)
	comment, _ := windows.UTF16PtrFromString("agentbox sandbox users (made by agentbox setup)")
	info := localGroupInfo1{Name: name, Comment: comment}
	err := netLocalGroupAdd(1, unsafe.Pointer(&info))
	if err == windows.Errno(errorAliasExists) || err == windows.Errno(nerrGroupExists) {
		return nil
	}
	return err
}

func ensureUser(user, password string) error {
	name, _ := windows.UTF16PtrFromString(user)
	pw, err := windows.UTF16PtrFromString(password)
	if err != nil {
		return err
	}
	comment, _ := windows.UTF16PtrFromString("agentbox sandbox user (made by agentbox setup)")
	// UF_DONT_EXPIRE_PASSWD: an expired sandbox password would break every
	// run with a logon error long after setup.
	flags := uint32(ufScript | ufDontExpirePasswd)
	info := userInfo1{Name: name, Password: pw, Priv: userPrivUser, Comment: comment, Flags: flags}
	err = netUserAdd(1, unsafe.Pointer(&info))
	if err == windows.Errno(nerrUserExists) {
		// Repair: the stored password may be lost or stale.
		if err := netUserSetInfo(name, 1003, unsafe.Pointer(&userInfo1003{Password: pw})); err != nil {
			return fmt.Errorf("resetting the password: %w", err)
		}
		if err := netUserSetInfo(name, 1008, unsafe.Pointer(&userInfo1008{Flags: flags})); err != nil {
			return fmt.Errorf("resetting the account flags: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("NetUserAdd: %w", err)
	}
	member, _ := windows.UTF16PtrFromString(user)
	group, _ := windows.UTF16PtrFromString(GroupName)
	m := localGroupMembersInfo3{DomainAndName: member}
	if err := netLocalGroupAddMembers(group, 3, unsafe.Pointer(&m), 1); err != nil && err != windows.Errno(errorMemberInAlias) {
		return fmt.Errorf("adding to %s: %w", GroupName, err)
	}
	k, _, err := registry.CreateKey(registry.LOCAL_MACHINE, specialAccounts, registry.SET_VALUE)
	if err != nil {
		return fmt.Errorf("hiding from sign-in: %w", err)
	}
	defer k.Close()
	return k.SetDWordValue(user, 0)
}

// Check verifies the real state of the machine against what setup makes and
// writes one line per fact to w; it returns an error naming every problem.
func Check(w io.Writer) error {
	var problems []string
	bad := func(format string, a ...any) {
		p := fmt.Sprintf(format, a...)
		problems = append(problems, p)
		fmt.Fprintln(w, "problem:", p)
	}
	ok := func(format string, a ...any) { fmt.Fprintln(w, "ok:", fmt.Sprintf(format, a...)) }
	rec, err := loadRecord()
	if err != nil {
		bad("%v", err)
		rec = &record{Users: map[string]string{}, ProxyPort: DefaultProxyPort}
	} else {
		ok("setup record version %d from %s", rec.Version, rec.Time.Format(time.RFC3339))
	}
	if _, _, _, err := windows.LookupSID("", GroupName); err != nil {
		bad("group %s does not exist (%v)", GroupName, err)
	} else {
		ok("group %s exists", GroupName)
	}
	for _, u := range []string{OfflineUser, OnlineUser} {
		sid, _, _, err := windows.LookupSID("", u)
		if err != nil {
			bad("user %s does not exist (%v)", u, err)
			continue
		}
		if want := rec.Users[u]; want != "" && want != sid.String() {
			bad("user %s has SID %s, the setup record says %s (deleted and re-created behind agentbox's back?)", u, sid, want)
		}
		password, err := loadPassword(u)
		if err != nil {
			bad("%v", err)
			continue
		}
		name, _ := windows.UTF16PtrFromString(u)
		dot, _ := windows.UTF16PtrFromString(".")
		pw, _ := windows.UTF16PtrFromString(password)
		tok, err := logonUser(name, dot, pw, logon32LogonInteractive, logon32ProviderDefault)
		if err != nil {
			bad("user %s cannot log on with the stored password (%v)", u, err)
			continue
		}
		tok.Close()
		ok("user %s exists and logs on with the stored password", u)
		if k, err := registry.OpenKey(registry.LOCAL_MACHINE, specialAccounts, registry.QUERY_VALUE); err == nil {
			if v, _, err := k.GetIntegerValue(u); err != nil || v != 0 {
				bad("user %s is not hidden from the sign-in screen", u)
			}
			k.Close()
		} else {
			bad("user %s is not hidden from the sign-in screen (%v)", u, err)
		}
	}
	if sid := rec.Users[OfflineUser]; sid != "" {
		for _, p := range checkFirewallRules(FirewallRules(rec.ProxyPort), sid) {
			bad("%s", p)
		}
		if len(problems) == 0 {
			ok("firewall rules read back as written")
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d problem(s) with the Windows sandbox setup; run `agentbox setup` in an elevated terminal to repair", len(problems))
	}
	return nil
}

// Uninstall removes everything setup and runs made: recorded ACEs, firewall
// rules, users, group, sign-in hiding, secrets and the record. It goes on
// after a failed step and reports all failures.
func Uninstall() error {
	if !windows.GetCurrentProcessToken().IsElevated() {
		return errors.New("agentbox setup --uninstall must run elevated; open a terminal with \"Run as administrator\"")
	}
	var errs []error
	if err := removeAllACEs(); err != nil {
		errs = append(errs, fmt.Errorf("removing ACEs: %w", err))
	}
	if err := removeFirewallRules(FirewallRules(DefaultProxyPort)); err != nil {
		errs = append(errs, fmt.Errorf("removing firewall rules: %w", err))
	}
	for _, u := range []string{OfflineUser, OnlineUser} {
		name, _ := windows.UTF16PtrFromString(u)
		if err := netUserDel(name); err != nil && err != windows.Errno(nerrUserNotFound) {
			errs = append(errs, fmt.Errorf("deleting user %s: %w", u, err))
		}
		if k, err := registry.OpenKey(registry.LOCAL_MACHINE, specialAccounts, registry.SET_VALUE); err == nil {
			k.DeleteValue(u)
			k.Close()
		}
	}
	group, _ := windows.UTF16PtrFromString(GroupName)
	if err := netLocalGroupDel(group); err != nil && err != windows.Errno(nerrGroupNotFound) && err != windows.Errno(errorNoSuchAlias) {
		errs = append(errs, fmt.Errorf("deleting group %s: %w", GroupName, err))
	}
	if dir, err := stateDir(); err == nil {
		for _, f := range []string{"setup.json", "secrets.json", "acl.json"} {
			if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
