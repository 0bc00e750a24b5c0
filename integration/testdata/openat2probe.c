/*
 * openat2probe.c - makes files with a setuid and setgid mode through every
 * call that takes a mode:
 *
 *   openat2probe DIR
 *
 * Prints "NAME ok" or "NAME errno=N" for each:
 *   openat2     openat2(2) with O_CREAT and mode 06755 in struct open_how
 *   openat2-tmp openat2(2) with O_TMPFILE and mode 06755, then linked in
 *   openat      openat(2) with O_CREAT and mode 06755
 *   fopen       the libc open(3) with O_CREAT and mode 06755 (glibc calls openat)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

struct how {
	uint64_t flags, mode, resolve;
};

static void report(const char *name, long r)
{
	if (r < 0)
		printf("%s errno=%d\n", name, errno);
	else
		printf("%s ok\n", name);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: openat2probe DIR\n");
		return 2;
	}
	char p[4096];
	snprintf(p, sizeof p, "%s/o2-suid", argv[1]);
	struct how h = {O_CREAT | O_WRONLY | O_CLOEXEC, 06755, 0};
	long fd = syscall(SYS_openat2, AT_FDCWD, p, &h, sizeof h);
	report("openat2", fd);
	if (fd >= 0) close(fd);

	struct how t = {O_TMPFILE | O_WRONLY | O_CLOEXEC, 06755, 0};
	fd = syscall(SYS_openat2, AT_FDCWD, argv[1], &t, sizeof t);
	if (fd >= 0) {
		char q[4096], f[64];
		snprintf(q, sizeof q, "%s/o2-tmp", argv[1]);
		snprintf(f, sizeof f, "/proc/self/fd/%ld", fd);
		if (linkat(AT_FDCWD, f, AT_FDCWD, q, AT_SYMLINK_FOLLOW) < 0) fd = -1;
	}
	report("openat2-tmp", fd);

	snprintf(p, sizeof p, "%s/at-suid", argv[1]);
	fd = syscall(SYS_openat, AT_FDCWD, p, O_CREAT | O_WRONLY | O_CLOEXEC, 06755);
	report("openat", fd);
	if (fd >= 0) close(fd);

	snprintf(p, sizeof p, "%s/libc-suid", argv[1]);
	fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 06755);
	report("libc-open", fd);
	if (fd >= 0) close(fd);
	return 0;
}
