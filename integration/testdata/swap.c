/*
 * swap.c - exchange two names in a loop, as a box writing a project can:
 *
 *   swap A B [US]   renameat2(A, B, RENAME_EXCHANGE) until killed, resting
 *                   US microseconds between two exchanges (none by default)
 *
 * Prints "swapping" once the first exchange succeeded. The race tests run
 * it in one box while other boxes of the same project start. It dies with
 * its parent, so it never outlives the box that started it.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: swap A B [US]\n");
		return 2;
	}
	long rest = argc == 4 ? atol(argv[3]) : 0;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (long n = 0;; n++) {
		if (syscall(SYS_renameat2, AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE) != 0) {
			perror("renameat2");
			return 1;
		}
		if (n == 0) {
			printf("swapping\n");
			fflush(stdout);
		}
		if (rest > 0)
			usleep((useconds_t)rest);
	}
}
