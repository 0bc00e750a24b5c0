package winsandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"
)

// TestWindowsRecordTrust: the ACL record and its lock are made the
// user's own (owner, protected DACL) and used again; a record another
// user could have planted (a file of inherited DACL, as any user can make
// in acl\) is refused; of a trusted record, an ACE of a SID not
// agentbox's own is never used.
func TestWindowsRecordTrust(t *testing.T) {
	wineTrust(t)
	me := selfSID(t)
	const group = "S-1-5-21-1-2-3-4242"
	dir := tempDir(t)
	path := filepath.Join(dir, me+".json")
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	foreign := &recACE{Path: root, SID: sidEveryone, Mask: FileRights(RightsModify), Projects: []string{"p"}}
	own := &recACE{Path: root, SID: CapabilitySID(root), Mask: FileRights(RightsModify), Projects: []string{"p"}}
	if err := writeRecord(path, me, &aclRecord{Version: aclRecordVersion, ACEs: []*recACE{foreign, own}}); err != nil {
		t.Fatal(err)
	}
	var seen []string
	err := withRecord(path, me, group, true, func(rec *aclRecord, _ func() error) error {
		for _, a := range rec.ACEs {
			seen = append(seen, a.SID)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the user's own record: %v", err)
	}
	if len(seen) != 1 || seen[0] != CapabilitySID(root) {
		t.Errorf("the record gave SIDs %v, want only the root's capability SID", seen)
	}
	for _, p := range []string{path, path + ".lock"} {
		h, err := openRecordFile(p, windows.GENERIC_READ, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE, false, me)
		if err != nil {
			t.Fatalf("%s as agentbox made it: %v", p, err)
		}
		tr, err := trustOf(h)
		windows.CloseHandle(h)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: owner %s, protected %v, %d ACEs, %d links", filepath.Base(p), tr.Owner, tr.Protected, len(tr.ACEs), tr.Links)
		if !strings.EqualFold(tr.Owner, me) || !tr.Protected && !underWine() {
			t.Errorf("%s: owner %s, protected %v; want %s, protected", p, tr.Owner, tr.Protected, me)
		}
	}

	// A planted record: a plain file with its folder's inherited DACL.
	planted := filepath.Join(dir, "planted", me+".json")
	os.Mkdir(filepath.Dir(planted), 0o755)
	if err := os.WriteFile(planted, []byte(`{"version":1,"aces":[{"path":"C:\\Windows","sid":"S-1-1-0","mask":1}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	called := false
	err = withRecord(planted, me, group, true, func(*aclRecord, func() error) error { called = true; return nil })
	if underWine() {
		// Wine keeps no owner or DACL protection for a file it did not
		// get a security descriptor for; real Windows does.
		t.Logf("under Wine, a planted record: %v", err)
		return
	}
	if err == nil || called || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("a planted record was used (called %v): %v", called, err)
	}
}

// wineTrust makes the record's trust check, under Wine, take every DACL
// as protected: Wine keeps the owner and the entries of a security
// descriptor a file is created with, not SE_DACL_PROTECTED. Everything
// else trustProblem checks still applies there; on real Windows nothing
// is replaced.
func wineTrust(t *testing.T) {
	if !underWine() {
		return
	}
	recordTrustProblem = func(f fileTrust, user string) string {
		f.Protected = true
		return trustProblem(f, user)
	}
	t.Cleanup(func() { recordTrustProblem = trustProblem })
}

// TestWindowsACLRefusesJunction: a junction swapped in for a nested
// writable root between runs (here, leading to a folder standing for
// ~\.ssh) gets no grant: syncPath refuses it and the target's DACL holds
// no ACE of the root's capability SID; a root reached through a junction
// on the way is refused too. Wine cannot make junctions, so this runs on
// real Windows.
func TestWindowsACLRefusesJunction(t *testing.T) {
	enforcing(t)
	base := tempDir(t)
	proj, secret := filepath.Join(base, "proj"), filepath.Join(base, "ssh")
	for _, d := range []string{proj, secret, filepath.Join(secret, "inner")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	nested := filepath.Join(proj, "sub")
	if out, err := exec.Command("cmd", "/c", "mklink", "/J", nested, secret).CombinedOutput(); err != nil {
		t.Fatalf("mklink /J: %v: %s", err, out)
	}
	const group = "S-1-5-21-1-2-3-4242"
	for _, root := range []string{nested, filepath.Join(nested, "inner")} {
		rec := &aclRecord{}
		rec.begin([]recACE{{Path: root, SID: CapabilitySID(root), Mask: FileRights(RightsModify), Inherit: true}}, "project", self())
		err := syncPath(rec, root, group)
		if err == nil || !strings.Contains(err.Error(), "link") {
			t.Errorf("syncPath on %s (through a junction) = %v, want a refusal", root, err)
		}
		for _, target := range []string{secret, filepath.Join(secret, "inner")} {
			d, _, err := readDACL(target, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range d.aces {
				if strings.EqualFold(a.SID, CapabilitySID(root)) {
					t.Errorf("%s got an ACE of %s's capability SID through the junction: %+v", target, root, a)
				}
			}
		}
	}
}

// TestWindowsACLInheritanceSkipsJunction: an inheritable ACE set on a
// writable root does not reach, through a junction already inside it
// (pnpm's node_modules), the folder the junction leads to.
func TestWindowsACLInheritanceSkipsJunction(t *testing.T) {
	enforcing(t)
	base := tempDir(t)
	root, outside := filepath.Join(base, "proj"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "node_modules"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("cmd", "/c", "mklink", "/J", filepath.Join(root, "node_modules", "pkg"), outside).CombinedOutput(); err != nil {
		t.Fatalf("mklink /J: %v: %s", err, out)
	}
	rec := &aclRecord{}
	sid := CapabilitySID(root)
	rec.begin([]recACE{{Path: root, SID: sid, Mask: FileRights(RightsModify), Inherit: true}}, "project", self())
	if err := syncPath(rec, root, "S-1-5-21-1-2-3-4242"); err != nil {
		t.Fatal(err)
	}
	d, _, err := readDACL(outside, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range d.aces {
		if strings.EqualFold(a.SID, sid) {
			t.Errorf("the junction's target got the root's inherited ACE: %+v", a)
		}
	}
}

// TestWindowsTokenDACL: the command's token's own DACL and its default
// DACL grant full access to the logon SID and the capability SIDs (the
// restricting SIDs a write must pass), and nothing to Everyone: a
// write-restricted MSYS2 program may adjust its own token and open what
// it creates. That Git Bash then starts is for real Windows (the
// workflow runs bash.exe -lc).
func TestWindowsTokenDACL(t *testing.T) {
	capSID := CapabilitySID(`C:\agentbox-test-root`)
	tok, err := restrictedToken([]string{capSID})
	if err != nil {
		t.Fatal(err)
	}
	defer tok.Close()
	self, err := windows.OpenCurrentProcessToken()
	if err != nil {
		t.Fatal(err)
	}
	defer self.Close()
	logon, err := logonSID(self)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, acl *windows.ACL) {
		t.Helper()
		if acl == nil {
			t.Fatalf("%s: no DACL", what)
		}
		size := int(*(*uint16)(unsafe.Add(unsafe.Pointer(acl), 2)))
		_, aces, err := parseACL(unsafe.Slice((*byte)(unsafe.Pointer(acl)), size))
		if err != nil {
			t.Fatal(err)
		}
		full := map[string]bool{}
		for _, a := range aces {
			if a.Type == aceAllow && (a.Mask&genericAll != 0 || a.Mask&0xf01ff == 0xf01ff) {
				full[a.SID] = true
			}
			if a.SID == sidEveryone && a.Type == aceAllow {
				t.Errorf("%s grants Everyone %#x", what, a.Mask)
			}
		}
		for _, s := range []string{logon.String(), capSID} {
			if !full[s] {
				t.Errorf("%s: %s has no full access: %+v", what, s, aces)
			}
		}
	}
	var rc windows.Handle
	me := windows.CurrentProcess()
	if err := windows.DuplicateHandle(me, windows.Handle(tok), me, &rc, windows.READ_CONTROL, false, 0); err != nil {
		t.Fatalf("DuplicateHandle(token, READ_CONTROL): %v", err)
	}
	defer windows.CloseHandle(rc)
	sd, err := windows.GetSecurityInfo(rc, windows.SE_KERNEL_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		t.Fatalf("GetSecurityInfo(token): %v", err)
	}
	acl, _, err := sd.DACL()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the token's DACL: %v", sd)
	check("the token's DACL", acl)
	n := uint32(0)
	windows.GetTokenInformation(tok, windows.TokenDefaultDacl, nil, 0, &n)
	buf := make([]byte, n)
	if err := windows.GetTokenInformation(tok, windows.TokenDefaultDacl, &buf[0], n, &n); err != nil {
		t.Fatalf("GetTokenInformation(TokenDefaultDacl): %v", err)
	}
	check("the token's default DACL", *(**windows.ACL)(unsafe.Pointer(&buf[0])))
}

// TestWindowsACLLongPath: a folder past MAX_PATH (a project path over 260
// characters) has its DACL read and written like any other.
func TestWindowsACLLongPath(t *testing.T) {
	deep := filepath.Join(tempDir(t), strings.Repeat("a-long-folder-name\\", 16)+"root")
	if len(deep) <= 260 {
		t.Fatalf("%d characters, want more than 260", len(deep))
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	d, ok, err := readDACL(deep, false)
	if underWine() && err != nil && strings.Contains(err.Error(), "GetFinalPathNameByHandle") {
		// Wine's GetFinalPathNameByHandleW answers ERROR_MORE_DATA for
		// any path past MAX_PATH, whatever the buffer; Windows does not.
		t.Skipf("Wine cannot name a handle past MAX_PATH: %v", err)
	}
	if err != nil || !ok {
		t.Fatalf("readDACL of a %d-character path: ok %v, %v", len(deep), ok, err)
	}
	rec := &aclRecord{}
	rec.begin([]recACE{{Path: deep, SID: CapabilitySID(deep), Mask: FileRights(RightsModify), Inherit: true}}, "project", self())
	if err := syncPath(rec, deep, "S-1-5-21-1-2-3-4242"); err != nil {
		t.Fatalf("syncPath of a %d-character path: %v (DACL had %d entries)", len(deep), err, len(d.aces))
	}
}

// TestWindowsPlaceholders: a missing control folder is made before the
// run and removed after it when still empty; one someone wrote into stays;
// a file where the folder should be fails the run.
func TestWindowsPlaceholders(t *testing.T) {
	recordHome(t)
	root := tempDir(t)
	a, b, f := filepath.Join(root, ".vscode"), filepath.Join(root, ".claude"), filepath.Join(root, ".idea")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	made, err := holdPlaceholders([]string{a, b}, nil, nil, testGroup)
	if err != nil || len(made) != 2 {
		t.Fatalf("holdPlaceholders = %v, %v", made, err)
	}
	if err := os.WriteFile(filepath.Join(b, "kept.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	releasePlaceholders(made, testGroup)
	if _, err := os.Lstat(a); !os.IsNotExist(err) {
		t.Errorf("the empty placeholder %s is still there: %v", a, err)
	}
	if _, err := os.Lstat(filepath.Join(b, "kept.txt")); err != nil {
		t.Errorf("a placeholder someone wrote into was removed: %v", err)
	}
	if _, err := holdPlaceholders([]string{f}, nil, nil, testGroup); err == nil {
		t.Error("a file where a placeholder folder goes did not fail")
	}
}

// TestWindowsFollowRefusesForeignLink: a read grant on one file follows
// links only when you or the system own them. A junction on the way to
// the command's program that another owner's (a box's) stands for is
// refused, and the file it leads to gets nothing; the same junction of
// yours is followed. Giving a junction another owner needs
// SeRestorePrivilege (an administrator's), so this runs on real Windows
// as one.
func TestWindowsFollowRefusesForeignLink(t *testing.T) {
	enforcing(t)
	base := tempDir(t)
	proj, secret := filepath.Join(base, "proj"), filepath.Join(base, "ssh")
	for _, d := range []string{proj, secret} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(secret, "tool.exe"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(proj, "bin")
	if out, err := exec.Command("cmd", "/c", "mklink", "/J", bin, secret).CombinedOutput(); err != nil {
		t.Fatalf("mklink /J: %v: %s", err, out)
	}
	program := filepath.Join(bin, "tool.exe")
	if _, _, err := readDACL(program, true); err != nil {
		t.Fatalf("a junction of your own on the way is not followed: %v", err)
	}
	// The junction, owned by another: BUILTIN\Users stands for a sandbox
	// user.
	restore := testPrivilege(t, "SeRestorePrivilege")
	defer restore()
	p, _ := windows.UTF16PtrFromString(bin)
	h, err := windows.CreateFile(p, windows.WRITE_OWNER|windows.READ_CONTROL, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil, windows.OPEN_EXISTING,
		windows.FILE_FLAG_OPEN_REPARSE_POINT|windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		t.Fatal(err)
	}
	users, _ := windows.StringToSid("S-1-5-32-545")
	err = windows.SetSecurityInfo(h, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION, users, nil, nil, nil)
	windows.CloseHandle(h)
	if err != nil {
		t.Fatalf("giving the junction another owner: %v", err)
	}
	restore()
	if _, _, err := readDACL(program, true); err == nil || !strings.Contains(err.Error(), "owned by") {
		t.Errorf("readDACL through another owner's junction = %v, want a refusal", err)
	}
	const group = "S-1-5-21-1-2-3-4242"
	rec := &aclRecord{}
	rec.begin([]recACE{{Path: program, SID: group, Mask: FileRights(RightsRead)}}, "project", self())
	if err := syncPath(rec, program, group); err == nil {
		t.Error("a read grant through another owner's junction was written")
	}
	d, _, err := readDACL(filepath.Join(secret, "tool.exe"), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range d.aces {
		if strings.EqualFold(a.SID, group) {
			t.Errorf("the file behind the junction got an ACE of the group: %+v", a)
		}
	}
}

// testPrivilege enables a privilege of this process's token for the
// test (refusing the test where the token does not hold it) and returns
// what disables it again.
func testPrivilege(t *testing.T, name string) func() {
	t.Helper()
	var tok windows.Token
	if err := windows.OpenProcessToken(windows.CurrentProcess(), windows.TOKEN_ADJUST_PRIVILEGES|windows.TOKEN_QUERY, &tok); err != nil {
		t.Fatal(err)
	}
	var luid windows.LUID
	n, _ := windows.UTF16PtrFromString(name)
	if err := windows.LookupPrivilegeValue(nil, n, &luid); err != nil {
		tok.Close()
		t.Fatal(err)
	}
	set := func(attr uint32) error {
		// ERROR_NOT_ALL_ASSIGNED comes as the thread's last error of a
		// call that succeeded.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tp := windows.Tokenprivileges{PrivilegeCount: 1}
		tp.Privileges[0] = windows.LUIDAndAttributes{Luid: luid, Attributes: attr}
		if err := windows.AdjustTokenPrivileges(tok, false, &tp, 0, nil, nil); err != nil {
			return err
		}
		if e := windows.GetLastError(); e == windows.ERROR_NOT_ALL_ASSIGNED {
			return e
		}
		return nil
	}
	if err := set(windows.SE_PRIVILEGE_ENABLED); err != nil {
		tok.Close()
		if os.Getenv("AGENTBOX_WINDOWS_MUST_ENFORCE") == "1" {
			t.Fatalf("%s cannot be enabled (%v): run the package tests as an administrator", name, err)
		}
		t.Skipf("%s cannot be enabled (%v): needs an administrator", name, err)
	}
	done := false
	return func() {
		if !done {
			done = true
			set(0)
			tok.Close()
		}
	}
}
