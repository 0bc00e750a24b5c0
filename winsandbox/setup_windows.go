package winsandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"
)

// specialAccounts lists accounts hidden from the sign-in screen (a DWORD 0
// per user name).
const specialAccounts = specialAccountsKey

// profileList holds one key per user profile, named by SID.
const profileList = `SOFTWARE\Microsoft\Windows NT\CurrentVersion\ProfileList`

// setupMessage is one line the elevated setup sends to the agentbox that
// launched it: a log line, the passwords for that user, or the error.
type setupMessage struct {
	Log       string            `json:"log,omitempty"`
	Passwords map[string]string `json:"passwords,omitempty"`
	Error     string            `json:"error,omitempty"`
}

// Setup creates or repairs the sandbox group, users, profiles, firewall
// rules, WFP filters and the setup record, and stores the sandbox users'
// passwords for the calling user. Not elevated, it relaunches itself
// elevated (the runas verb), waits for it, shows its log and stores the
// passwords it hands back.
func Setup(opts SetupOptions) error { return setupOrUninstall(opts, false) }

// Uninstall removes everything setup and runs made: every recorded ACE,
// the firewall rules, the WFP filters, the profiles, users and group, the
// machine folder, and the calling user's passwords. Like Setup it
// relaunches itself elevated when it must.
func Uninstall(opts SetupOptions) error { return setupOrUninstall(opts, true) }

func setupOrUninstall(opts SetupOptions, uninstall bool) error {
	logf := func(format string, a ...any) {
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, format+"\n", a...)
		}
	}
	if opts.Relaunch != "" {
		return relaunched(opts, uninstall)
	}
	if !windows.GetCurrentProcessToken().IsElevated() {
		return elevate(opts, uninstall)
	}
	if uninstall {
		if err := doUninstall(logf); err != nil {
			return err
		}
		return removeOwnSecrets()
	}
	pw, err := doSetup(opts.ProxyPort, logf)
	if err != nil {
		return err
	}
	return savePasswords(pw)
}

