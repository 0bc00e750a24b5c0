/*
 * udpsend.c - every way a datagram can leave a process:
 *
 *   udpsend ADDR PORT
 *
 * Sends "agentbox-udp-N" to ADDR:PORT (IPv4) with sendto, with connect and
 * send, with sendmsg and with sendmmsg, and prints "NAME ok" or
 * "NAME errno=N" for each, after the socket itself ("socket ...").
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void report(const char *name, long r)
{
	if (r < 0)
		printf("%s errno=%d\n", name, errno);
	else
		printf("%s ok\n", name);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: udpsend ADDR PORT\n");
		return 2;
	}
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
	inet_pton(AF_INET, argv[1], &a.sin_addr);
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	report("socket", s);
	if (s < 0) return 0;
	char m1[] = "agentbox-udp-sendto";
	report("sendto", sendto(s, m1, strlen(m1), 0, (struct sockaddr *)&a, sizeof a));
	char m2[] = "agentbox-udp-sendmsg";
	struct iovec v = {m2, strlen(m2)};
	struct msghdr h = {.msg_name = &a, .msg_namelen = sizeof a, .msg_iov = &v, .msg_iovlen = 1};
	report("sendmsg", sendmsg(s, &h, 0));
	char m3[] = "agentbox-udp-sendmmsg";
	struct iovec v3 = {m3, strlen(m3)};
	struct mmsghdr mh = {.msg_hdr = {.msg_name = &a, .msg_namelen = sizeof a, .msg_iov = &v3, .msg_iovlen = 1}};
	report("sendmmsg", sendmmsg(s, &mh, 1, 0));
	report("connect", connect(s, (struct sockaddr *)&a, sizeof a));
	char m4[] = "agentbox-udp-send";
	report("send", send(s, m4, strlen(m4), 0));
	int s6 = socket(AF_INET6, SOCK_DGRAM, 0);
	report("socket6", s6);
	return 0;
}
