package winsandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// The allowlist proxy's peer check, the pure half: which row of the TCP
// table is the connection, and how long to ask again when the table does
// not name its owner yet. The Win32 calls are in run_windows.go and
// syscalls_windows.go.

// tcpRow is one row of the IPv4 TCP table (MIB_TCPROW_OWNER_PID): the
// addresses are the four bytes in network order read as a little-endian
// DWORD, the ports in network byte order in the low word.
type tcpRow struct {
	State      uint32
	LocalAddr  uint32
	LocalPort  uint32
	RemoteAddr uint32
	RemotePort uint32
	OwningPID  uint32
}

// TCP states (MIB_TCP_STATE) a connection's owner can be read in. A
// connection that is closing or closed (TIME_WAIT above all) has no owner
// any more: Windows reports process 0, and a new connection may reuse its
// four-tuple.
const (
	tcpStateEstablished = 5
	tcpStateFinWait1    = 6
	tcpStateFinWait2    = 7
	tcpStateCloseWait   = 8
	tcpStateClosing     = 9
	tcpStateLastAck     = 10
	tcpStateTimeWait    = 11
)

func tcpOpen(state uint32) bool {
	return state >= tcpStateEstablished && state <= tcpStateLastAck
}

// errNoOwner is a connection the TCP table lists without an owner.
var errNoOwner = errors.New("the TCP table names no process for the connection")

// connOwner returns the process that owns the IPv4 connection from local
// to remote (both seen from that process: its own address is local) in
// rows. Rows of closed connections are skipped, so one that reused the
// four-tuple of a connection in TIME_WAIT is found. Neither a missing row
// nor a row that names process 0 is ever read as "some process": the
// first is an error, the second errNoOwner.
func connOwner(rows []tcpRow, localIP [4]byte, localPort uint16, remoteIP [4]byte, remotePort uint16) (uint32, error) {
	port := func(p uint16) uint32 { return uint32(p>>8 | p<<8) }
	la, ra := binary.LittleEndian.Uint32(localIP[:]), binary.LittleEndian.Uint32(remoteIP[:])
	found := false
	for _, r := range rows {
		if r.LocalAddr != la || r.LocalPort&0xffff != port(localPort) || r.RemoteAddr != ra || r.RemotePort&0xffff != port(remotePort) {
			continue
		}
		if !tcpOpen(r.State) {
			continue
		}
		found = true
		if r.OwningPID != 0 {
			return r.OwningPID, nil
		}
	}
	if found {
		return 0, errNoOwner
	}
	return 0, errors.New("no such connection in the TCP table")
}

// ownerTries and ownerWait bound how long the peer check asks again for
// the owner of a connection the table does not attribute yet. Windows
// records the owner when the socket is made, so this costs nothing there;
// Wine before 9.17 finds the owner by looking for the socket among its
// processes' open files, which a process does not always hold (the
// socket lives in wineserver), and answers process 0 in between.
//
// A connection that is not in the table at all is not asked about again:
// a process that connects and closes at once would otherwise hold up the
// proxy's accept loop each time.
const (
	ownerTries = 8
	ownerWait  = 25 * time.Millisecond // then 50, 100, … 1600: 3.175 s in all
)

// askOwner calls lookup until it names a process, at most tries times,
// waiting wait, then twice as long, between tries. Only errNoOwner is
// asked again; any other error, or the last errNoOwner, is returned, and
// the connection is refused.
func askOwner(lookup func() (uint32, error), tries int, wait time.Duration, sleep func(time.Duration)) (uint32, error) {
	for i := 0; ; i++ {
		pid, err := lookup()
		switch {
		case err == nil && pid != 0:
			return pid, nil
		case err == nil:
			err = errNoOwner
		}
		if !errors.Is(err, errNoOwner) {
			return 0, err
		}
		if i+1 >= tries {
			return 0, fmt.Errorf("%w (asked %d times in %s)", err, tries, total(tries, wait))
		}
		sleep(wait << i)
	}
}

// total is how long askOwner waits in all over tries.
func total(tries int, wait time.Duration) time.Duration {
	var d time.Duration
	for i := 0; i+1 < tries; i++ {
		d += wait << i
	}
	return d
}
