#!/bin/sh
# test-windows.sh: build agentbox for Windows and run its Windows tests
# under Wine.
#
# What this proves:
#   - the whole module vets and builds for GOOS=windows (amd64 and arm64);
#   - the structures winsandbox declares by hand (USER_INFO_*, SHELLEXECUTEINFOW,
#     MIB_TCPROW_OWNER_PID, the WFP filter structures) have the layout
#     MinGW's C compiler gives them (testdata/wine/layout.c, run here,
#     against testdata/layout.golden, which the Go test checks);
#   - every command line agentbox builds is split back into exactly its
#     arguments by Windows' own CommandLineToArgvW, over the quoting corpus;
#   - the Windows code paths run end to end: named pipes created with a
#     DACL and overlapped connects that check the client's process ID (a
#     foreign client and a foreign server are refused, a missing client
#     times out), the message codec over them, the runner's protocol loop,
#     CreateRestrictedToken with DISABLE_MAX_PRIVILEGE | LUA_TOKEN |
#     WRITE_RESTRICTED and SeChangeNotifyPrivilege enabled, a job object
#     with limits, a real child started suspended with CreateProcessAsUser,
#     put in the job, resumed, its output and stdin relayed, its exit code
#     reported, the job terminated on request; a runner that cannot be put
#     in agentbox's job is ended, not resumed; a runner that panics is
#     reported with its panic (its third pipe, its standard error); a
#     window station and desktop of the run's own are made for every run
#     and a command runs on them, both jobs given every UI restriction
#     (Wine accepts them and cannot report them back), and a spawn naming
#     the user's desktop is refused by the runner; the command's token's
#     own DACL and default DACL read back granting the logon and
#     capability SIDs; a DACL read, added to and cleaned with agentbox's
#     ACEs as bytes, through handles opened without following links; the
#     ACL record and its lock made with the user's own security
#     descriptor, read back through their handles, and a record's ACE of a
#     SID not agentbox's dropped; the allowlist proxy's peer check (the TCP table's owner PID
#     against the job's process list), including a connection whose owner
#     the table names late (Wine before 9.17 finds owners by scanning its
#     processes' open files); Prepare's folders; DPAPI round trips; this
#     computer's NetBIOS name, its account domain and the caller looked up
#     as a local account;
#   - agentbox run's whole path (setup record, passwords, folders, ACE
#     record, runner, pipes, spawn, output, status 127, the box's own
#     global git configuration, an allowlist run answered by the proxy, two
#     allowlist runs at once on two proxy ports, offline mode refused when
#     the firewall cannot be read, a git folder's placeholder commondir and
#     config.worktree there during the run and gone after it, the box's own
#     home folder made and named by USERPROFILE and HOME, the run's grants
#     in the ACL record held by the run only and a killed run's removed
#     before the command starts, a run killed with TerminateProcess whose
#     placeholders (control folders, git files) the next run removes by
#     their recorded identity while a look-alike of the same content is
#     left to the check, two runs of one workspace at once whose shared
#     placeholders stay for the second when the first ends, neither
#     removed nor moved away by the first run's check, a control folder
#     the plan found and that is gone when the run starts there as a
#     placeholder of its own, and uninstall during a run leaving that
#     run's placeholders to it), with the runner started as the caller because
#     Wine's CreateProcessWithLogonW is a stub;
#   - the machine facts `agentbox doctor` reads on Windows are read to the
#     end (Wine's service manager and security policy answer little, so
#     what doctor would say here shows nothing about Windows);
#   - the after-run check on Windows, through the real run path with a plan
#     from real Windows resolution: a planted .git\commondir, a new
#     .claude\settings.json and .vscode\tasks.json, a new repository's
#     config and hooks and a control file deep in the tree are neutralised;
#     a guard in a package-manager folder is put back; a killed run's check
#     is done by the next run;
#   - every example is resolved by real GOOS=windows resolution (Windows
#     paths, the user's SID, case-insensitive environment names) and its
#     Windows plan matches examples/testdata/*.windows.golden; policy's
#     Windows-only resolution tests pass.
#
# What this does NOT prove (Wine accepts these calls and enforces nothing):
#   - that the restricted token stops writes outside the writable roots
#     (TestWindowsRestrictedTokenWrites skips here and runs on real Windows),
#     or that the box cannot change a git placeholder
#     (TestWindowsGitPlaceholderHolds, the same);
#   - that ACEs grant or deny anything, or that deny-write on .git/hooks and
#     deny-delete on .git hold; that a run's grants leave the DACLs when it
#     ends (Wine keeps no DACLs: TestWindowsGrantsDACL runs on Windows);
#   - that the job object kills the tree when agentbox dies, or that
#     breakaway is refused, or that its UI restrictions and the run's own
#     desktop keep the box from the user's windows and clipboard;
#   - that a read grant follows no link another owner (a box) made on
#     the way to the file (TestWindowsFollowRefusesForeignLink runs on
#     real Windows: Wine makes no links);
#   - that a planted ACL record is refused (Wine keeps no
#     SE_DACL_PROTECTED, so the tests under Wine take every DACL as
#     protected), or that a DACL is handled on a path past 260 characters
#     (Wine's GetFinalPathNameByHandleW cannot name such a handle);
#   - that Git Bash or any MSYS2 program starts under the restricted token;
#   - that the sandbox users, their passwords (NetUserAdd, LogonUser,
#     CreateProcessWithLogonW), profiles or the elevated relaunch behave as
#     on Windows;
#   - anything about the firewall or WFP: Wine has no working firewall COM
#     object or filter engine, so setup's firewall and WFP steps and their
#     read-back never run here (a run there only shows offline mode being
#     refused when the firewall cannot be read);
#   - ConPTY behaviour (the tests use pipes);
#   - that a window station of the run's own lets the sandbox user's
#     programs start under SSH (Wine's desktop is interactive), or that
#     junctions are moved away after a run (Wine cannot make junctions).
# .github/workflows/windows.yml runs the rest on real Windows.
#
# Exit status: non-zero when a build, vet or test fails. When Wine or the
# MinGW compiler cannot be found or installed, the Wine part is skipped with
# the reason printed, unless AGENTBOX_WINE_MUST_WORK=1, which turns the skip
# into a failure (for CI).
set -eu

