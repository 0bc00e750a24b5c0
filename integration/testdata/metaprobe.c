/*
 * metaprobe.c - every way to change a file's metadata without writing it:
 *
 *   metaprobe FILE [NAME...]
 *
 * Tries each on FILE and prints "NAME ok" or "NAME errno=N":
 *   chmod, fchmodat, fchmodat2, fchmod (on a read-only descriptor)   mode 0777
 *   setuid (chmod 04755), setgid (chmod 02755), fchmod-setuid
 *   chown, lchown, fchown, fchownat       owner unchanged, group: the caller's second group if it has one
 *   utimensat, utimes, futimens (read-only descriptor), futimesat   the times of 2001-01-01
 *   setxattr, lsetxattr, fsetxattr (user.agentbox), removexattr (user.agentbox-old)
 *   setflags                              FS_IOC_SETFLAGS with FS_NODUMP_FL
 *   procfd                                chmod through /proc/self/fd/N of an O_PATH descriptor
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <unistd.h>

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif

static const char *file;

static gid_t othergid(void)
{
	gid_t g[64];
	int n = getgroups(64, g);
	for (int i = 0; i < n; i++)
		if (g[i] != getegid()) return g[i];
	return getegid();
}

static long call(const char *name)
{
	struct timespec ts[2] = {{978307200, 0}, {978307200, 0}};
	struct timeval tv[2] = {{978307200, 0}, {978307200, 0}};
	if (!strcmp(name, "chmod")) return chmod(file, 0777);
	if (!strcmp(name, "fchmodat")) return syscall(SYS_fchmodat, AT_FDCWD, file, 0777);
	if (!strcmp(name, "fchmodat2")) return syscall(SYS_fchmodat2, AT_FDCWD, file, 0777, 0);
	if (!strcmp(name, "setuid")) return chmod(file, 04755);
	if (!strcmp(name, "setgid")) return chmod(file, 02755);
	if (!strcmp(name, "chown")) return chown(file, -1, othergid());
	if (!strcmp(name, "lchown")) return lchown(file, -1, othergid());
	if (!strcmp(name, "fchownat")) return fchownat(AT_FDCWD, file, -1, othergid(), 0);
	if (!strcmp(name, "utimensat")) return utimensat(AT_FDCWD, file, ts, 0);
	if (!strcmp(name, "utimes")) return utimes(file, tv);
	if (!strcmp(name, "futimesat")) return syscall(SYS_futimesat, AT_FDCWD, file, tv);
	if (!strcmp(name, "setxattr")) return setxattr(file, "user.agentbox", "x", 1, 0);
	if (!strcmp(name, "lsetxattr")) return lsetxattr(file, "user.agentbox", "x", 1, 0);
	if (!strcmp(name, "removexattr")) return removexattr(file, "user.agentbox-old");
	if (!strcmp(name, "procfd")) {
		int fd = open(file, O_PATH);
		if (fd < 0) return -1;
		char p[64];
		snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
		return chmod(p, 0777);
	}
	int fd = open(file, O_RDONLY | O_NONBLOCK);
	if (fd < 0) return -1;
	if (!strcmp(name, "fchmod")) return fchmod(fd, 0777);
	if (!strcmp(name, "fchmod-setuid")) return fchmod(fd, 04755);
	if (!strcmp(name, "fchown")) return fchown(fd, -1, othergid());
	if (!strcmp(name, "futimens")) return futimens(fd, ts);
	if (!strcmp(name, "fsetxattr")) return fsetxattr(fd, "user.agentbox", "x", 1, 0);
	if (!strcmp(name, "setflags")) {
		int f = 0;
		if (ioctl(fd, FS_IOC_GETFLAGS, &f) < 0) return -1;
		f |= FS_NODUMP_FL;
		return ioctl(fd, FS_IOC_SETFLAGS, &f);
	}
	errno = EINVAL;
	return -1;
}

static const char *all[] = {"chmod", "fchmodat", "fchmodat2", "fchmod", "setuid", "setgid", "fchmod-setuid",
			    "chown", "lchown", "fchown", "fchownat", "utimensat", "utimes", "futimens", "futimesat",
			    "setxattr", "lsetxattr", "fsetxattr", "removexattr", "setflags", "procfd", 0};

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: metaprobe FILE [NAME...]\n");
		return 2;
	}
	file = argv[1];
	const char **names = argc > 2 ? (const char **)argv + 2 : all;
	for (int i = 0; names[i]; i++) {
		errno = 0;
		if (call(names[i]) < 0)
			printf("%s errno=%d\n", names[i], errno);
		else
			printf("%s ok\n", names[i]);
	}
	return 0;
}
