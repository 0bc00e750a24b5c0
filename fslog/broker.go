package fslog

// Broker decides, for a box whose backend cannot restrict them itself, the
// filesystem calls the box's filter hands the supervisor for a decision
// (the Landlock backend's metadata calls: package broker). A call it
// decides is never let go on: the broker performs it itself, or refuses
// it, and its answer is the call's result.
type Broker interface {
	// Prepare is called once, on the goroutine that then calls Answer,
	// before the first call: the broker may lock it to its thread and
	// change that thread's credentials. When it fails, every call the
	// broker would decide is refused (EPERM).
	Prepare() error
	// Answer decides the call req and returns its result: the value the
	// call returns, or an errno (positive) when it fails. valid reports
	// whether the calling thread is still waiting in the call: what the
	// broker read of it (its memory, its descriptors) belongs to this
	// call only while it is.
	Answer(req Request, valid func() bool) (val int64, errno int)
}

// Request is one call waiting for a decision: the calling thread (its ID on
// the host), the syscall number and its arguments.
type Request struct {
	Pid  int
	Nr   uint32
	Args [6]uint64
	// AddFD installs a copy of the supervisor's descriptor fd in the
	// calling process (close-on-exec when cloexec) and returns its number
	// there, for a call whose result is a new descriptor. Nil where the
	// call cannot be given one.
	AddFD func(fd int, cloexec bool) (int, error)
}
