//go:build unix && !linux

package event

// renameNoReplace renames within the folder dirfd, failing with EEXIST
// rather than replacing what is at to.
func renameNoReplace(dirfd int, from, to string) error {
	return renameChecked(dirfd, from, to)
}