func removeOwnSecrets() error {
	path, err := secretsFile()
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// elevate relaunches agentbox elevated with the runas verb, once: the
// relaunched process carries ElevatedArg and never relaunches again, so a
// refused or failed elevation can never turn into a loop of prompts. It
// waits for the elevated process (ShellExecuteEx with
// SEE_MASK_NOCLOSEPROCESS), relays its log here, stores the passwords it
// sends for this user, and fails when it fails.
func elevate(opts SetupOptions, uninstall bool) error {
	what := "setup"
	if uninstall {
		what = "setup --uninstall"
	}
	hint := fmt.Sprintf("agentbox %s must run elevated; open a terminal with \"Run as administrator\" and run `agentbox %s` there", what, what)
	if opts.NoElevate {
		return errors.New(hint)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("%s (%v)", hint, err)
	}
	// The pipe only an elevated administrator can write: the elevated
	// process (of whichever administrator consented) talks back on it.
	pipe := pipeName("setup")
	sd, err := windows.SecurityDescriptorFromString("D:P(A;;GRGW;;;BA)")
	if err != nil {
		return err
	}
	sa := &windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), SecurityDescriptor: sd}
	pn, _ := windows.UTF16PtrFromString(pipe)
	h, err := windows.CreateNamedPipe(pn, windows.PIPE_ACCESS_INBOUND|windows.FILE_FLAG_FIRST_PIPE_INSTANCE|windows.FILE_FLAG_OVERLAPPED,
		windows.PIPE_TYPE_BYTE|windows.PIPE_READMODE_BYTE|windows.PIPE_WAIT|windows.PIPE_REJECT_REMOTE_CLIENTS, 1, 64<<10, 64<<10, 0, sa)
	if err != nil {
		return fmt.Errorf("CreateNamedPipe %s: %w", pipe, err)
	}
	args := []string{"setup"}
	if uninstall {
		args = append(args, "--uninstall")
	}
	args = append(args, ElevatedArg+"="+strconv.Itoa(os.Getpid())+":"+pipe)
	var quoted []string
	for _, a := range args {
		quoted = append(quoted, quoteArg(a))
	}
	verb, _ := windows.UTF16PtrFromString("runas")
	file, _ := windows.UTF16PtrFromString(exe)
	params, _ := windows.UTF16PtrFromString(strings.Join(quoted, " "))
	info := &shellExecuteInfo{Mask: seeMaskNoCloseProcess | seeMaskNoAsync, Verb: verb, File: file, Parameters: params, Show: windows.SW_HIDE}
	if err := shellExecuteEx(info); err != nil {
		windows.CloseHandle(h)
		if errors.Is(err, windows.Errno(errorCancelled)) {
			return errors.New("elevation was refused, so nothing was set up; " + hint)
		}
		return fmt.Errorf("%s (relaunching elevated failed: %v)", hint, err)
	}
	if info.Process == 0 {
		windows.CloseHandle(h)
		return errors.New("the elevated process could not be followed; run `agentbox setup --check` when it is done")
	}
	defer windows.CloseHandle(info.Process)
	pid, _ := windows.GetProcessId(info.Process)
	logf := func(s string) {
		if opts.Log != nil {
			fmt.Fprintln(opts.Log, s)
		}
	}
	var passwords map[string]string
	var childErr string
	if err := connectPipe(h, info.Process, pid, 5*time.Minute); err != nil {
		windows.CloseHandle(h)
		if !errors.Is(err, errRunnerGone) {
			return fmt.Errorf("talking to the elevated process: %w", err)
		}
	} else {
		f := os.NewFile(uintptr(h), pipe)
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var m setupMessage
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			switch {
			case m.Log != "":
				logf(m.Log)
			case m.Passwords != nil:
				passwords = m.Passwords
			case m.Error != "":
				childErr = m.Error
			}
		}
		f.Close()
	}
	windows.WaitForSingleObject(info.Process, windows.INFINITE)
	var code uint32
	windows.GetExitCodeProcess(info.Process, &code)
	switch {
	case childErr != "":
		return fmt.Errorf("elevated %s: %s", what, childErr)
	case code != 0:
		return fmt.Errorf("the elevated %s ended with status %d", what, code)
	}
	if uninstall {
		return removeOwnSecrets()
	}
	if passwords == nil {
		return errors.New("the elevated setup sent no passwords; run `agentbox setup` again")
	}
	if err := savePasswords(passwords); err != nil {
		return fmt.Errorf("storing the sandbox passwords for this user: %w", err)
	}
	logf("passwords: stored for this user (DPAPI)")
	return nil
}

