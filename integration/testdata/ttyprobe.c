/*
 * ttyprobe.c - the terminal ioctls that change a terminal for whoever
 * uses it after the box:
 *
 *   ttyprobe [NAME...]
 *
 * Tries each on fd 0 and prints "NAME ok" or "NAME errno=N":
 *   tiocsetd   TIOCSETD N_NULL: a line discipline that drops all input and
 *              output (the user's terminal shows nothing afterwards);
 *   tcsets     TCSETS with c_line N_NULL;
 *   tiocexcl   TIOCEXCL: later opens of the terminal fail (EBUSY);
 *   tcxonc     TCXONC TCOOFF: output stops until ^Q;
 *   tioccons   TIOCCONS: console output redirected to this terminal;
 *   kdsetmode  KDSETMODE KD_GRAPHICS, kdskbmode KDSKBMODE K_OFF (a
 *              Linux console only: ENOTTY on a pseudo-terminal);
 *   tiocswinsz TIOCSWINSZ to the current size (allowed: the control).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#ifndef N_NULL
#define N_NULL 27
#endif

static long call(const char *name)
{
	if (!strcmp(name, "tiocsetd")) {
		int d = N_NULL;
		return ioctl(0, TIOCSETD, &d);
	}
	if (!strcmp(name, "tcsets")) {
		struct termios t;
		if (ioctl(0, TCGETS, &t) < 0) return -1;
		t.c_line = N_NULL;
		return ioctl(0, TCSETS, &t);
	}
	if (!strcmp(name, "tiocexcl")) return ioctl(0, TIOCEXCL);
	if (!strcmp(name, "tcxonc")) return ioctl(0, TCXONC, TCOOFF);
	if (!strcmp(name, "tioccons")) return ioctl(0, TIOCCONS);
	if (!strcmp(name, "kdsetmode")) return ioctl(0, 0x4B3A /* KDSETMODE */, 1 /* KD_GRAPHICS */);
	if (!strcmp(name, "kdskbmode")) return ioctl(0, 0x4B45 /* KDSKBMODE */, 4 /* K_OFF */);
	if (!strcmp(name, "tiocswinsz")) {
		struct winsize w;
		if (ioctl(0, TIOCGWINSZ, &w) < 0) return -1;
		return ioctl(0, TIOCSWINSZ, &w);
	}
	errno = EINVAL;
	return -1;
}

static const char *all[] = {"tiocsetd", "tcsets", "tiocexcl", "tcxonc", "tioccons", "kdsetmode", "kdskbmode", "tiocswinsz", 0};

int main(int argc, char **argv)
{
	const char **names = argc > 1 ? (const char **)argv + 1 : all;
	for (int i = 0; names[i]; i++) {
		errno = 0;
		if (call(names[i]) < 0)
			printf("%s errno=%d\n", names[i], errno);
		else
			printf("%s ok\n", names[i]);
	}
	fflush(stdout);
	return 0;
}
