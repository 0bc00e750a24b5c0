package event

import (
	"errors"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames within the folder dirfd, failing with EEXIST
// rather than replacing what is at to (renameat2 RENAME_NOREPLACE, Linux
// 3.15). A file system without it gets a check, then a plain rename.
func renameNoReplace(dirfd int, from, to string) error {
	err := unix.Renameat2(dirfd, from, dirfd, to, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return renameChecked(dirfd, from, to)
	}
	return err
}
