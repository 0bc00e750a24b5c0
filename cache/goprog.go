package cache

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// GoProgCommand is the argument that makes agentbox the go command's build
// cache program (GOCACHEPROG) in a box.
const GoProgCommand = "__gocache"

// GoProg is the go command's build cache in a box, served over the
// GOCACHEPROG protocol of Go 1.24 and later (go doc cmd/go/internal/cacheprog):
// a lookup finds an entry in the workspace's private build cache, else in
// the host's own, and everything the build adds goes to the private one.
//
// It runs inside the box, as a child of the box's go command, with the
// box's rights and nothing more: the host's build cache is read-only there
// (a read-only mount under bubblewrap, no write right under Landlock), so
// nothing this program does, and nothing the box makes it do, can write
// there. A server outside the box would hold the host user's rights and
// would have to be trusted never to store what the box sends under an
// action ID the host's go later looks up; this one cannot. What the box
// puts is checked against its output ID (SHA-256) all the same, so the
// private cache holds only what go itself would store.
//
// Both folders use the go command's own layout (two hex digits, then
// <ID>-a index entries and <ID>-d outputs), so the private cache is an
// ordinary GOCACHE for a go that does not run the program (before 1.24).
type GoProg struct {
	// Read is the host's build cache: only ever read. "" for none.
	Read string
	// Write is the workspace's private build cache.
	Write string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// The go command's cache: 32-byte IDs, an index entry of
// "v1 <action> <output> <size> <time>\n" with the numbers in 20 columns.
const (
	progHashSize  = sha256.Size
	progEntrySize = 2 + 1 + 2*progHashSize + 1 + 2*progHashSize + 1 + 20 + 1 + 20 + 1
	// progTouch is how stale an entry's time may be before a lookup
	// renews it, and progTrimAge how old an entry may get unused before a
	// trim removes it: the go command's own intervals (an hour, five days),
	// since go leaves trimming a program's cache to the program.
	progTouch    = time.Hour
	progTrimAge  = 5 * 24 * time.Hour
	progTrimEach = 24 * time.Hour
	// progWorkers bounds the requests answered at once.
	progWorkers = 8
)

// progRequest is a request of the go command, one JSON object a line;
// a put with a body is followed by the body as a base64 JSON string.
type progRequest struct {
	ID       int64
	Command  string
	ActionID []byte `json:",omitempty"`
	OutputID []byte `json:",omitempty"`
	BodySize int64  `json:",omitempty"`
}

// progResponse is an answer: the first one (ID 0) lists the commands the
// program knows; the others answer requests, in any order.
type progResponse struct {
	ID            int64
	Err           string     `json:",omitempty"`
	KnownCommands []string   `json:",omitempty"`
	Miss          bool       `json:",omitempty"`
	OutputID      []byte     `json:",omitempty"`
	Size          int64      `json:",omitempty"`
	Time          *time.Time `json:",omitempty"`
	DiskPath      string     `json:",omitempty"`
}

// GoProgMain is `agentbox __gocache --read DIR --write DIR`, started by
// the go command in a box (GOCACHEPROG): it serves requests on stdin and
// stdout until go closes it.
func GoProgMain(args []string) int {
	g := &GoProg{}
	for i := 0; i < len(args); i++ {
		if i+1 >= len(args) {
			fmt.Fprintf(os.Stderr, "agentbox: error: %s: %s needs a folder\n", GoProgCommand, args[i])
			return 2
		}
		switch args[i] {
		case "--read":
			g.Read = args[i+1]
		case "--write":
			g.Write = args[i+1]
		default:
			fmt.Fprintf(os.Stderr, "agentbox: error: %s: unknown argument %q\n", GoProgCommand, args[i])
			return 2
		}
		i++
	}
	if !filepath.IsAbs(g.Write) || (g.Read != "" && !filepath.IsAbs(g.Read)) {
		fmt.Fprintf(os.Stderr, "agentbox: error: %s: --write (and --read) must be absolute folders\n", GoProgCommand)
		return 2
	}
	if err := g.Serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "agentbox: error: go build cache: %v\n", err)
		return 1
	}
	return 0
}

// Serve answers the go command's requests from in on out until a close
// request or the end of in.
func (g *GoProg) Serve(in io.Reader, out io.Writer) error {
	bw := bufio.NewWriter(out)
	enc := json.NewEncoder(bw)
	var mu sync.Mutex
	var writeErr error
	reply := func(r progResponse) {
		mu.Lock()
		defer mu.Unlock()
		if writeErr != nil {
			return
		}
		if err := enc.Encode(r); err != nil {
			writeErr = err
			return
		}
		writeErr = bw.Flush()
	}
	reply(progResponse{KnownCommands: []string{"get", "put", "close"}})

	dec := json.NewDecoder(bufio.NewReaderSize(in, 64<<10))
	var wg sync.WaitGroup
	workers := make(chan struct{}, progWorkers)
	defer wg.Wait()
	for {
		var req progRequest
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading a request: %w", err)
		}
		var body []byte
		if req.Command == "put" && req.BodySize > 0 {
			// The body is a JSON string: encoding/json decodes base64
			// into a byte slice.
			if err := dec.Decode(&body); err != nil {
				return fmt.Errorf("reading the body of request %d: %w", req.ID, err)
			}
		}
		if req.Command == "close" {
			wg.Wait()
			g.trim()
			reply(progResponse{ID: req.ID})
			mu.Lock()
			defer mu.Unlock()
			return writeErr
		}
		wg.Add(1)
		workers <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-workers }()
			reply(g.answer(req, body))
		}()
	}
}

