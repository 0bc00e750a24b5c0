//go:build !windows

package policy

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Files resolution reads are regular files of bounded size, refused
// before they are read whole.
func TestReadFileBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, MaxFileSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(dir, "ok")
	if err := os.WriteFile(ok, make([]byte, MaxFileSize), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink("/proc/self/pagemap", link)
	for _, tc := range []struct{ path, want string }{
		{big, "larger than 1024 KiB"},
		{"/dev/zero", "not a regular file (a character device)"},
		{fifo, "not a regular file (a FIFO)"},
		{dir, "not a regular file (a folder)"},
		{link, "larger than 1024 KiB"},
	} {
		_, err := OSFS{}.ReadFile(tc.path)
		var fe *FileError
		if !errors.As(err, &fe) || fe.Why[:min(len(tc.want), len(fe.Why))] != tc.want {
			t.Errorf("%s: %v, want %q", tc.path, err, tc.want)
		}
	}
	if data, err := (OSFS{}).ReadFile(ok); err != nil || len(data) != MaxFileSize {
		t.Errorf("a file of exactly the limit: %d bytes, %v", len(data), err)
	}
}
