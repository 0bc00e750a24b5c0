package box

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/agentbox/agentbox/backend"
	"github.com/agentbox/agentbox/doctor"
	"github.com/agentbox/agentbox/landlock"
	"github.com/agentbox/agentbox/plan"
	"github.com/agentbox/agentbox/supervise"
)

// backendNotice prints the one notice a confined run may print before CMD
// starts: that Landlock confines it because bwrap cannot (and why, as
// `agentbox doctor` decides it), or that its backend enforces rules weaker
// than the policy asks. One line of at most 100 characters, pointing to
// where the whole story is; the plan's notice setting says how often:
// "once" per project until what the notice rests on changes (the backend,
// bwrap's answer, the number of weaker rules), "always", or "never"
// (--quiet). A notice only describes a run that is confined: the warning
// of an unconfined run and every error are not notices.
func backendNotice(w io.Writer, p *plan.Plan, backendName string, fallback *backend.Unavailable, cause func(*backend.Unavailable) doctor.Cause) {
	n := countWeaker(p)
	if fallback == nil && n == 0 {
		forgetNotice(p)
		return
	}
	key := backendName + "\n" + strconv.Itoa(n)
	if fallback != nil {
		key += "\n" + fallback.Code + "\n" + fallback.Reason
	}
	switch p.Notice.Backend {
	case plan.NoticeNever:
		return
	case plan.NoticeOnce:
		if !noticeChanged(p, key) {
			return
		}
	}
	if fallback != nil && p.Depth > 1 && backendName == landlock.Backend {
		// Inside another agentbox box: the cause is the outer box, not
		// the machine.
		fmt.Fprintln(w, "agentbox: notice: using Landlock inside the outer box, where bwrap cannot nest (agentbox doctor)")
		return
	}
	fmt.Fprintln(w, noticeLine(backendName, n, fallback, cause))
}

// noticeLine words the notice.
func noticeLine(backendName string, weaker int, fallback *backend.Unavailable, cause func(*backend.Unavailable) doctor.Cause) string {
	if fallback != nil {
		name := backendName
		if name == landlock.Backend {
			name = "Landlock"
		}
		return fmt.Sprintf("agentbox: notice: using %s: %s (agentbox doctor)", name, cause(fallback).Short())
	}
	return fmt.Sprintf("agentbox: notice: %s enforces %d rules weaker than the policy asks (agentbox plan)", backendName, weaker)
}

// fallbackCause is why bwrap did not get the run, as doctor decides it.
func fallbackCause(u *backend.Unavailable) doctor.Cause {
	path := "bwrap"
	if u.Code == "bwrap-missing" {
		path = ""
	}
	return doctor.FallbackCause(path, u.Reason)
}

// noticeFile keeps what the last notice of the run's project rested on.
func noticeFile(p *plan.Plan) string {
	if p.Notice.Dir == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(supervise.Project(p)))
	return filepath.Join(p.Notice.Dir, hex.EncodeToString(sum[:8]))
}

// noticeChanged reports whether key differs from what the project's last
// notice rested on, and records it. A record that cannot be read or
// written means the notice is shown.
func noticeChanged(p *plan.Plan, key string) bool {
	f := noticeFile(p)
	if f == "" {
		return true
	}
	if old, err := os.ReadFile(f); err == nil && string(old) == key {
		return false
	}
	if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
		return true
	}
	tmp, err := os.CreateTemp(filepath.Dir(f), ".notice-*")
	if err != nil {
		return true
	}
	_, err = tmp.WriteString(key)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), f)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return true
}

// forgetNotice drops the project's record when there is nothing to say,
// so that the notice is shown again when the reason for it comes back.
func forgetNotice(p *plan.Plan) {
	if f := noticeFile(p); f != "" {
		os.Remove(f)
	}
}