cd "$(dirname "$0")/.."
repo=$(pwd)
export PATH="$PATH:/usr/local/go/bin"

echo "== GOOS=windows go vet ./..."
GOOS=windows go vet ./...
echo "== GOOS=windows go build ./... (amd64, arm64)"
GOOS=windows GOARCH=amd64 go build ./...
GOOS=windows GOARCH=arm64 go build ./...

skip() {
	echo "test-windows: skipping the Wine tests: $*"
	if [ "${AGENTBOX_WINE_MUST_WORK:-}" = 1 ]; then
		echo "test-windows: AGENTBOX_WINE_MUST_WORK=1, so this is a failure"
		exit 1
	fi
	exit 0
}

if ! command -v wine64 >/dev/null 2>&1 && ! command -v wine >/dev/null 2>&1 || ! command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "== installing wine64 and gcc-mingw-w64-x86-64"
		DEBIAN_FRONTEND=noninteractive apt-get install -y wine64 gcc-mingw-w64-x86-64 >/dev/null 2>&1 ||
			skip "apt-get install wine64 gcc-mingw-w64-x86-64 failed"
	else
		skip "wine64 or x86_64-w64-mingw32-gcc is missing (install: apt-get install wine64 gcc-mingw-w64-x86-64)"
	fi
fi
WINE=$(command -v wine64 || command -v wine || true)
[ -x /usr/lib/wine/wine64 ] && WINE=/usr/lib/wine/wine64
[ -n "$WINE" ] || skip "no wine binary found"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export WINEPREFIX="$work/prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml=;bcryptprimitives=n"

echo "== building the ProcessPrng stub DLL and the layout program"
x86_64-w64-mingw32-gcc -shared -O2 -o "$work/bcryptprimitives.dll" winsandbox/testdata/wine/bcryptprimitives.c
x86_64-w64-mingw32-gcc -O2 -o "$work/layout.exe" winsandbox/testdata/wine/layout.c

echo "== building the test binaries"
for pkg in winsandbox supervise examples policy; do
	GOOS=windows GOARCH=amd64 go test -c -o "$work/$pkg.test.exe" "./$pkg"
done

echo "== creating a Wine prefix"
"$WINE" wineboot --init >/dev/null 2>&1 || true
# Go loads bcryptprimitives.dll from System32 only.
cp "$work/bcryptprimitives.dll" "$WINEPREFIX/drive_c/windows/system32/"

echo "== checking the hand-declared structures against the C compiler"
"$WINE" "$work/layout.exe" | tr -d '\r' >"$work/layout.txt"
if ! diff -u winsandbox/testdata/layout.golden "$work/layout.txt"; then
	echo "test-windows: winsandbox/testdata/layout.golden is not what MinGW lays out (see the diff)"
	exit 1
fi

failed=0
# run PKG [TESTS]: runs a package's test binary under Wine, in a copy of the
# package folder (its testdata, and for examples its policies), and checks
# that it passed.
run() {
	pkg=$1
	pattern=${2:-.}
	mkdir -p "$work/run/$pkg"
	[ -d "$pkg/testdata" ] && cp -r "$pkg/testdata" "$work/run/$pkg/"
	[ "$pkg" = examples ] && cp examples/*.toml "$work/run/$pkg/"
	echo "== $pkg under Wine (-test.run '$pattern')"
	(cd "$work/run/$pkg" && "$WINE" "$work/$pkg.test.exe" -test.v -test.run "$pattern" -test.timeout 300s 2>&1) |
		tr -d '\r' >"$work/$pkg.out" || true
	grep -E -- '^(--- |ok|PASS|FAIL|panic)|^\s+\S+_test\.go:[0-9]+:' "$work/$pkg.out" | grep -v -- '--- PASS' || true
	if grep -q '^PASS$' "$work/$pkg.out" && ! grep -q -- '--- FAIL\|^FAIL\|panic:' "$work/$pkg.out"; then
		echo "test-windows: $pkg passed under Wine"
	else
		echo "test-windows: $pkg FAILED under Wine; full output:"
		cat "$work/$pkg.out"
		failed=1
	fi
}
run winsandbox
run supervise Windows
run examples Windows
run policy Windows

if [ "${1:-}" = -update ]; then
	# Rewrites the Windows example goldens from resolution under Wine.
	(cd "$work/run/examples" && "$WINE" "$work/examples.test.exe" -test.run Windows -update >/dev/null 2>&1 || true)
	cp "$work/run/examples/testdata/"*.windows.golden examples/testdata/
	echo "test-windows: examples/testdata/*.windows.golden rewritten"
fi

if [ $failed != 0 ]; then
	exit 1
fi
echo "test-windows: the Windows tests passed under Wine (pure tests and Windows code paths; nothing enforced, see the top of this script)"
