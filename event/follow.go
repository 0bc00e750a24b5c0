package event

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"time"
)

// FollowPoll is how often Follow looks for new events.
const FollowPoll = 200 * time.Millisecond

// Follow calls fn with every event appended to the audit log in dir from
// now on, with its line as stored, until ctx is done; it then returns nil.
// It follows the current file across rotations (the rest of the rotated
// file is read first, then any file rotated after it) and waits for the
// folder and the file to appear.
func Follow(ctx context.Context, dir string, fn func(e Event, line []byte)) error {
	t := &tail{fn: fn}
	defer t.close()
	atEnd := true // what is there when following starts is not shown
	for {
		if t.d == nil {
			d, err := openFolder(dir, os.Geteuid(), false)
			switch {
			case errors.Is(err, os.ErrNotExist):
				atEnd = false
			case err != nil:
				return err
			default:
				t.d = d
			}
		}
		if t.d != nil && t.f == nil {
			f, err := t.d.open(Current)
			switch {
			case errors.Is(err, os.ErrNotExist):
				atEnd = false
			case err != nil:
				return err
			default:
				t.f = f
				if atEnd {
					if _, err := f.Seek(0, io.SeekEnd); err != nil {
						return err
					}
				}
			}
		}
		if t.f != nil {
			if err := t.read(t.f); err != nil {
				return err
			}
			if !t.d.same(t.f, Current) {
				if err := t.rotated(); err != nil {
					return err
				}
				atEnd = false
				continue
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(FollowPoll):
		}
	}
}

// tail is Follow's state: the folder, the file being read and a line not
// ended yet.
type tail struct {
	fn      func(Event, []byte)
	d       *folder
	f       *os.File
	pending []byte
}

// read passes every complete line of f from where it is to fn.
func (t *tail) read(f *os.File) error {
	var buf [64 << 10]byte
	for {
		n, err := f.Read(buf[:])
		t.pending = append(t.pending, buf[:n]...)
		for {
			i := bytes.IndexByte(t.pending, '\n')
			if i < 0 {
				break
			}
			line := append([]byte(nil), t.pending[:i]...)
			t.pending = t.pending[i+1:]
			if e, ok := parse(line); ok {
				t.fn(e, line)
			}
		}
		if len(t.pending) > maxLine {
			t.pending = nil
		}
		switch {
		case err == io.EOF || (err == nil && n == 0):
			return nil
		case err != nil:
			return err
		}
	}
}

// rotated finishes the file that was rotated away, then reads every file
// rotated after it (more than one rotation can happen between two looks),
// and leaves the new current file to be opened from its start.
func (t *tail) rotated() error {
	if err := t.read(t.f); err != nil {
		return err
	}
	t.pending = nil
	if names, err := t.d.names(); err == nil {
		rotated := RotatedNames(names)
		found := false
		for _, name := range rotated {
			if !found {
				found = t.d.same(t.f, name)
				continue
			}
			f, err := t.d.open(name)
			if err != nil {
				continue
			}
			err = t.read(f)
			f.Close()
			t.pending = nil
			if err != nil {
				return err
			}
		}
	}
	t.f.Close()
	t.f = nil
	return nil
}

func (t *tail) close() {
	if t.f != nil {
		t.f.Close()
	}
	if t.d != nil {
		t.d.Close()
	}
}
