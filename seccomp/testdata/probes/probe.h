/*
 * probe.h - shared helpers for the agentbox seccomp probes.
 *
 * Every probe prints exactly one verdict line on stdout and exits 0 when it
 * could run its attempt at all (exit 2 on usage or setup errors):
 *
 *   allowed                                   the syscall succeeded
 *   refused errno=N (strerror)                it failed with errno N
 *   killed signal=N (strsignal)               the attempt's process died of signal N
 *
 * Under the agentbox filter, a blocked syscall prints "refused errno=1"
 * (EPERM), clone3 prints "refused errno=38" (ENOSYS), and a foreign
 * architecture prints "killed signal=31" (SIGSYS). Each attempt runs in a
 * forked child so a probe reports a kill instead of dying with it.
 */
#ifndef AGENTBOX_PROBE_H
#define AGENTBOX_PROBE_H

#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* verdict prints the line for a syscall result r (>= 0 success, < 0 with
 * errno set) and returns the exit status for the attempt. */
static int verdict(long r)
{
	if (r >= 0)
		printf("allowed\n");
	else
		printf("refused errno=%d (%s)\n", errno, strerror(errno));
	fflush(stdout);
	return 0;
}

/* attempt runs fn(arg) in a child and reports a death by signal; the child
 * prints its own verdict otherwise. */
static int attempt(int (*fn)(const char *), const char *arg)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 2;
	}
	if (pid == 0) {
		fflush(stdout);
		_exit(fn(arg));
	}
	int status;
	if (waitpid(pid, &status, 0) < 0) {
		perror("waitpid");
		return 2;
	}
	if (WIFSIGNALED(status)) {
		printf("killed signal=%d (%s)\n", WTERMSIG(status), strsignal(WTERMSIG(status)));
		return 0;
	}
	return WEXITSTATUS(status);
}

static int usage(const char *prog, const char *modes)
{
	fprintf(stderr, "usage: %s %s\n", prog, modes);
	return 2;
}

#endif
