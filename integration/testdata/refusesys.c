/* refusesys NR PROGRAM [ARGS...]: runs PROGRAM under a seccomp filter that
 * fails system call NR with EPERM and allows everything else, as a
 * container runtime's profile may refuse the mount API (fsopen, fsmount,
 * open_tree, move_mount, mount_setattr) to a process without
 * CAP_SYS_ADMIN: EPERM, the answer the kernel gives such a process too. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: refusesys NR PROGRAM [ARGS...]\n");
		return 2;
	}
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)atoi(argv[1]), 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof filter / sizeof filter[0], .filter = filter};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
		perror("refusesys: seccomp");
		return 1;
	}
	execvp(argv[2], argv + 2);
	perror("refusesys: exec");
	return 1;
}
