/*
 * sys.c - one call of a blocked syscall, with arguments chosen to be
 * harmless even for root with every capability: they either do something
 * trivial and undone at exit, or are invalid so the kernel refuses them
 * before acting.
 *
 *   sys keyctl             keyctl(KEYCTL_GET_KEYRING_ID, session keyring, create)
 *   sys add_key            add_key("user", ...) into the process keyring
 *   sys request_key        request_key("user", absent name)   kernel: ENOKEY
 *   sys bpf                bpf(invalid command)               kernel: EINVAL
 *   sys perf_event_open    perf_event_open(invalid flags)     kernel: EINVAL
 *   sys userfaultfd        userfaultfd(UFFD_USER_MODE_ONLY)
 *   sys io_uring_setup     io_uring_setup(1 entry)
 *   sys io_uring_enter     io_uring_enter(fd -1)              kernel: EBADF
 *   sys io_uring_register  io_uring_register(fd -1)           kernel: EBADF
 *   sys kexec_load         kexec_load(1000 segments, invalid flags)   kernel: EPERM/EINVAL
 *   sys kexec_file_load    kexec_file_load(fd -1, invalid flags)      kernel: EPERM/EINVAL
 *   sys init_module        init_module(NULL, 0, "")           kernel: EPERM without CAP_SYS_MODULE
 *   sys finit_module       finit_module(-1, "", 0)            kernel: EPERM without CAP_SYS_MODULE
 *   sys delete_module      delete_module(absent name)         kernel: EPERM without CAP_SYS_MODULE
 *
 * Expected output under the agentbox filter: refused errno=1 (Operation not
 * permitted) for every name. Without it: "allowed" or the kernel's own
 * answer in the right column (the module and kexec calls answer EPERM
 * anyway without capabilities, so for them only the filtered run means
 * something).
 */
#include "probe.h"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <sys/syscall.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

static int run(const char *name)
{
	long r;
	if (strcmp(name, "keyctl") == 0)
		r = syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* KEY_SPEC_SESSION_KEYRING */, 1);
	else if (strcmp(name, "add_key") == 0)
		r = syscall(SYS_add_key, "user", "agentbox-probe", "x", 1, -2 /* KEY_SPEC_PROCESS_KEYRING */);
	else if (strcmp(name, "request_key") == 0)
		r = syscall(SYS_request_key, "user", "agentbox-probe-absent", NULL, -2);
	else if (strcmp(name, "bpf") == 0)
		r = syscall(SYS_bpf, 0x7fff, NULL, 0);
	else if (strcmp(name, "perf_event_open") == 0)
		r = syscall(SYS_perf_event_open, NULL, 0, -1, -1, ~0UL);
	else if (strcmp(name, "userfaultfd") == 0)
		r = syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	else if (strcmp(name, "io_uring_setup") == 0) {
		char params[120]; /* struct io_uring_params */
		memset(params, 0, sizeof params);
		r = syscall(SYS_io_uring_setup, 1, params);
	} else if (strcmp(name, "io_uring_enter") == 0)
		r = syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0);
	else if (strcmp(name, "io_uring_register") == 0)
		r = syscall(SYS_io_uring_register, -1, 0, NULL, 0);
	else if (strcmp(name, "kexec_load") == 0)
		r = syscall(SYS_kexec_load, 0, 1000, NULL, 0x100);
	else if (strcmp(name, "kexec_file_load") == 0)
		r = syscall(SYS_kexec_file_load, -1, -1, 0, "", 0x100);
	else if (strcmp(name, "init_module") == 0)
		r = syscall(SYS_init_module, NULL, 0, "");
	else if (strcmp(name, "finit_module") == 0)
		r = syscall(SYS_finit_module, -1, "", 0);
	else if (strcmp(name, "delete_module") == 0)
		r = syscall(SYS_delete_module, "agentbox_probe_absent", O_NONBLOCK);
	else
		return usage("sys", "SYSCALL (see the header of sys.c)");
	return verdict(r);
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return usage(argv[0], "SYSCALL (see the header of sys.c)");
	return attempt(run, argv[1]);
}
