/*
 * families.c - which socket families can be created here.
 *
 *   families          try socket(family, type, 0) for every family from 1 to
 *                     63 and the stream, datagram, seqpacket and raw types;
 *                     print one line per family that gave a socket:
 *                     "family N" (the first type that worked is enough)
 *
 * Ends with "done". Under network "none" and "allowlist" agentbox lets only
 * the families the box needs reach the kernel (AF_UNIX, AF_INET, AF_INET6,
 * AF_NETLINK); every other family, such as AF_VSOCK (40, a way to the
 * hypervisor that no network namespace cuts), must print nothing.
 */
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void)
{
	int types[] = {SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET, SOCK_RAW};
	for (int family = 1; family < 64; family++) {
		for (unsigned i = 0; i < sizeof types / sizeof types[0]; i++) {
			int fd = socket(family, types[i] | SOCK_CLOEXEC, 0);
			if (fd >= 0) {
				printf("family %d\n", family);
				close(fd);
				break;
			}
		}
	}
	printf("done\n");
	return 0;
}
