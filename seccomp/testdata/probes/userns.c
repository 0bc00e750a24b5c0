/*
 * userns.c - can a boxed process create a user namespace, and do ordinary
 * process and thread creation still work?
 *
 *   userns unshare   unshare(CLONE_NEWUSER)
 *   userns clone     raw clone(CLONE_NEWUSER|SIGCHLD)
 *   userns clone3    raw clone3 with flags 0 (a plain fork)
 *   userns fork      raw clone(SIGCHLD), a plain fork
 *   userns thread    pthread_create: glibc 2.34+ tries clone3 first and falls
 *                    back to clone on ENOSYS
 *
 * Expected output under the agentbox filter:
 *   unshare, clone   refused errno=1 (Operation not permitted)
 *   clone3           refused errno=38 (Function not implemented)
 *   fork, thread     allowed
 * Without the filter, or with `[seccomp] allow = ["userns"]`: allowed for
 * every mode (where the kernel lets unprivileged users create namespaces).
 */
#include "probe.h"

#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/syscall.h>

/* spawned reaps a child created by a raw clone and turns it into a result. */
static long spawned(long pid)
{
	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid((pid_t)pid, NULL, 0);
	return pid;
}

static void *thread_main(void *arg)
{
	return arg;
}

static int run(const char *mode)
{
	if (strcmp(mode, "unshare") == 0)
		return verdict(unshare(CLONE_NEWUSER));
	if (strcmp(mode, "clone") == 0)
		return verdict(spawned(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)));
	if (strcmp(mode, "fork") == 0)
		return verdict(spawned(syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0)));
	if (strcmp(mode, "clone3") == 0) {
		struct clone_args args;
		memset(&args, 0, sizeof args);
		args.exit_signal = SIGCHLD;
		return verdict(spawned(syscall(SYS_clone3, &args, sizeof args)));
	}
	if (strcmp(mode, "thread") == 0) {
		pthread_t t;
		int e = pthread_create(&t, NULL, thread_main, NULL);
		if (e == 0)
			pthread_join(t, NULL);
		errno = e;
		return verdict(e == 0 ? 0 : -1);
	}
	return usage("userns", "unshare|clone|clone3|fork|thread");
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return usage(argv[0], "unshare|clone|clone3|fork|thread");
	return attempt(run, argv[1]);
}
