/*
 * ptrace.c - can a boxed process read or change another process's memory?
 *
 * Inside the box the agent CLI itself (with its API token in memory) is a
 * process of the same user, so these are real attacks there.
 *
 *   ptrace traceme   ptrace(PTRACE_TRACEME)
 *   ptrace attach    PTRACE_ATTACH to a child of the probe
 *   ptrace vmread    process_vm_readv of a secret in a child's memory
 *   ptrace vmwrite   process_vm_writev into a child's memory
 *
 * Expected output under the agentbox filter: refused errno=1 (Operation not
 * permitted) for every mode. Without it (no Yama, or Yama scope 1, since
 * the target is the probe's own child): allowed.
 */
#include "probe.h"

#include <sys/ptrace.h>
#include <sys/uio.h>

static char secret[16] = "agentbox-secret";

/* victim forks a child that waits to be read and returns its pid. */
static pid_t victim(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static int run(const char *mode)
{
	if (strcmp(mode, "traceme") == 0)
		return verdict(ptrace(PTRACE_TRACEME, 0, NULL, NULL));
	pid_t pid = victim();
	if (pid < 0) {
		perror("fork");
		return 2;
	}
	long r;
	if (strcmp(mode, "attach") == 0) {
		r = ptrace(PTRACE_ATTACH, pid, NULL, NULL);
	} else if (strcmp(mode, "vmread") == 0) {
		char buf[sizeof secret] = {0};
		struct iovec local = {buf, sizeof buf};
		struct iovec remote = {secret, sizeof secret};
		r = process_vm_readv(pid, &local, 1, &remote, 1, 0);
		if (r >= 0 && memcmp(buf, secret, sizeof secret) != 0) {
			fprintf(stderr, "vmread: read something else\n");
			r = -1;
			errno = EIO;
		}
	} else if (strcmp(mode, "vmwrite") == 0) {
		char buf[sizeof secret] = "overwritten....";
		struct iovec local = {buf, sizeof buf};
		struct iovec remote = {secret, sizeof secret};
		r = process_vm_writev(pid, &local, 1, &remote, 1, 0);
	} else {
		reap(pid);
		return usage("ptrace", "traceme|attach|vmread|vmwrite");
	}
	int e = errno;
	reap(pid);
	errno = e;
	return verdict(r);
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return usage(argv[0], "traceme|attach|vmread|vmwrite");
	return attempt(run, argv[1]);
}
