//go:build linux

package integration

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Host unix sockets by what they are, not where they lie: a service
// listening on a socket in a folder of the user's home that no variable
// names and no known place lists (an editor's, an agent's), or anywhere
// else outside the writable roots, does not answer the box in any network
// mode unless network.unix_sockets names it; a datagram cannot be sent to
// one either. A socket inside the project, and one the box makes in its
// own /tmp or in the project, still work under bubblewrap. Under Landlock
// the box may make no unix socket at all, so none of them answers.

// greetServer serves greeting on a stream unix socket at path until the
// test ends.
func greetServer(t *testing.T, path, greeting string) {
	t.Helper()
	mkdir(t, filepath.Dir(path))
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o777)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(greeting + "\n"))
			c.Close()
		}
	}()
}

// dgramServer listens for datagrams at path and returns what has come
// when asked.
func dgramServer(t *testing.T, path string) func() int {
	t.Helper()
	mkdir(t, filepath.Dir(path))
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o777)
	t.Cleanup(func() { c.Close() })
	return func() int {
		n := 0
		buf := make([]byte, 64)
		for {
			c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			if _, _, err := c.ReadFrom(buf); err != nil {
				return n
			}
			n++
		}
	}
}

var unixModes = [][]string{{"--network", "open"}, {"--network", "none"}, {"--network", "allowlist", "--allow", "example.test"}}

func TestHostSocketInHomeFolder(t *testing.T) {
	for _, mode := range unixModes {
		t.Run(mode[1], func(t *testing.T) {
			eachBackend(t, func(t *testing.T, be []string) {
				w := newWorld(t)
				os.Chmod(w.base, 0o755)
				probe := buildC(t, w.base, "testdata/unixrace.c")
				home := filepath.Join(w.home, ".myeditor", "ipc.sock")
				elsewhere := filepath.Join(w.base, "services", "elsewhere.sock")
				inside := filepath.Join(w.project, "inside.sock")
				greetServer(t, home, "forbidden-home")
				greetServer(t, elsewhere, "forbidden-elsewhere")
				greetServer(t, inside, "project-answer")
				got := dgramServer(t, filepath.Join(w.home, ".myeditor", "log.sock"))
				script := strings.Join([]string{
					probe + " connect " + home,
					probe + " connect " + elsewhere,
					probe + " connect " + inside,
					"cd " + w.project + " && " + probe + " connect inside.sock",
					probe + " self /tmp",
					probe + " self " + w.project,
					probe + " dgram " + filepath.Join(w.home, ".myeditor", "log.sock"),
				}, "; ")
				r := w.sh(args(be, mode), script)
				expectNotContains(t, "box output", r.stdout, "forbidden-home")
				expectNotContains(t, "box output", r.stdout, "forbidden-elsewhere")
				if n := got(); n != 0 {
					t.Errorf("a host datagram socket in the home folder received %d datagrams from the box: %s", n, r)
				}
				if be[1] == "bwrap" {
					if c := strings.Count(r.stdout, "answer: project-answer"); c != 2 {
						t.Errorf("a socket inside the project answered %d times of 2 under bwrap: %s", c, r)
					}
					if c := strings.Count(r.stdout, "self: self-answer"); c != 2 {
						t.Errorf("the box's own sockets (/tmp, the project) answered %d times of 2: %s", c, r)
					}
				}
				// Named, the socket answers (under Landlock it may not be
				// enforceable: refused, or every socket answers); one
				// not named still does not.
				pol := policyFile(t, w, "[network]\nunix_sockets = [\"~/.myeditor/ipc.sock\"]\n")
				r = w.sh(args(be, mode, []string{"--policy", pol}), probe+" connect "+home+"; "+probe+" connect "+elsewhere)
				if r.code == 125 && be[1] == "landlock" {
					return
				}
				expectContains(t, "a named socket", r.stdout, "answer: forbidden-home")
				if be[1] == "bwrap" {
					expectNotContains(t, "a socket not named", r.stdout, "forbidden-elsewhere")
				}
			})
		})
	}
}

// The box swaps what it asked for while agentbox judges it: a thread
// rewrites the address between a socket inside the project and one in the
// home folder, and another points a link in the project at one and the
// other in turn. What agentbox connects is what it judged: the home
// folder's socket never answers.
func TestHostSocketRace(t *testing.T) {
	for _, mode := range unixModes {
		t.Run(mode[1], func(t *testing.T) {
			eachBackend(t, func(t *testing.T, be []string) {
				w := newWorld(t)
				os.Chmod(w.base, 0o755)
				probe := buildC(t, w.base, "testdata/unixrace.c")
				home := filepath.Join(w.home, ".myeditor", "ipc.sock")
				inside := filepath.Join(w.project, "inside.sock")
				greetServer(t, home, "forbidden-home")
				greetServer(t, inside, "project-answer")
				n := raceTries(t)
				w.timeout = 5 * time.Minute
				r := w.sh(args(be, mode), probe+" race "+inside+" "+home+" "+filepath.Join(w.project, "flip.sock")+" "+strconv.Itoa(n))
				m := regexp.MustCompile(`race good=(\d+) bad=(\d+) refused=(\d+)`).FindStringSubmatch(r.stdout)
				if m == nil {
					t.Fatalf("the racer did not finish: %s", r)
				}
				if m[2] != "0" {
					t.Errorf("the home folder's socket answered %s of %d racing connects: %s", m[2], 2*n, r)
				}
				if be[1] == "bwrap" && m[1] == "0" {
					t.Errorf("no racing connect reached the project's socket under bwrap: %s", r)
				}
				t.Logf("%s %s: %s", be[1], mode[1], m[0])
			})
		})
	}
}
