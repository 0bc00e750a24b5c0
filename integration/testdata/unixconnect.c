/*
 * unixconnect.c - reach a unix socket server and read its greeting:
 *
 *   unixconnect PATH|@NAME
 *
 * @NAME is an abstract socket. Prints "answer: LINE" when the server
 * answered, else "socket errno=N" or "connect errno=N". Also makes a
 * socketpair and prints "socketpair ok" or "socketpair errno=N" first.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: unixconnect PATH|@NAME\n");
		return 2;
	}
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) < 0)
		printf("socketpair errno=%d\n", errno);
	else
		printf("socketpair ok\n");
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	socklen_t len = sizeof a;
	size_t n = strlen(argv[1]);
	if (n >= sizeof a.sun_path) return 2;
	memcpy(a.sun_path, argv[1], n);
	if (argv[1][0] == '@') {
		a.sun_path[0] = 0;
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	}
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s < 0) {
		printf("socket errno=%d\n", errno);
		return 0;
	}
	if (connect(s, (struct sockaddr *)&a, len) < 0) {
		printf("connect errno=%d\n", errno);
		return 0;
	}
	char buf[128];
	ssize_t r = read(s, buf, sizeof buf - 1);
	if (r < 0) r = 0;
	buf[r] = 0;
	printf("answer: %s", buf);
	return 0;
}
