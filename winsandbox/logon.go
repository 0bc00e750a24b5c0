package winsandbox

import "fmt"

// What a failed logon of a sandbox user means, and when agentbox does not
// try one at all (the pure half; the Win32 calls are in run_windows.go and
// setup_windows.go).
//
// Every run logs a sandbox user on (CreateProcessWithLogonW). With a stale
// password (the account was reset behind agentbox's back, or setup ran for
// another user and replaced it) each run fails the same way, and each
// failure counts against the account: after the lockout threshold (ten on
// a default Windows 11) the account is locked and every run fails until an
// administrator unlocks it. So a failed logon is reported with its fix,
// and a run does not log on at all while the account's last logon failed.

// Windows error codes of a logon (winerror.h).
const (
	errorLogonFailure        = 1326 // the user name or password is incorrect
	errorAccountRestriction  = 1327
	errorPasswordExpired     = 1330
	errorAccountDisabled     = 1331
	errorLogonTypeNotGranted = 1385
	errorPasswordMustChange  = 1907
	errorAccountLockedOut    = 1909
	setupFix                 = "run `agentbox setup` to repair it (it sets new sandbox passwords, unlocks and re-enables the accounts)"
	logonRightFix            = "a policy of this machine (Deny log on locally, or Allow log on locally without Users) keeps the sandbox users from logging on; an administrator must grant AgentboxSandboxUsers the right to log on locally"
)

// logonFailure explains a sandbox user's failed logon by its Windows error
// code and names the fix; ok is false for a code that says nothing about
// the account.
func logonFailure(user string, errno uint32) (msg string, ok bool) {
	switch errno {
	case errorLogonFailure:
		return fmt.Sprintf("the stored password of %s does not log on (it was changed behind agentbox's back, or `agentbox setup` ran for another user and set a new one); %s", user, setupFix), true
	case errorPasswordExpired, errorPasswordMustChange:
		return fmt.Sprintf("the password of %s has expired or must be changed; %s", user, setupFix), true
	case errorAccountLockedOut:
		return fmt.Sprintf("%s is locked out after too many failed logons; %s", user, setupFix), true
	case errorAccountDisabled:
		return fmt.Sprintf("%s is disabled; %s", user, setupFix), true
	case errorAccountRestriction:
		return fmt.Sprintf("%s may not log on (an account restriction: logon hours, workstations, or an empty password); %s", user, setupFix), true
	case errorLogonTypeNotGranted:
		return fmt.Sprintf("%s may not log on here: %s", user, logonRightFix), true
	}
	return "", false
}

// logonGate says whether a run may log user on, given the account's count
// of failed logons since its last good one. A count above zero means the
// stored password already failed once: trying again would only bring the
// account closer to a lockout. (A count that cannot be read is not
// checked: the run tries, and a failure is explained by logonFailure.)
func logonGate(user string, badCount uint32) error {
	if badCount == 0 {
		return nil
	}
	return fmt.Errorf("%s had %d failed logon(s) since its last good one, so agentbox does not try again (each failure counts towards locking the account out); %s", user, badCount, setupFix)
}

// DPAPI's failures when the logon holds no key for the user's master key
// (winerror.h): NTE_BAD_KEY_STATE, the usual one, and NTE_BAD_KEY.
const (
	nteBadKeyState = 0x8009000B
	nteBadKey      = 0x80090003
)

// dpapiNoKeyLine is the one line a run gives when the stored passwords
// cannot be decrypted in this logon: DPAPI derives the user's key from the
// Windows password, which a session that signed in with an SSH key (or
// any logon without the password) does not have.
const dpapiNoKeyLine = "the sandbox passwords are protected with your Windows password (DPAPI), which this logon does not hold (an SSH session signed in with a key has none): sign in with your password (over SSH too), or run agentbox from a desktop session"

// dpapiNoKey reports whether a CryptUnprotectData error code is DPAPI's
// "no key in this logon".
func dpapiNoKey(code uint32) bool { return code == nteBadKeyState || code == nteBadKey }
