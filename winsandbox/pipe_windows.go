package winsandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// pipeName returns a fresh, unguessable pipe name. The names are not
// secret from processes of the same user (anyone may list \\.\pipe\), so
// they are not what keeps another run's command out: the DACL, the single
// instance and the client check after connecting are (see connectPipe).
func pipeName(suffix string) string {
	var b [16]byte
	rand.Read(b[:])
	return `\\.\pipe\agentbox-` + hex.EncodeToString(b[:]) + "-" + suffix
}

// createPipe creates the server end of a one-way named pipe that only the
// account with SID sid can open: the DACL is protected (nothing inherited)
// and has one entry. FILE_FLAG_FIRST_PIPE_INSTANCE makes creation fail if
// someone else already created a pipe of that name (a squatter would
// otherwise be the one we talk to), one instance only, and
// PIPE_REJECT_REMOTE_CLIENTS keeps it local. The handle is overlapped, so
// waiting for the client can be given up (connectPipe).
func createPipe(name string, inbound bool, sid string) (windows.Handle, error) {
	// GENERIC_READ|GENERIC_WRITE for the one user: the client end needs
	// FILE_WRITE_ATTRIBUTES/READ to set its mode even on a one-way pipe.
	sd, err := windows.SecurityDescriptorFromString("D:P(A;;GRGW;;;" + sid + ")")
	if err != nil {
		return 0, fmt.Errorf("pipe security descriptor for %s: %w", sid, err)
	}
	sa := &windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), SecurityDescriptor: sd}
	mode := uint32(windows.PIPE_ACCESS_OUTBOUND)
	if inbound {
		mode = windows.PIPE_ACCESS_INBOUND
	}
	n, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return 0, err
	}
	h, err := windows.CreateNamedPipe(n, mode|windows.FILE_FLAG_FIRST_PIPE_INSTANCE|windows.FILE_FLAG_OVERLAPPED,
		windows.PIPE_TYPE_BYTE|windows.PIPE_READMODE_BYTE|windows.PIPE_WAIT|windows.PIPE_REJECT_REMOTE_CLIENTS,
		1, 64<<10, 64<<10, 0, sa)
	if err != nil {
		return 0, fmt.Errorf("CreateNamedPipe %s: %w", name, err)
	}
	return h, nil
}

// errRunnerGone is connectPipe's error when the runner exited before it
// connected; runnerExit says why.
var errRunnerGone = errors.New("the runner exited before it connected")

// connectPipe waits until a client opens the pipe, the process runner
// exits (when it is not 0), or timeout passes, and then checks that the
// client is process wantPID: any other process of the sandbox user (another
// run's command) that raced to the pipe is refused and the run fails.
func connectPipe(h windows.Handle, runner windows.Handle, wantPID uint32, timeout time.Duration) error {
	ev, err := windows.CreateEvent(nil, 1, 0, nil)
	if err != nil {
		return fmt.Errorf("CreateEvent: %w", err)
	}
	defer windows.CloseHandle(ev)
	ov := &windows.Overlapped{HEvent: ev}
	err = windows.ConnectNamedPipe(h, ov)
	switch err {
	case nil, windows.ERROR_PIPE_CONNECTED:
	case windows.ERROR_IO_PENDING:
		wait := []windows.Handle{ev}
		if runner != 0 {
			wait = append(wait, runner)
		}
		r, werr := windows.WaitForMultipleObjects(wait, false, uint32(timeout/time.Millisecond))
		if r != windows.WAIT_OBJECT_0 {
			windows.CancelIoEx(h, ov)
			var n uint32
			windows.GetOverlappedResult(h, ov, &n, true)
			switch {
			case werr != nil:
				return fmt.Errorf("waiting for the runner: %w", werr)
			case r == windows.WAIT_OBJECT_0+1:
				return errRunnerGone
			}
			return fmt.Errorf("the runner did not connect within %s", timeout)
		}
		var n uint32
		if err := windows.GetOverlappedResult(h, ov, &n, false); err != nil {
			return fmt.Errorf("ConnectNamedPipe: %w", err)
		}
	default:
		return fmt.Errorf("ConnectNamedPipe: %w", err)
	}
	var pid uint32
	if err := windows.GetNamedPipeClientProcessId(h, &pid); err != nil {
		return fmt.Errorf("GetNamedPipeClientProcessId: %w", err)
	}
	if pid != wantPID {
		windows.DisconnectNamedPipe(h)
		return fmt.Errorf("refusing pipe client: process %d connected, not the runner (process %d)", pid, wantPID)
	}
	return nil
}

// openPipe opens the client end of a named pipe and checks that the server
// is process serverPID (agentbox, which started the runner), so a pipe of
// the same name made by someone else is never trusted.
func openPipe(name string, access uint32, serverPID uint32) (*os.File, error) {
	n, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return nil, err
	}
	// SECURITY_SQOS_PRESENT|SECURITY_IDENTIFICATION: the server may learn
	// who we are but cannot impersonate us.
	h, err := windows.CreateFile(n, access, 0, nil, windows.OPEN_EXISTING,
		windows.SECURITY_SQOS_PRESENT|windows.SECURITY_IDENTIFICATION, 0)
	if err != nil {
		return nil, err
	}
	var pid uint32
	if err := windows.GetNamedPipeServerProcessId(h, &pid); err != nil {
		windows.CloseHandle(h)
		return nil, err
	}
	if pid != serverPID {
		windows.CloseHandle(h)
		return nil, fmt.Errorf("pipe server is process %d, not agentbox (process %d)", pid, serverPID)
	}
	return os.NewFile(uintptr(h), name), nil
}
