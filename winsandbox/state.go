package winsandbox

import "fmt"

// State is where the runner is in its life. Both ends run the same Machine
// over the messages they send and receive, so each notices when the other
// breaks the protocol.
type State int

// Runner states.
const (
	// Waiting: the runner is up and waits for the spawn request.
	Waiting State = iota
	// Starting: the spawn request arrived; the runner makes the token, job
	// and process.
	Starting
	// Running: the command runs (ready was sent); stdin, resize and output
	// flow.
	Running
	// Exited: the runner sent the command's exit code. Final.
	Exited
	// Errored: the runner sent an error. Final.
	Errored
)

func (s State) String() string {
	switch s {
	case Waiting:
		return "waiting-for-spawn"
	case Starting:
		return "starting"
	case Running:
		return "running"
	case Exited:
		return "exited"
	case Errored:
		return "errored"
	}
	return fmt.Sprintf("state(%d)", int(s))
}

// Final reports whether no further runner message may follow.
func (s State) Final() bool { return s == Exited || s == Errored }

// Direction says who sent a message.
type Direction int

// Directions.
const (
	FromClient Direction = iota // agentbox → runner
	FromRunner                  // runner → agentbox
)

// Machine tracks the protocol state of one runner connection.
type Machine struct {
	State       State
	StdinClosed bool
}

// Apply moves the machine by one message of type t sent in direction d. It
// returns an error, and does not move, when the message is not legal now.
//
// Client messages that cross the runner's exit on the wire (stdin, resize,
// close-stdin, terminate after exit or error) are legal and change nothing:
// the client cannot know the command has gone until it reads the exit.
func (m *Machine) Apply(d Direction, t Type) error {
	bad := func() error { return fmt.Errorf("%s message from the %s in state %s", t, d, m.State) }
	if d == FromClient {
		switch t {
		case TypeSpawn:
			if m.State != Waiting {
				return bad()
			}
			m.State = Starting
		case TypeTerminate:
			// Legal at any time: Ctrl-C may come before the command starts.
		case TypeStdin, TypeCloseStdin:
			if m.State == Waiting {
				return bad()
			}
			if m.State.Final() {
				return nil
			}
			if m.StdinClosed {
				return fmt.Errorf("%s message after close-stdin", t)
			}
			if t == TypeCloseStdin {
				m.StdinClosed = true
			}
		case TypeResize:
			if m.State == Waiting {
				return bad()
			}
		default:
			return bad()
		}
		return nil
	}
	switch t {
	case TypeReady:
		if m.State != Starting {
			return bad()
		}
		m.State = Running
	case TypeOutput:
		if m.State != Running {
			return bad()
		}
	case TypeExit:
		if m.State != Running {
			return bad()
		}
		m.State = Exited
	case TypeError:
		if m.State.Final() {
			return bad()
		}
		m.State = Errored
	default:
		return bad()
	}
	return nil
}

func (d Direction) String() string {
	if d == FromClient {
		return "client"
	}
	return "runner"
}
