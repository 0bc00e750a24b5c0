//go:build linux && (amd64 || arm64)

package fslog

import (
	"encoding/binary"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/event"
)

// realFrames are frames the preloaded library wrote (sh, mkdir, mv, ln,
// chmod, rm refused in a read-only root, recorded from its pipe), and
// realRecords the records in them: what the box sends agentbox on the
// pipe, and on the socket as datagrams.
func realFrames(f *testing.F) ([]byte, [][]byte) {
	b, err := os.ReadFile("testdata/preload-frames.bin")
	if err != nil {
		f.Fatal(err)
	}
	var recs [][]byte
	for rest := b; len(rest) >= frameHead; {
		size := int(binary.LittleEndian.Uint32(rest))
		if size < frameHead || size > len(rest) {
			f.Fatalf("testdata/preload-frames.bin: a frame of %d bytes", size)
		}
		recs = append(recs, rest[frameHead:size])
		rest = rest[size:]
	}
	if len(recs) < 5 {
		f.Fatalf("testdata/preload-frames.bin holds %d records", len(recs))
	}
	return b, recs
}

// fuzzServer is a preloadServer that refuses every attempt, and checks
// what it is given and what it emits.
func fuzzServer(t *testing.T, fd int, pipe bool) *preloadServer {
	s := &preloadServer{fd: fd, root: -1, landlock: true, pipe: pipe, judge: func(a Attempt) (event.Event, bool) {
		if len(a.Targets) == 0 || len(a.Targets) > 2 {
			t.Fatalf("an attempt with %d targets: %+v", len(a.Targets), a)
		}
		return event.Event{Kind: event.Denied, Op: string(a.Op), Path: a.Targets[0].Real}, true
	}, ev: emitFunc(func(e event.Event) {
		if e.Process == "" {
			t.Fatalf("a refusal that names no process: %+v", e)
		}
	}), seen: newDedup(), keys: map[string]bool{}}
	s.tokens, s.last = preloadBurst, time.Now()
	return s
}

// FuzzPreloadFrames writes any bytes to the preloaded log's pipe, in
// writes of any size, as any process of the box may: the reader judges
// whole frames, drops what is no frame, keeps at most a frame's worth
// between reads, and never fails.
func FuzzPreloadFrames(f *testing.F) {
	all, recs := realFrames(f)
	f.Add(all, uint16(0))
	f.Add(all, uint16(5))
	f.Add(all[:len(all)-3], uint16(100))
	for _, r := range recs {
		f.Add(frame(7, r), uint16(3))
	}
	f.Add([]byte("garbage-garbage"), uint16(0))
	f.Fuzz(func(t *testing.T, in []byte, chunk uint16) {
		if len(in) > 60000 {
			in = in[:60000] // a pipe holds 64 KiB
		}
		var fds [2]int
		if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fds[0])
		defer unix.Close(fds[1])
		s := fuzzServer(t, fds[0], true)
		defer func() {
			if s.root >= 0 {
				unix.Close(s.root)
			}
		}()
		buf := make([]byte, 0, 1<<16)
		n := int(chunk)
		if n == 0 {
			n = len(in)
		}
		for len(in) > 0 {
			w := min(n, len(in))
			unix.Write(fds[1], in[:w])
			in = in[w:]
			for s.frames(&buf) {
			}
			if len(buf) > pipeBuf {
				t.Fatalf("%d bytes kept between reads: more than a frame", len(buf))
			}
		}
		if len(s.keys) > maxSeen {
			t.Fatalf("%d records remembered", len(s.keys))
		}
	})
}

// FuzzPreloadDatagram sends any datagram to the preloaded log's socket:
// it is judged as a record or counted as none, and a record that parses
// is one the library could have sent.
func FuzzPreloadDatagram(f *testing.F) {
	_, recs := realFrames(f)
	for _, r := range recs {
		f.Add(r)
	}
	f.Add([]byte("fsl1"))
	f.Add(rec(0, 0, 0, 3, "", "", "", "", "", ""))
	f.Fuzz(func(t *testing.T, in []byte) {
		if r, ok := parseRecord(in); ok {
			if r.op == "" && (r.call != "" || r.path[0] != "") {
				t.Fatalf("a count of lost refusals with a call: %+v", r)
			}
			if r.op != "" && (r.path[0] == "" || len(r.path[0]) > maxRecordPath || len(r.path[1]) > maxRecordPath) {
				t.Fatalf("a record with paths it cannot have: %+v", r)
			}
			if (r.op == Rename || r.op == Link) != (r.path[1] != "") {
				t.Fatalf("a record whose second path does not fit its call: %+v", r)
			}
			_ = r.key()
		}
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fds[0])
		defer unix.Close(fds[1])
		unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
		s := fuzzServer(t, fds[0], false)
		s.landlock = true // the host's root: no box here
		defer func() {
			if s.root >= 0 {
				unix.Close(s.root)
			}
		}()
		if len(in) > 60000 {
			in = in[:60000]
		}
		if err := unix.Send(fds[1], in, 0); err != nil {
			t.Skip(err)
		}
		buf := make([]byte, 1<<16)
		oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred))
		if !s.one(buf, oob) {
			t.Fatal("the datagram sent was not received")
		}
	})
}
