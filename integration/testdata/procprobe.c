/*
 * procprobe.c - every way a process can act on another one by its pid:
 *
 *   procprobe PID|ppid [NAME...]
 *
 * Tries each call on PID (all when no NAME is given) and prints one line
 * per call: "NAME ok" or "NAME errno=N". Signals are signal 0 (a
 * permission check, no signal), limits and priorities are the harmful
 * values the calls exist for. setpriority-user targets uid 65534, which
 * runs nothing here, so that it cannot renice the machine if it works.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif
#ifndef MADV_COLD
#define MADV_COLD 20
#endif

struct attr {
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t prio;
	uint64_t runtime, deadline, period;
};

static pid_t pid;

static long call(const char *name)
{
	if (!strcmp(name, "prlimit")) {
		struct rlimit r = {5, 5};
		return prlimit(pid, RLIMIT_NOFILE, &r, 0);
	}
	if (!strcmp(name, "setpriority")) return setpriority(PRIO_PROCESS, pid, 19);
	if (!strcmp(name, "setpriority-pgrp")) return setpriority(PRIO_PGRP, getpgid(pid), 19);
	if (!strcmp(name, "setpriority-user")) return setpriority(PRIO_USER, 65534, 19);
	if (!strcmp(name, "ioprio_set")) return syscall(SYS_ioprio_set, 1 /* WHO_PROCESS */, pid, (3 << 13) /* IDLE */);
	if (!strcmp(name, "sched_setaffinity")) {
		cpu_set_t s;
		CPU_ZERO(&s);
		CPU_SET(0, &s);
		return sched_setaffinity(pid, sizeof s, &s);
	}
	if (!strcmp(name, "sched_setscheduler")) {
		struct sched_param p = {0};
		return sched_setscheduler(pid, SCHED_IDLE, &p);
	}
	if (!strcmp(name, "sched_setparam")) {
		struct sched_param p = {0};
		return sched_setparam(pid, &p);
	}
	if (!strcmp(name, "sched_setattr")) {
		struct attr a = {sizeof a, SCHED_OTHER, 0, 19, 0, 0, 0, 0};
		return syscall(SYS_sched_setattr, pid, &a, 0);
	}
	if (!strcmp(name, "migrate_pages")) {
		unsigned long all = ~0UL, one = 1;
		return syscall(SYS_migrate_pages, pid, 64, &all, &one);
	}
	if (!strcmp(name, "move_pages")) {
		void *page = (void *)0x400000;
		int status = 0;
		return syscall(SYS_move_pages, pid, 1, &page, 0, &status, 0);
	}
	if (!strcmp(name, "kcmp")) return syscall(SYS_kcmp, getpid(), pid, 0 /* KCMP_FILE */, 0, 0);
	if (!strcmp(name, "get_robust_list")) {
		void *head;
		size_t len;
		return syscall(SYS_get_robust_list, pid, &head, &len);
	}
	if (!strcmp(name, "kill")) return kill(pid, 0);
	if (!strcmp(name, "tgkill")) return syscall(SYS_tgkill, pid, pid, 0);
	if (!strcmp(name, "rt_sigqueueinfo")) {
		siginfo_t si;
		memset(&si, 0, sizeof si);
		si.si_code = SI_QUEUE;
		return syscall(SYS_rt_sigqueueinfo, pid, 0, &si);
	}
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0) return -1;
	if (!strcmp(name, "pidfd_send_signal")) return syscall(SYS_pidfd_send_signal, fd, 0, 0, 0);
	if (!strcmp(name, "pidfd_getfd")) return syscall(SYS_pidfd_getfd, fd, 0, 0);
	if (!strcmp(name, "process_madvise")) {
		struct iovec v = {(void *)0x400000, 4096};
		return syscall(SYS_process_madvise, fd, &v, 1, MADV_COLD, 0);
	}
	errno = EINVAL;
	return -1;
}

static const char *all[] = {"prlimit", "setpriority", "setpriority-pgrp", "setpriority-user", "ioprio_set",
			    "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr", "migrate_pages",
			    "move_pages", "kcmp", "get_robust_list", "kill", "tgkill", "rt_sigqueueinfo",
			    "pidfd_send_signal", "pidfd_getfd", "process_madvise", 0};

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: procprobe PID [NAME...]\n");
		return 2;
	}
	pid = strcmp(argv[1], "ppid") == 0 ? getppid() : atoi(argv[1]);
	const char **names = argc > 2 ? (const char **)argv + 2 : all;
	for (int i = 0; names[i]; i++) {
		errno = 0;
		long r = call(names[i]);
		if (r < 0)
			printf("%s errno=%d\n", names[i], errno);
		else
			printf("%s ok\n", names[i]);
	}
	return 0;
}
