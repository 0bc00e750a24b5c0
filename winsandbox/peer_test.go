package winsandbox

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// row builds a TCP table row as Windows fills it: addresses as their
// network-order bytes read little-endian, ports in network order.
func row(state uint32, local [4]byte, lport uint16, remote [4]byte, rport uint16, pid uint32) tcpRow {
	ip := func(b [4]byte) uint32 { return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24 }
	port := func(p uint16) uint32 { return uint32(p>>8 | p<<8) }
	return tcpRow{State: state, LocalAddr: ip(local), LocalPort: port(lport), RemoteAddr: ip(remote), RemotePort: port(rport), OwningPID: pid}
}

func TestConnOwner(t *testing.T) {
	lo := [4]byte{127, 0, 0, 1}
	other := [4]byte{10, 0, 0, 2}
	for _, tc := range []struct {
		name    string
		rows    []tcpRow
		pid     uint32
		wantErr string
	}{
		{"the connection", []tcpRow{row(tcpStateEstablished, lo, 50000, lo, 47080, 1234)}, 1234, ""},
		{"the proxy's own end is not the client's", []tcpRow{row(tcpStateEstablished, lo, 47080, lo, 50000, 99)}, 0, "no such connection"},
		{"another address", []tcpRow{row(tcpStateEstablished, other, 50000, lo, 47080, 99)}, 0, "no such connection"},
		{"a TIME_WAIT row of the same four-tuple is skipped",
			[]tcpRow{row(tcpStateTimeWait, lo, 50000, lo, 47080, 0), row(tcpStateEstablished, lo, 50000, lo, 47080, 1234)}, 1234, ""},
		{"only a closed row", []tcpRow{row(tcpStateTimeWait, lo, 50000, lo, 47080, 0)}, 0, "no such connection"},
		{"an open row without an owner is never some process",
			[]tcpRow{row(tcpStateEstablished, lo, 50000, lo, 47080, 0)}, 0, errNoOwner.Error()},
		{"a closing connection still has its owner", []tcpRow{row(tcpStateCloseWait, lo, 50000, lo, 47080, 77)}, 77, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pid, err := connOwner(tc.rows, lo, 50000, lo, 47080)
			if pid != tc.pid || (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("connOwner = %d, %v; want %d, %q", pid, err, tc.pid, tc.wantErr)
			}
		})
	}
}

// TestAskOwner: an owner the table does not name yet is asked for again,
// with growing waits, and at most ownerTries times; anything else is not.
func TestAskOwner(t *testing.T) {
	type answer struct {
		pid uint32
		err error
	}
	notInTable := errors.New("no such connection in the TCP table")
	for _, tc := range []struct {
		name    string
		answers []answer
		pid     uint32
		asked   int
		slept   []time.Duration
		wantErr string
	}{
		{"at once", []answer{{42, nil}}, 42, 1, nil, ""},
		{"after two misses", []answer{{0, errNoOwner}, {0, nil}, {42, nil}}, 42, 3, []time.Duration{25 * time.Millisecond, 50 * time.Millisecond}, ""},
		{"never", nil, 0, ownerTries,
			[]time.Duration{25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond,
				400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond},
			"asked 8 times in 3.175s"},
		{"not in the table is not asked again", []answer{{0, notInTable}}, 0, 1, nil, "no such connection"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := 0
			var slept []time.Duration
			pid, err := askOwner(func() (uint32, error) {
				asked++
				if asked <= len(tc.answers) {
					a := tc.answers[asked-1]
					return a.pid, a.err
				}
				return 0, errNoOwner
			}, ownerTries, ownerWait, func(d time.Duration) { slept = append(slept, d) })
			if pid != tc.pid || asked != tc.asked || (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("askOwner = %d, %v after %d asks; want %d, %q after %d", pid, err, asked, tc.pid, tc.wantErr, tc.asked)
			}
			if diff := cmp.Diff(tc.slept, slept); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
		})
	}
}
