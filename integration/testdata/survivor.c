/*
 * survivor.c - a process of a box that tries to outlive the run:
 *
 *   survivor MODE MS HOOK MARK
 *
 * It forks, the child puts itself in the state MODE names, and the parent
 * prints "armed" once it is and returns (so CMD can end). MS milliseconds
 * later, if it is still alive, it writes HOOK (a git hook that creates
 * MARK.hook when run) and MARK (a plain file saying it survived). MODE:
 *
 *   zombie  the main thread leaves with the raw exit syscall while a
 *           second thread lives on: /proc shows the thread-group leader
 *           as a zombie (Z), and wait4 never reports it while the thread
 *           runs;
 *   forker  as zombie, and the live thread forks a new child every
 *           millisecond, each of which does the writing;
 *   daemon  double fork into a new session and process group, with every
 *           catchable signal ignored and blocked;
 *   tty     as zombie, and the thread prompts for a password on /dev/tty
 *           and writes the line it reads to MARK.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static const char *mode, *hook, *mark;
static long ms;
static int ready = -1; /* the parent waits for a byte here */

/* armed tells the parent that the state is in place. */
static void armed(void)
{
	write(ready, "A", 1);
	close(ready);
}

/* leaderzombie waits until the main thread has left (the leader shows Z). */
static void leaderzombie(void)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", getpid());
	for (int i = 0; i < 5000; i++) {
		int fd = open(path, O_RDONLY);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
		if (fd >= 0) close(fd);
		if (n > 0) {
			buf[n] = 0;
			char *p = strrchr(buf, ')');
			if (p && p[1] == ' ' && p[2] == 'Z') return;
		}
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, 0);
	}
}

static void sleepms(long n)
{
	struct timespec ts = {n / 1000, (n % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0) {
	}
}

static void act(void)
{
	char buf[4096];
	int fd = open(hook, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (fd >= 0) {
		int n = snprintf(buf, sizeof buf, "#!/bin/sh\ntouch '%s.hook'\n", mark);
		write(fd, buf, n);
		close(fd);
		chmod(hook, 0755);
	}
	fd = open(mark, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		write(fd, mode, strlen(mode));
		close(fd);
	}
}

static void steal(void)
{
	char line[256];
	setpgid(0, 0);
	int fd = open("/dev/tty", O_RDWR);
	if (fd < 0) return;
	tcsetpgrp(fd, getpgrp());
	const char *p = "[sudo] password for you: ";
	write(fd, p, strlen(p));
	ssize_t n = read(fd, line, sizeof line);
	if (n > 0) {
		int out = open(mark, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (out >= 0) {
			write(out, line, (size_t)n);
			close(out);
		}
	}
}

static void *thread(void *arg)
{
	(void)arg;
	leaderzombie();
	armed();
	if (strcmp(mode, "forker") == 0) {
		for (long i = 0; i < ms; i++) {
			if (fork() == 0) {
				sleepms(ms - i);
				act();
				_exit(0);
			}
			sleepms(1);
		}
		for (;;) pause();
	}
	sleepms(ms);
	if (strcmp(mode, "tty") == 0)
		steal();
	else
		act();
	return 0;
}

static void ignoreall(void)
{
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, 0);
	for (int s = 1; s < 65; s++) signal(s, SIG_IGN);
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: survivor MODE MS HOOK MARK\n");
		return 2;
	}
	mode = argv[1], ms = atol(argv[2]), hook = argv[3], mark = argv[4];
	int p[2];
	if (pipe(p) < 0) return 1;
	if (fork() != 0) {
		char c;
		close(p[1]);
		if (read(p[0], &c, 1) == 1) printf("armed\n");
		fflush(stdout);
		return 0;
	}
	close(p[0]);
	ready = p[1];
	/* Let the parent and CMD end first: the box's first process is gone
	 * when the state below is in place. */
	for (int s = 1; s < 32; s++)
		if (s != SIGKILL && s != SIGSTOP && s != SIGCHLD) signal(s, SIG_IGN);
	if (strcmp(mode, "daemon") == 0) {
		setsid();
		if (fork() != 0) _exit(0);
		ignoreall();
		armed();
		sleepms(ms);
		act();
		return 0;
	}
	pthread_t t;
	if (pthread_create(&t, 0, thread, 0) != 0) return 1;
	/* Only this thread ends: the leader becomes a zombie, the process
	 * lives on in the other thread. */
	syscall(SYS_exit, 0);
	return 0;
}