// relaunched is the elevated process: it does the work and reports to the
// agentbox that launched it over the pipe named in opts.Relaunch
// ("PID:PIPE", the waiting process and its pipe).
func relaunched(opts SetupOptions, uninstall bool) error {
	if !windows.GetCurrentProcessToken().IsElevated() {
		return errors.New("the elevated relaunch is not elevated")
	}
	pidText, pipe, ok := strings.Cut(opts.Relaunch, ":")
	server, err := strconv.ParseUint(pidText, 10, 32)
	if !ok || err != nil {
		return fmt.Errorf("bad %s value %q", ElevatedArg, opts.Relaunch)
	}
	f, err := openPipe(pipe, windows.GENERIC_WRITE, uint32(server))
	if err != nil {
		return fmt.Errorf("opening the pipe to the waiting agentbox: %w", err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	logf := func(format string, a ...any) { enc.Encode(setupMessage{Log: fmt.Sprintf(format, a...)}) }
	if uninstall {
		err = doUninstall(logf)
	} else {
		var pw map[string]string
		if pw, err = doSetup(opts.ProxyPort, logf); err == nil {
			err = enc.Encode(setupMessage{Passwords: pw})
		}
	}
	if err != nil {
		enc.Encode(setupMessage{Error: err.Error()})
	}
	return err
}

// thisComputer is this computer's NetBIOS name and the SID of its account
// domain, read once: the domain local accounts live in (see account.go).
var thisComputer = sync.OnceValues(func() (netbios, domainSID string) {
	buf := make([]uint16, 64)
	n := uint32(len(buf))
	reported := ""
	if windows.GetComputerNameEx(windows.ComputerNameNetBIOS, &buf[0], &n) == nil {
		reported = windows.UTF16ToString(buf[:n])
	}
	host, _ := os.Hostname()
	netbios = netbiosName(reported, host)
	// Looked up by the computer's name, LookupAccountName answers with
	// its account domain.
	if netbios != "" {
		if sid, _, t, err := windows.LookupSID("", netbios); err == nil && t == sidTypeDomain {
			domainSID = sid.String()
		}
	}
	return netbios, domainSID
})

// lookupLocal finds this computer's account name (a local group for
// sidTypeAlias, a user for sidTypeUser) and checks it is this computer's
// own (localAccount): a domain account or a well-known one of the same name
// is never taken for it.
func lookupLocal(name string, want uint32) (*windows.SID, error) {
	netbios, domainSID := thisComputer()
	sid, domain, t, err := windows.LookupSID("", accountName(netbios, name))
	if err != nil {
		return nil, err
	}
	if err := localAccount(name, foundAccount{SID: sid.String(), Domain: domain, Type: t}, want, netbios, domainSID); err != nil {
		return nil, err
	}
	return sid, nil
}

// privateDir holds what only administrators may read: the sandbox users'
// passwords, kept so a second setup (for another user of this machine)
// hands out the same ones instead of resetting them.
func privateDir() (string, error) {
	dir, err := machineDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "private"), nil
}

// machinePasswords reads and writes private\secrets.json, protected with
// DPAPI's machine key (CRYPTPROTECT_LOCAL_MACHINE): the file's DACL (SYSTEM
// and Administrators only) is what protects it; DPAPI keeps it unreadable
// on a copied disk.
func machinePasswords() (map[string]string, error) {
	dir, err := privateDir()
	if err != nil {
		return nil, err
	}
	raw := map[string][]byte{}
	out := map[string]string{}
	if err := readJSON(filepath.Join(dir, "secrets.json"), &raw); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return out, nil
		}
		return nil, err
	}
	for u, blob := range raw {
		if len(blob) == 0 {
			continue
		}
		in := windows.DataBlob{Size: uint32(len(blob)), Data: &blob[0]}
		var o windows.DataBlob
		if windows.CryptUnprotectData(&in, nil, nil, 0, nil, windows.CRYPTPROTECT_UI_FORBIDDEN, &o) != nil {
			continue // unreadable: treated as missing, so it is reset
		}
		out[u] = string(unsafe.Slice(o.Data, o.Size))
		windows.LocalFree(windows.Handle(unsafe.Pointer(o.Data)))
	}
	return out, nil
}

func saveMachinePasswords(pw map[string]string) error {
	dir, err := privateDir()
	if err != nil {
		return err
	}
	raw := map[string][]byte{}
	for u, p := range pw {
		b := []byte(p)
		in := windows.DataBlob{Size: uint32(len(b)), Data: &b[0]}
		var o windows.DataBlob
		if err := windows.CryptProtectData(&in, nil, nil, 0, nil, windows.CRYPTPROTECT_UI_FORBIDDEN|windows.CRYPTPROTECT_LOCAL_MACHINE, &o); err != nil {
			return fmt.Errorf("CryptProtectData: %w", err)
		}
		raw[u] = append([]byte(nil), unsafe.Slice(o.Data, o.Size)...)
		windows.LocalFree(windows.Handle(unsafe.Pointer(o.Data)))
	}
	return writeJSON(filepath.Join(dir, "secrets.json"), raw)
}

// logOn logs user on with password and logs it off again; the error is a
// Windows error code. Setup calls it at most twice per user and run (the
// stored password, then a new one), so a wrong password cannot pile up
// failed logons and lock the account; a logon that succeeds also resets
// the account's count of failed ones, which runs look at (logonGate).
func logOn(user, password string) error {
	name, _ := windows.UTF16PtrFromString(user)
	dot, _ := windows.UTF16PtrFromString(".")
	pw, err := windows.UTF16PtrFromString(password)
	if err != nil {
		return err
	}
	tok, err := logonUser(name, dot, pw, logon32LogonInteractive, logon32ProviderDefault)
	if err != nil {
		return err
	}
	tok.Close()
	return nil
}

// logonError is err, a failed logon of user, with what it means.
func logonError(user string, err error) error {
	var errno windows.Errno
	if errors.As(err, &errno) {
		if msg, ok := logonFailure(user, uint32(errno)); ok {
			return fmt.Errorf("%s (%w)", msg, err)
		}
	}
	return err
}

