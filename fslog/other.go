//go:build !linux || !(amd64 || arm64)

package fslog

import (
	"os"

	"github.com/agentbox/agentbox/event"
	"github.com/agentbox/agentbox/plan"
)

// Log is a run's filesystem violation log; there is none on this system.
type Log struct{}

// Start returns nil: the log needs Linux (seccomp user notification or
// Landlock's audit records) on amd64 or arm64.
func Start(p *plan.Plan, judge Judge, ev event.Emitter, b Broker) *Log { return nil }

// Box returns nil.
func (l *Log) Box() *os.File { return nil }

// PreloadPipe returns nil.
func (l *Log) PreloadPipe() *os.File { return nil }

// Started does nothing.
func (l *Log) Started(pid int) {}

// Stop does nothing.
func (l *Log) Stop() {}

// Err returns nil.
func (l *Log) Err() error { return nil }

// ErrOrphan is Arm's failure after its filter is in place.
var ErrOrphan = errUnsupported

// ErrRequired is Arm's failure to install a filter that judges connects.
var ErrRequired = errUnsupported

// SocketsSupported: the supervisor cannot judge a box's connects here
// (seccomp user notification is Linux's, on amd64 and arm64).
const SocketsSupported = false

// SocketsJudged reports false: see SocketsSupported.
func SocketsJudged(p *plan.Plan) bool { return false }

// Arm fails: the log's filter is Linux's.
func Arm(sock int, reads bool) error { return errUnsupported }

// ArmWith fails: the log's filter is Linux's.
func ArmWith(sock int, reads, broker, more bool) error { return errUnsupported }

// Announce fails: Landlock is Linux's.
func Announce(sock int) error { return errUnsupported }

// AuditStatus reports no audit.
func AuditStatus() (bool, error) { return false, errUnsupported }

// WritePreload fails: the preloaded log is built for Linux on amd64 and
// arm64.
func WritePreload(dir string) error { return errUnsupported }
