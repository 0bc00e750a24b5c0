package policy

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// FS is the part of the filesystem resolution looks at. It never writes.
type FS interface {
	Stat(name string) (fs.FileInfo, error)
	Lstat(name string) (fs.FileInfo, error)
	EvalSymlinks(name string) (string, error)
	ReadDir(name string) ([]fs.DirEntry, error)
	ReadFile(name string) ([]byte, error)
	Readlink(name string) (string, error)
}

// OSFS is the real filesystem.
type OSFS struct{}

// Stat calls os.Stat.
func (OSFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

// Lstat calls os.Lstat.
func (OSFS) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(name) }

// EvalSymlinks calls filepath.EvalSymlinks.
func (OSFS) EvalSymlinks(name string) (string, error) { return filepath.EvalSymlinks(name) }

// ReadDir calls os.ReadDir.
func (OSFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

// MaxFileSize is the most bytes resolution reads of any one file (a policy,
// a .git file, an agent CLI's config): anything larger is refused before it
// is read whole.
const MaxFileSize = 1 << 20

// FileError is a file resolution refuses to read: not a regular file (a
// device, a FIFO, a socket) or larger than MaxFileSize. A project policy
// that links to /dev/zero or /proc/self/pagemap must be an error, not a
// hang or an out-of-memory death before the trust check.
type FileError struct {
	Path string
	Why  string
}

func (e *FileError) Error() string { return e.Path + ": " + e.Why }

// ReadFile reads a regular file of at most MaxFileSize bytes. It follows
// symbolic links (a user's config may be one), checks what it opened, and
// never reads more than one byte past the limit.
func (OSFS) ReadFile(name string) ([]byte, error) {
	// Non-blocking: a FIFO must not hang the open; it is refused below.
	f, err := os.OpenFile(name, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &FileError{Path: name, Why: "not a regular file (" + kind(fi.Mode()) + ")"}
	}
	tooLarge := &FileError{Path: name, Why: fmt.Sprintf("larger than %d KiB, refused before reading it", MaxFileSize>>10)}
	if fi.Size() > MaxFileSize {
		return nil, tooLarge
	}
	// The size a file claims is not a promise (/proc files say 0): read
	// at most one byte past the limit, in blocks that are a multiple of 8
	// (some /proc files refuse any other read size).
	var data []byte
	buf := make([]byte, 32<<10)
	for len(data) <= MaxFileSize {
		n, err := f.Read(buf)
		data = append(data, buf[:n]...)
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return nil, tooLarge
}

// kind names a file type that is not a regular file.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "not a plain file"
}

// Readlink calls os.Readlink.
func (OSFS) Readlink(name string) (string, error) { return os.Readlink(name) }

// Real is true: searches of OSFS list folders with the system's own calls
// (package hostexec's fast walk) rather than through ReadDir.
func (OSFS) Real() bool { return true }

// Env is the world resolution runs in: who, where, which environment and
// which filesystem. Tests build one by hand; main builds it from the process.
type Env struct {
	GOOS    string
	UID     int
	GID     int
	Home    string
	Cwd     string
	TempDir string // the host's temporary folder, usually /tmp
	// User names the caller where UID cannot: on Windows (UID -1) it is
	// the user's SID, and agentbox's per-user temporary folder is named
	// after it.
	User    string
	Environ []string
	FS      FS
	// Self is the agentbox executable, which the box runs for the
	// processes agentbox serves inside it (the go command's build cache
	// program); "" when it is not known, and then nothing relies on it.
	Self string
}

// Getenv returns the value of name in e.Environ.
func (e Env) Getenv(name string) string {
	for i := len(e.Environ) - 1; i >= 0; i-- {
		// Windows variable names are case-insensitive (AppData is APPDATA).
		if k, v, ok := strings.Cut(e.Environ[i], "="); ok && (k == name || e.GOOS == "windows" && strings.EqualFold(k, name)) {
			return v
		}
	}
	return ""
}

// ConfigPath returns the user's config file: $XDG_CONFIG_HOME/agentbox/config.toml.
func ConfigPath(env Env) string {
	dir := env.Getenv("XDG_CONFIG_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		dir = filepath.Join(env.Home, ".config")
	}
	return filepath.Join(dir, "agentbox", "config.toml")
}

// ProjectFile is the name of a project policy.
const ProjectFile = ".agentbox.toml"

// FindProject returns the nearest .agentbox.toml walking up from dir, or "".
// Whatever is there counts, so that one that is not a regular file is an
// error (see OSFS.ReadFile) rather than skipped in favour of a parent's.
func FindProject(env Env, dir string) string {
	for {
		p := filepath.Join(dir, ProjectFile)
		if _, err := env.FS.Lstat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// CacheDir returns agentbox's cache folder: $XDG_CACHE_HOME/agentbox.
func CacheDir(env Env) string {
	dir := env.Getenv("XDG_CACHE_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		dir = filepath.Join(env.Home, ".cache")
	}
	return filepath.Join(dir, "agentbox")
}
