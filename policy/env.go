package policy

import (
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

// ReadFile calls os.ReadFile.
func (OSFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

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
}

// Getenv returns the value of name in e.Environ.
func (e Env) Getenv(name string) string {
	for i := len(e.Environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(e.Environ[i], "="); ok && k == name {
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
func FindProject(env Env, dir string) string {
	for {
		p := filepath.Join(dir, ProjectFile)
		if fi, err := env.FS.Stat(p); err == nil && fi.Mode().IsRegular() {
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