// badPasswordCount reads a sandbox user's count of failed logons since its
// last good one without logging on (NetUserGetInfo level 2); known is
// false when it cannot be read.
func badPasswordCount(user string) (count uint32, known bool) {
	name, err := windows.UTF16PtrFromString(user)
	if err != nil {
		return 0, false
	}
	var buf *byte
	if windows.NetUserGetInfo(nil, name, 2, &buf) != nil {
		return 0, false
	}
	defer windows.NetApiBufferFree(buf)
	return (*userInfo2)(unsafe.Pointer(buf)).BadPwCount, true
}

// doSetup is setup's work, elevated. Every step is idempotent: an existing
// group or user is reused and repaired, a working password is kept (other
// users of this machine may hold it), firewall rules and WFP filters are
// replaced by name and key, and the record is written last, so it exists
// only after every step succeeded. It returns the passwords for the user
// setup runs for.
func doSetup(port int, logf func(string, ...any)) (map[string]string, error) {
	if port == 0 {
		port = DefaultProxyPort
	}
	if err := ensureGroup(); err != nil {
		return nil, fmt.Errorf("group %s: %w", GroupName, err)
	}
	gsid, err := lookupLocal(GroupName, sidTypeAlias)
	if err != nil {
		return nil, fmt.Errorf("looking up %s: %w", GroupName, err)
	}
	logf("group %s (%s): ok", GroupName, gsid)
	dir, err := machineDir()
	if err != nil {
		return nil, err
	}
	pdir, err := privateDir()
	if err != nil {
		return nil, err
	}
	for _, d := range []struct{ path, sddl string }{
		{dir, machineDirSDDL(gsid.String())},
		{filepath.Join(dir, "acl"), aclDirSDDL(gsid.String())},
		{pdir, "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"},
	} {
		if err := makeDir(d.path, d.sddl); err != nil {
			return nil, fmt.Errorf("folder %s: %w", d.path, err)
		}
	}
	logf("folder %s: ok (the sandbox group may not read it)", dir)
	stored, err := machinePasswords()
	if err != nil {
		return nil, fmt.Errorf("reading the stored passwords: %w", err)
	}
	rec := &record{Version: RecordVersion, ProxyPort: port, ProxyPorts: ProxyPorts, GroupSID: gsid.String(), Users: map[string]string{}}
	for _, u := range []string{OfflineUser, OnlineUser} {
		pw, have := stored[u]
		_, lookErr := lookupLocal(u, sidTypeUser)
		keep := have && lookErr == nil && logOn(u, pw) == nil
		if !keep {
			if pw, err = newPassword(); err != nil {
				return nil, err
			}
		}
		// Stored before it is set: a crash in between leaves a password
		// that does not log on, which the next setup replaces.
		stored[u] = pw
		if err := saveMachinePasswords(stored); err != nil {
			return nil, fmt.Errorf("storing the password of %s: %w", u, err)
		}
		if err := ensureUser(u, pw, !keep); err != nil {
			return nil, fmt.Errorf("user %s: %w", u, err)
		}
		// A new password is tried once: runs log on with it, and a good
		// logon resets the failed ones the stale password left, which
		// would otherwise keep every run from trying (logonGate).
		if !keep {
			if err := logOn(u, pw); err != nil {
				return nil, fmt.Errorf("user %s: the new password does not log on: %w", u, logonError(u, err))
			}
		}
		sid, err := lookupLocal(u, sidTypeUser)
		if err != nil {
			return nil, fmt.Errorf("looking up %s: %w", u, err)
		}
		rec.Users[u] = sid.String()
		state := "password kept"
		if !keep {
			state = "new password"
		}
		if _, err := createProfile(sid.String(), u); err != nil {
			return nil, fmt.Errorf("profile of %s: %w", u, err)
		}
		logf("user %s (%s): ok, %s, never expires, hidden from sign-in, profile created", u, sid, state)
	}
	// On a machine where group policy makes Windows ignore local firewall
	// rules, setup still finishes: network "open" runs need no firewall.
	// Offline mode is recorded as unavailable, and runs that need it are
	// refused under "require" with the reason (offlineProblem).
	if _, lp, err := firewallState(); err != nil {
		rec.Offline = "the Windows Firewall's state could not be read: " + err.Error()
	} else if lp != fwModifyStateOK {
		rec.Offline = offlineProblem(OfflineFacts{LocalPolicyModifyState: lp})
	}
	rules := FirewallRules(rec.proxyRange())
	if err := setFirewallRules(rules, rec.Users[OfflineUser]); err != nil {
		if rec.Offline == "" {
			return nil, fmt.Errorf("firewall: %w", err)
		}
		logf("firewall: the rules for %s could not be set either: %v", OfflineUser, err)
	} else {
		for _, r := range rules {
			rec.Rules = append(rec.Rules, r.Name)
		}
		logf("firewall: %d rules for %s (loopback ports %s open for the proxies)", len(rules), OfflineUser, rec.proxyRange())
	}
	if rec.Offline != "" {
		logf("warning: offline mode (network \"none\" and \"allowlist\") is unavailable on this machine: %s; runs with network \"open\" work", rec.Offline)
	}
	filters := WFPFilters()
	if err := installWFP(filters, rec.Users[OfflineUser]); err != nil {
		// The firewall rules hold without them; `setup --check` reports
		// them missing.
		logf("warning: WFP filters (DNS, SMB, ICMP of the offline user) not installed: %v", err)
	} else {
		for _, f := range filters {
			rec.Filters = append(rec.Filters, f.Name)
		}
		logf("WFP: %d filters for %s", len(filters), OfflineUser)
	}
	rec.Time = time.Now().UTC()
	if err := writeJSON(filepath.Join(dir, "setup.json"), rec); err != nil {
		return nil, fmt.Errorf("writing the setup record: %w", err)
	}
	logf("setup record: version %d", RecordVersion)
	return map[string]string{OfflineUser: stored[OfflineUser], OnlineUser: stored[OnlineUser]}, nil
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

// ensureUser creates user, or repairs it: the password (only when reset),
// the account flags, the group membership, the sign-in hiding.
func ensureUser(user, password string, reset bool) error {
	name, _ := windows.UTF16PtrFromString(user)
	pw, err := windows.UTF16PtrFromString(password)
	if err != nil {
		return err
	}
	comment, _ := windows.UTF16PtrFromString("agentbox sandbox user (made by agentbox setup)")
	// UF_DONT_EXPIRE_PASSWD: an expired sandbox password would break every
	// run with a logon error long after setup. Writing the flags also
	// clears a lockout and a disabled account.
	flags := uint32(ufScript | ufDontExpirePasswd)
	info := userInfo1{Name: name, Password: pw, Priv: userPrivUser, Comment: comment, Flags: flags}
	err = netUserAdd(1, unsafe.Pointer(&info))
	if err == windows.Errno(nerrUserExists) {
		if reset {
			if err := netUserSetInfo(name, 1003, unsafe.Pointer(&userInfo1003{Password: pw})); err != nil {
				return fmt.Errorf("resetting the password: %w", err)
			}
		}
		if err := netUserSetInfo(name, 1008, unsafe.Pointer(&userInfo1008{Flags: flags})); err != nil {
			return fmt.Errorf("resetting the account flags: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("NetUserAdd: %w", err)
	}
	// The member is named by its SID (LOCALGROUP_MEMBERS_INFO_0), checked
	// to be this computer's user, not by a name another domain could
	// answer to.
	sid, err := lookupLocal(user, sidTypeUser)
	if err != nil {
		return fmt.Errorf("looking up the new user: %w", err)
	}
	group, _ := windows.UTF16PtrFromString(GroupName)
	m := localGroupMembersInfo0{SID: sid}
	if err := netLocalGroupAddMembers(group, 0, unsafe.Pointer(&m), 1); err != nil && err != windows.Errno(errorMemberInAlias) {
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
// It never logs on more than once per user, and not at all when the last
// logon attempt failed (the account's bad-password count is not 0), so
// running it repeatedly cannot lock the sandbox accounts.
func Check(w io.Writer) error {
	var problems []string
	bad := func(format string, a ...any) {
		p := fmt.Sprintf(format, a...)
		problems = append(problems, p)
		fmt.Fprintln(w, "problem:", p)
	}
	ok := func(format string, a ...any) { fmt.Fprintln(w, "ok:", fmt.Sprintf(format, a...)) }
	note := func(format string, a ...any) { fmt.Fprintln(w, "note:", fmt.Sprintf(format, a...)) }
	rec, err := loadRecord()
	if err != nil {
		bad("%v", err)
		rec = &record{Users: map[string]string{}, ProxyPort: DefaultProxyPort, ProxyPorts: ProxyPorts}
	} else {
		ok("setup record version %d from %s", rec.Version, rec.Time.Format(time.RFC3339))
	}
	if sid, err := lookupLocal(GroupName, sidTypeAlias); err != nil {
		bad("group %s does not exist (%v)", GroupName, err)
	} else if rec.GroupSID != "" && sid.String() != rec.GroupSID {
		bad("group %s has SID %s, the setup record says %s", GroupName, sid, rec.GroupSID)
	} else {
		ok("group %s exists", GroupName)
	}
	for _, u := range []string{OfflineUser, OnlineUser} {
		sid, err := lookupLocal(u, sidTypeUser)
		if err != nil {
			bad("user %s does not exist (%v)", u, err)
			continue
		}
		if want := rec.Users[u]; want != "" && want != sid.String() {
			bad("user %s has SID %s, the setup record says %s (deleted and re-created behind agentbox's back?)", u, sid, want)
		}
		badCount := checkAccount(u, bad, note)
		if groups, err := netUserGetLocalGroups(u); err != nil {
			note("could not list the groups of %s: %v", u, err)
		} else if !slices.ContainsFunc(groups, func(g string) bool { return strings.EqualFold(g, GroupName) }) {
			bad("user %s is not in %s, so the ACEs agentbox sets do not apply to it", u, GroupName)
		}
		if k, err := registry.OpenKey(registry.LOCAL_MACHINE, profileList+`\`+sid.String(), registry.QUERY_VALUE); err != nil {
			bad("user %s has no profile", u)
		} else {
			k.Close()
		}
		if k, err := registry.OpenKey(registry.LOCAL_MACHINE, specialAccounts, registry.QUERY_VALUE); err == nil {
			if v, _, err := k.GetIntegerValue(u); err != nil || v != 0 {
				bad("user %s is not hidden from the sign-in screen", u)
			}
			k.Close()
		} else {
			bad("user %s is not hidden from the sign-in screen (%v)", u, err)
		}
		password, err := loadPassword(u)
		if err != nil {
			bad("%v", err)
			continue
		}
		if badCount > 0 {
			bad("user %s had %d failed logons since its last good one; not trying again (run `agentbox setup` to repair)", u, badCount)
			continue
		}
		if err := logOn(u, password); err != nil {
			bad("user %s does not log on with this user's stored password: %v", u, logonError(u, err))
			continue
		}
		ok("user %s exists, is in %s, has a profile, and logs on with the stored password", u, GroupName)
	}
	checkSecondaryLogon(bad, ok)
	if sid := rec.Users[OfflineUser]; sid != "" {
		fw := checkFirewall(FirewallRules(rec.proxyRange()), sid)
		switch {
		case rec.Offline != "":
			// Setup could do nothing about it: not a problem to repair.
			note("offline mode (network \"none\" and \"allowlist\") is unavailable on this machine: %s; runs with network \"open\" work", rec.Offline)
			for _, p := range fw {
				note("%s", p)
			}
		case len(fw) > 0:
			for _, p := range fw {
				bad("%s", p)
			}
		default:
			ok("firewall: on for the active profiles, local rules take effect, %d rules read back for %s", len(rec.Rules), OfflineUser)
		}
		missing, err := checkWFP(WFPFilters())
		switch {
		case errors.Is(err, windows.ERROR_ACCESS_DENIED) || err != nil && strings.Contains(err.Error(), "0x5"):
			note("WFP filters not checked: reading them needs elevation")
		case err != nil:
			note("WFP filters not checked: %v", err)
		case len(missing) > 0:
			bad("WFP filters missing: %s (DNS, SMB and ICMP of the offline user are then stopped by the firewall rules alone)", strings.Join(missing, ", "))
		default:
			ok("WFP: %d filters for %s", len(WFPFilters()), OfflineUser)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d problem(s) with the Windows sandbox setup; run `agentbox setup` to repair", len(problems))
	}
	return nil
}

// checkAccount reads a sandbox user's account flags without logging on and
// returns its bad-password count.
func checkAccount(u string, bad, note func(string, ...any)) uint32 {
	name, _ := windows.UTF16PtrFromString(u)
	var buf *byte
	if err := windows.NetUserGetInfo(nil, name, 2, &buf); err != nil {
		note("could not read the account of %s (%v); its flags are not checked", u, err)
		return 0
	}
	defer windows.NetApiBufferFree(buf)
	info := (*userInfo2)(unsafe.Pointer(buf))
	if info.Flags&ufAccountDisable != 0 {
		bad("user %s is disabled", u)
	}
	if info.Flags&ufLockout != 0 {
		bad("user %s is locked out", u)
	}
	if info.Flags&ufDontExpirePasswd == 0 {
		bad("the password of %s expires", u)
	}
	return info.BadPwCount
}

// checkSecondaryLogon checks that the Secondary Logon service, which
// CreateProcessWithLogonW needs, is not disabled.
func checkSecondaryLogon(bad, ok func(string, ...any)) {
	m, err := windows.OpenSCManager(nil, nil, windows.SC_MANAGER_CONNECT)
	if err != nil {
		bad("cannot reach the service manager to check the Secondary Logon service: %v", err)
		return
	}
	defer windows.CloseServiceHandle(m)
	name, _ := windows.UTF16PtrFromString("seclogon")
	s, err := windows.OpenService(m, name, windows.SERVICE_QUERY_CONFIG)
	if err != nil {
		bad("the Secondary Logon service (seclogon) is missing: %v", err)
		return
	}
	defer windows.CloseServiceHandle(s)
	var need uint32
	windows.QueryServiceConfig(s, nil, 0, &need)
	buf := make([]byte, max(need, 512))
	cfg := (*windows.QUERY_SERVICE_CONFIG)(unsafe.Pointer(&buf[0]))
	if err := windows.QueryServiceConfig(s, cfg, uint32(len(buf)), &need); err != nil {
		bad("reading the Secondary Logon service's configuration: %v", err)
		return
	}
	if cfg.StartType == windows.SERVICE_DISABLED {
		bad("the Secondary Logon service (seclogon) is disabled; agentbox starts its runner through it")
		return
	}
	ok("the Secondary Logon service is enabled")
}

// doUninstall removes everything setup and runs made, elevated. It goes
// on after a failed step and reports all failures.
func doUninstall(logf func(string, ...any)) error {
	var errs []error
	step := func(what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
			logf("%s: %v", what, err)
			return
		}
		logf("%s: done", what)
	}
	gsid := ""
	if rec, err := loadRecord(); err == nil {
		gsid = rec.GroupSID
	} else if sid, err := lookupLocal(GroupName, sidTypeAlias); err == nil {
		gsid = sid.String()
	}
	if gsid != "" {
		step("removing the ACEs runs wrote", removeAllACEs(gsid))
	}
	step("removing the firewall rules", removeFirewallRules(FirewallRules(DefaultProxyRange)))
	step("removing the WFP filters", removeWFP(WFPFilters()))
	for _, u := range []string{OfflineUser, OnlineUser} {
		if sid, err := lookupLocal(u, sidTypeUser); err == nil {
			err := deleteProfile(sid.String())
			if errors.Is(err, windows.ERROR_FILE_NOT_FOUND) || errors.Is(err, windows.ERROR_PATH_NOT_FOUND) {
				err = nil
			}
			step("deleting the profile of "+u, err)
		}
		name, _ := windows.UTF16PtrFromString(u)
		err := netUserDel(name)
		if err == windows.Errno(nerrUserNotFound) {
			err = nil
		}
		step("deleting user "+u, err)
		if k, err := registry.OpenKey(registry.LOCAL_MACHINE, specialAccounts, registry.SET_VALUE); err == nil {
			k.DeleteValue(u)
			k.Close()
		}
	}
	group, _ := windows.UTF16PtrFromString(GroupName)
	err := netLocalGroupDel(group)
	if err == windows.Errno(nerrGroupNotFound) || err == windows.Errno(errorNoSuchAlias) {
		err = nil
	}
	step("deleting group "+GroupName, err)
	if dir, err := machineDir(); err == nil {
		step("removing "+dir, os.RemoveAll(dir))
	}
	return errors.Join(errs...)
}
