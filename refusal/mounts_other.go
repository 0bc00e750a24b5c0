//go:build !linux

package refusal

// hostMounts has no kernel filesystems to find outside Linux (Windows has
// none; macOS's devfs is /dev, which the kernel trees name by path).
func hostMounts() ([]MountPoint, bool) { return nil, true }
