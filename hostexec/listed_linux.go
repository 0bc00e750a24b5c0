package hostexec

import (
	"golang.org/x/sys/unix"
)

// The file systems whose names listDir trusts to match byte for byte, but
// for a folder marked to fold case (FS_CASEFOLD_FL, which ext4, F2FS and
// tmpfs offer per folder). XFS (its ascii-ci format), overlayfs (its
// layers'), FAT, NTFS, network and FUSE file systems are left to lstat.
var listedFS = map[int64]bool{
	unix.EXT4_SUPER_MAGIC:  true, // ext2, ext3, ext4
	unix.BTRFS_SUPER_MAGIC: true,
	unix.TMPFS_MAGIC:       true,
	unix.F2FS_SUPER_MAGIC:  true,
}

// fsCasefoldFL is FS_CASEFOLD_FL: the folder's lookups fold case.
const fsCasefoldFL = 0x40000000

// exactNames says whether a folder of file system fsType, with inode
// flags (read with the error err), matches names byte for byte.
func exactNames(fsType int64, flags uint32, err error) bool {
	return listedFS[fsType] && err == nil && flags&fsCasefoldFL == 0
}

// listDir lists dir as lstat would reach it (every part followed), or
// says why nothing can be said from it.
func listDir(dir string) *dirNames {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	switch err {
	case nil:
	case unix.ENOENT, unix.ENOTDIR:
		// lstat of any name in it fails the same way.
		return &dirNames{gone: true}
	default:
		return &dirNames{unknown: true}
	}
	defer unix.Close(fd)
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil || !listedFS[int64(sfs.Type)] {
		return &dirNames{unknown: true}
	}
	if flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS); !exactNames(int64(sfs.Type), flags, err) {
		return &dirNames{unknown: true}
	}
	names := map[string]bool{}
	buf := make([]byte, 8192)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return &dirNames{unknown: true}
		}
		if n <= 0 {
			break
		}
		_, _, got := unix.ParseDirent(buf[:n], -1, nil)
		for _, name := range got {
			names[name] = true
		}
	}
	return &dirNames{names: names}
}
