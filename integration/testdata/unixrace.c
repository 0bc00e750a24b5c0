/*
 * unixrace.c - connect to unix sockets in every way a box may try, and try
 * to swap what it asked for between agentbox's check and the connect:
 *
 *   unixrace connect PATH            one connect; "answer: LINE" or "connect errno=N"
 *   unixrace self DIR                listen on DIR/self.sock in this process and
 *                                    connect to it: "self: ok" or "self errno=N"
 *   unixrace dgram PATH              a datagram socket sends to PATH:
 *                                    "dgram sent" or "dgram errno=N"
 *   unixrace race GOOD BAD LINK N    N connects while a thread rewrites the
 *                                    address between GOOD and BAD, then N through
 *                                    LINK, a link another thread points at GOOD
 *                                    and at BAD in turn; prints
 *                                    "race good=G bad=B refused=R"
 *
 * A server's greeting is what tells them apart (it names the server).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int reach(struct sockaddr_un *a, char *buf, size_t n)
{
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0) return -errno;
	if (connect(s, (struct sockaddr *)a, sizeof *a) < 0) {
		int e = errno;
		close(s);
		return -e;
	}
	ssize_t r = read(s, buf, n - 1);
	if (r < 0) r = 0;
	buf[r] = 0;
	close(s);
	return 0;
}

static void fill(struct sockaddr_un *a, const char *p)
{
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	strncpy(a->sun_path, p, sizeof a->sun_path - 1);
}

static volatile int stop;
static struct sockaddr_un shared;
static const char *good, *bad, *link_;

static void *flipaddr(void *x)
{
	(void)x;
	while (!stop) {
		strncpy(shared.sun_path, good, sizeof shared.sun_path - 1);
		strncpy(shared.sun_path, bad, sizeof shared.sun_path - 1);
	}
	return 0;
}

static void *fliplink(void *x)
{
	(void)x;
	char tmp[200];
	snprintf(tmp, sizeof tmp, "%s.new", link_);
	for (int i = 0; !stop; i++) {
		unlink(tmp);
		if (symlink(i % 2 ? bad : good, tmp) == 0) rename(tmp, link_);
	}
	return 0;
}

static void race(int n, int viaLink, int *g, int *b, int *r)
{
	pthread_t t;
	stop = 0;
	pthread_create(&t, 0, viaLink ? fliplink : flipaddr, 0);
	for (int i = 0; i < n; i++) {
		char buf[128];
		struct sockaddr_un a;
		int e;
		if (viaLink) {
			fill(&a, link_);
			e = reach(&a, buf, sizeof buf);
		} else {
			/* the address the kernel (or agentbox) reads is the one
			 * the other thread keeps rewriting */
			int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
			e = s < 0 ? -errno : 0;
			if (s >= 0) {
				if (connect(s, (struct sockaddr *)&shared, sizeof shared) < 0) e = -errno;
				else {
					ssize_t k = read(s, buf, sizeof buf - 1);
					buf[k < 0 ? 0 : k] = 0;
				}
				close(s);
			}
		}
		if (e < 0) (*r)++;
		else if (strstr(buf, "forbidden")) (*b)++;
		else (*g)++;
	}
	stop = 1;
	pthread_join(t, 0);
}

int main(int argc, char **argv)
{
	char buf[128];
	struct sockaddr_un a;
	setvbuf(stdout, 0, _IONBF, 0);
	if (argc == 3 && !strcmp(argv[1], "connect")) {
		fill(&a, argv[2]);
		int e = reach(&a, buf, sizeof buf);
		if (e < 0) printf("connect errno=%d\n", -e);
		else printf("answer: %s", buf);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "self")) {
		char p[200];
		snprintf(p, sizeof p, "%s/self.sock", argv[2]);
		unlink(p);
		int l = socket(AF_UNIX, SOCK_STREAM, 0);
		fill(&a, p);
		if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 8) < 0) {
			printf("self listen errno=%d\n", errno);
			return 0;
		}
		if (fork() == 0) {
			int c = accept(l, 0, 0);
			if (write(c, "self-answer\n", 12) < 0) _exit(1);
			_exit(0);
		}
		int e = reach(&a, buf, sizeof buf);
		unlink(p);
		if (e < 0) printf("self errno=%d\n", -e);
		else printf("self: %s", buf);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "dgram")) {
		int s = socket(AF_UNIX, SOCK_DGRAM, 0);
		if (s < 0) {
			printf("dgram errno=%d\n", errno);
			return 0;
		}
		fill(&a, argv[2]);
		if (sendto(s, "x", 1, 0, (struct sockaddr *)&a, sizeof a) < 0) printf("dgram errno=%d\n", errno);
		else printf("dgram sent\n");
		return 0;
	}
	if (argc == 6 && !strcmp(argv[1], "race")) {
		good = argv[2], bad = argv[3], link_ = argv[4];
		int n = atoi(argv[5]), g = 0, b = 0, r = 0;
		fill(&shared, good);
		race(n, 0, &g, &b, &r);
		race(n, 1, &g, &b, &r);
		printf("race good=%d bad=%d refused=%d\n", g, b, r);
		return 0;
	}
	fprintf(stderr, "usage: unixrace connect|self|dgram|race ...\n");
	return 2;
}
