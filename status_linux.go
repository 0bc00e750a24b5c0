package main

import "golang.org/x/sys/unix"

// rootReadOnly reports whether / is mounted read-only for this process.
func rootReadOnly() bool {
	var st unix.Statfs_t
	if err := unix.Statfs("/", &st); err != nil {
		return false
	}
	return st.Flags&unix.ST_RDONLY != 0
}