// answer handles one get or put.
func (g *GoProg) answer(req progRequest, body []byte) progResponse {
	switch req.Command {
	case "get":
		if len(req.ActionID) != progHashSize {
			return progResponse{ID: req.ID, Err: "get: the action ID is not 32 bytes"}
		}
		res := g.get(req.ActionID)
		res.ID = req.ID
		return res
	case "put":
		path, err := g.put(req.ActionID, req.OutputID, req.BodySize, body)
		if err != nil {
			return progResponse{ID: req.ID, Err: "put: " + err.Error()}
		}
		return progResponse{ID: req.ID, DiskPath: path}
	}
	return progResponse{ID: req.ID, Err: fmt.Sprintf("unknown command %q", req.Command)}
}

func (g *GoProg) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// progFile is where the go command keeps id's index entry (kind "a") or
// output (kind "d") in dir.
func progFile(dir string, id []byte, kind string) string {
	return filepath.Join(dir, hex.EncodeToString(id[:1]), hex.EncodeToString(id)+"-"+kind)
}

// get looks id up in the private cache, then in the host's; anything
// that is not a complete, consistent entry is a miss.
func (g *GoProg) get(id []byte) progResponse {
	if e, ok := readProgEntry(g.Write, id); ok {
		g.touch(progFile(g.Write, id, "a"))
		g.touch(e.path)
		return e.hit()
	}
	if g.Read != "" {
		if e, ok := readProgEntry(g.Read, id); ok {
			return e.hit()
		}
	}
	return progResponse{Miss: true}
}

// progEntry is an index entry and its output file.
type progEntry struct {
	output []byte
	size   int64
	time   time.Time
	path   string
}

func (e progEntry) hit() progResponse {
	t := e.time
	return progResponse{OutputID: e.output, Size: e.size, Time: &t, DiskPath: e.path}
}

// readProgEntry reads id's index entry in dir and checks that its output
// is a regular file of the size the entry says.
func readProgEntry(dir string, id []byte) (progEntry, bool) {
	f, err := os.Open(progFile(dir, id, "a"))
	if err != nil {
		return progEntry{}, false
	}
	defer f.Close()
	buf := make([]byte, progEntrySize+1)
	n, _ := io.ReadFull(f, buf)
	e, ok := parseProgEntry(buf[:n], id)
	if !ok {
		return progEntry{}, false
	}
	e.path = progFile(dir, e.output, "d")
	fi, err := os.Lstat(e.path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != e.size {
		return progEntry{}, false
	}
	return e, true
}

// parseProgEntry parses an index entry for id.
func parseProgEntry(b []byte, id []byte) (progEntry, bool) {
	if len(b) != progEntrySize || !bytes.HasPrefix(b, []byte("v1 ")) || b[len(b)-1] != '\n' {
		return progEntry{}, false
	}
	fields := strings.Fields(string(b[3:]))
	if len(fields) != 4 {
		return progEntry{}, false
	}
	action, err1 := hex.DecodeString(fields[0])
	output, err2 := hex.DecodeString(fields[1])
	size, err3 := strconv.ParseInt(fields[2], 10, 64)
	nanos, err4 := strconv.ParseInt(fields[3], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil ||
		!bytes.Equal(action, id) || len(output) != progHashSize || size < 0 {
		return progEntry{}, false
	}
	return progEntry{output: output, size: size, time: time.Unix(0, nanos)}, true
}

// put stores body as output, and the index entry id → output, in the
// private cache; it returns the output's path. The output must be what
// its ID says (the SHA-256 of the body).
func (g *GoProg) put(id, output []byte, size int64, body []byte) (string, error) {
	if len(id) != progHashSize || len(output) != progHashSize {
		return "", errors.New("the action and output IDs must be 32 bytes")
	}
	if int64(len(body)) != size {
		return "", fmt.Errorf("the body has %d bytes, the request says %d", len(body), size)
	}
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], output) {
		return "", errors.New("the body is not what its output ID says")
	}
	path := progFile(g.Write, output, "d")
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() || fi.Size() != size {
		if err := writeAtomic(path, body); err != nil {
			return "", err
		}
	}
	entry := fmt.Sprintf("v1 %x %x %20d %20d\n", id, output, size, g.now().UnixNano())
	if err := writeAtomic(progFile(g.Write, id, "a"), []byte(entry)); err != nil {
		return "", err
	}
	return path, nil
}

// writeAtomic writes data to a new file beside path and renames it there,
// so a reader sees the whole file or none.
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// touch renews a private file's time when it is older than progTouch, so
// a trim keeps what builds still use.
func (g *GoProg) touch(path string) {
	now := g.now()
	if fi, err := os.Lstat(path); err == nil && now.Sub(fi.ModTime()) > progTouch {
		os.Chtimes(path, now, now)
	}
}

// trim removes the private cache's entries that no build used for
// progTrimAge, at most once every progTrimEach (trim.txt holds the time of
// the last trim, as the go command keeps it). Best effort: a cache that
// cannot be trimmed still works.
func (g *GoProg) trim() {
	now := g.now()
	mark := filepath.Join(g.Write, "trim.txt")
	if b, err := os.ReadFile(mark); err == nil {
		if t, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			if d := now.Sub(time.Unix(t, 0)); d < progTrimEach && d > -progTouch {
				return
			}
		}
	}
	if writeAtomic(mark, []byte(strconv.FormatInt(now.Unix(), 10))) != nil {
		return
	}
	cutoff := now.Add(-progTrimAge)
	for i := 0; i < 256; i++ {
		dir := filepath.Join(g.Write, fmt.Sprintf("%02x", i))
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, "-a") && !strings.HasSuffix(name, "-d") && !strings.Contains(name, ".tmp-") {
				continue
			}
			if fi, err := e.Info(); err == nil && fi.ModTime().Before(cutoff) {
				os.Remove(filepath.Join(dir, name))
			}
		}
	}
}
