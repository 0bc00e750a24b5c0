/*
 * tiocsti.c - can a boxed process type into a terminal?
 *
 * The probe opens a fresh pty pair itself (posix_openpt/grantpt/unlockpt),
 * makes the slave its controlling terminal (in a new session), and then
 * tries to push one character into the slave's input queue with TIOCSTI,
 * which is what an attacker would do to the user's terminal.
 *
 *   tiocsti plain      ioctl(slave, TIOCSTI, &c)
 *   tiocsti high       syscall(SYS_ioctl, slave, (1UL<<32)|TIOCSTI, &c): the
 *                      kernel ignores the upper 32 bits of the request, so a
 *                      filter comparing all 64 bits would miss it
 *   tiocsti int80      the i386 ioctl (nr 54) through `int $0x80` from this
 *                      64-bit binary (x86-64 only)
 *   tiocsti tioclinux  ioctl(slave, TIOCLINUX, &subcode)
 *   tiocsti tcgets     ioctl(slave, TCGETS, &termios), an ordinary request
 *
 * Expected output under the agentbox filter:
 *   plain, high, tioclinux  refused errno=1 (Operation not permitted)
 *   int80                   killed signal=31 (Bad system call)
 *   tcgets                  allowed
 * Without the filter (legacy TIOCSTI enabled, /proc/sys/dev/tty/legacy_tiocsti
 * = 1, or CAP_SYS_ADMIN): plain, high, int80 and tcgets print "allowed";
 * tioclinux prints "refused errno=25" (a pty is not a virtual console).
 */
#include "probe.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <termios.h>

static int open_ctty(void)
{
	/* TIOCSTI needs the tty to be the caller's controlling terminal (or
	 * CAP_SYS_ADMIN), so become a session leader and take the slave. */
	if (setsid() < 0) {
		perror("setsid");
		return -1;
	}
	int master = posix_openpt(O_RDWR | O_NOCTTY);
	if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0) {
		perror("posix_openpt");
		return -1;
	}
	int slave = open(ptsname(master), O_RDWR);
	if (slave < 0) {
		perror("open slave");
		return -1;
	}
	if (ioctl(slave, TIOCSCTTY, 0) < 0 && errno != EPERM) {
		perror("TIOCSCTTY");
		return -1;
	}
	return slave;
}

#if defined(__x86_64__)
/* ioctl through the i386 syscall table: eax = 54 (ioctl), ebx = fd,
 * ecx = request, edx = argument. Pointers are truncated to 32 bits, so the
 * character lives in memory below 4 GiB. */
static long ioctl_int80(int fd, unsigned long req, void *arg)
{
	long ret;
	__asm__ volatile("int $0x80"
			 : "=a"(ret)
			 : "a"(54L), "b"((long)fd), "c"(req), "d"((unsigned long)arg)
			 : "memory", "r8", "r9", "r10", "r11");
	return ret;
}
#endif

static int run(const char *mode)
{
	int slave = open_ctty();
	if (slave < 0)
		return 2;
	char c = '#';
	if (strcmp(mode, "plain") == 0)
		return verdict(ioctl(slave, TIOCSTI, &c));
	if (strcmp(mode, "high") == 0)
		return verdict(syscall(SYS_ioctl, slave, (1UL << 32) | TIOCSTI, &c));
	if (strcmp(mode, "tioclinux") == 0) {
		char sub = 3; /* TIOCL_PASTESEL: paste the console selection */
		return verdict(ioctl(slave, TIOCLINUX, &sub));
	}
	if (strcmp(mode, "tcgets") == 0) {
		struct termios t;
		return verdict(ioctl(slave, TCGETS, &t));
	}
	if (strcmp(mode, "int80") == 0) {
#if defined(__x86_64__)
		char *low = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
		if (low == MAP_FAILED) {
			perror("mmap");
			return 2;
		}
		low[0] = c;
		long r = ioctl_int80(slave, TIOCSTI, low);
		if (r < 0 && r > -4096) {
			errno = (int)-r;
			r = -1;
		}
		return verdict(r);
#else
		fprintf(stderr, "int80: x86-64 only\n");
		return 2;
#endif
	}
	return usage("tiocsti", "plain|high|int80|tioclinux|tcgets");
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return usage(argv[0], "plain|high|int80|tioclinux|tcgets");
	return attempt(run, argv[1]);
}
