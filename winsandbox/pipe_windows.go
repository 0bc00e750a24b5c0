package winsandbox

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// pipeName returns a fresh, unguessable pipe name.
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
// PIPE_REJECT_REMOTE_CLIENTS keeps it local.
func createPipe(name string, inbound bool, sid string) (*os.File, error) {
	// GENERIC_READ|GENERIC_WRITE for the one user: the client end needs
	// FILE_WRITE_ATTRIBUTES/READ to set its mode even on a one-way pipe.
	sd, err := windows.SecurityDescriptorFromString("D:P(A;;GRGW;;;" + sid + ")")
	if err != nil {
		return nil, fmt.Errorf("pipe security descriptor for %s: %w", sid, err)
	}
	sa := &windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), SecurityDescriptor: sd}
	mode := uint32(windows.PIPE_ACCESS_OUTBOUND)
	if inbound {
		mode = windows.PIPE_ACCESS_INBOUND
	}
	n, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return nil, err
	}
	h, err := windows.CreateNamedPipe(n, mode|windows.FILE_FLAG_FIRST_PIPE_INSTANCE,
		windows.PIPE_TYPE_BYTE|windows.PIPE_READMODE_BYTE|windows.PIPE_WAIT|windows.PIPE_REJECT_REMOTE_CLIENTS,
		1, 64<<10, 64<<10, 0, sa)
	if err != nil {
		return nil, fmt.Errorf("CreateNamedPipe %s: %w", name, err)
	}
	return os.NewFile(uintptr(h), name), nil
}

// connectPipe waits for the client to open the pipe.
func connectPipe(f *os.File) error {
	err := windows.ConnectNamedPipe(windows.Handle(f.Fd()), nil)
	if err == windows.ERROR_PIPE_CONNECTED {
		return nil // the client opened it between create and connect
	}
	return err
}

// openPipe opens the client end of a named pipe.
func openPipe(name string, access uint32) (*os.File, error) {
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
	return os.NewFile(uintptr(h), name), nil
}
