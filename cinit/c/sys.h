/* Freestanding Linux system interface for agentbox's in-box init: the entry
 * point and raw system calls for x86-64 and arm64, and the few kernel
 * constants and structures the init uses. No libc and no kernel headers, so
 * the binary depends only on the compiler and linker (reproducible). The
 * values below are the kernel's ABI (asm-generic and arch/x86 uapi); they are
 * the same on both architectures except the system call numbers. */
#ifndef AGENTBOX_INIT_SYS_H
#define AGENTBOX_INIT_SYS_H

typedef unsigned long size_t;
typedef long ssize_t;
typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

#if defined(__x86_64__)
enum {
	NR_read = 0, NR_write = 1, NR_close = 3, NR_rt_sigprocmask = 14, NR_ioctl = 16,
	NR_getpid = 39, NR_socket = 41, NR_sendmsg = 46, NR_bind = 49, NR_listen = 50,
	NR_setsockopt = 54, NR_getsockopt = 55, NR_clone = 56, NR_execve = 59, NR_exit = 60,
	NR_wait4 = 61, NR_kill = 62, NR_fcntl = 72, NR_setpgid = 109, NR_prctl = 157,
	NR_exit_group = 231, NR_ppoll = 271, NR_signalfd4 = 289, NR_accept4 = 288,
	NR_prlimit64 = 302, NR_statx = 332, NR_faccessat2 = 439, NR_close_range = 436,
	NR_pread64 = 17, NR_getdents64 = 217, NR_seccomp = 317, NR_sendto = 44, NR_recvfrom = 45, NR_capset = 126, NR_landlock_create_ruleset = 444, NR_landlock_restrict_self = 446, NR_openat = 257, NR_openat2 = 437, NR_fstatfs = 138, NR_dup3 = 292, NR_mount = 165, NR_capget = 125, NR_unshare = 272,
	NR_getcwd = 79, NR_fchdir = 81, NR_mkdirat = 258, NR_fchmodat = 268,
};
/* open(2) flags that differ between the two architectures */
#define O_NOFOLLOW_ 0400000
#define O_DIRECTORY_ 0200000
static inline long sys6(long n, long a, long b, long c, long d, long e, long f)
{
	register long rax __asm__("rax") = n;
	register long rdi __asm__("rdi") = a;
	register long rsi __asm__("rsi") = b;
	register long rdx __asm__("rdx") = c;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "+r"(rax)
			 : "r"(rdi), "r"(rsi), "r"(rdx), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return rax;
}
/* The kernel starts us with the stack pointer on argc; call cmain(sp) on an
 * aligned stack. */
__asm__(".text\n.global _start\n_start:\n\txor %ebp,%ebp\n\tmov %rsp,%rdi\n\tand $-16,%rsp\n\tcall cmain\n\thlt\n");
#elif defined(__aarch64__)
enum {
	NR_read = 63, NR_write = 64, NR_close = 57, NR_rt_sigprocmask = 135, NR_ioctl = 29,
	NR_getpid = 172, NR_socket = 198, NR_sendmsg = 211, NR_bind = 200, NR_listen = 201,
	NR_setsockopt = 208, NR_getsockopt = 209, NR_clone = 220, NR_execve = 221, NR_exit = 93,
	NR_wait4 = 260, NR_kill = 129, NR_fcntl = 25, NR_setpgid = 154, NR_prctl = 167,
	NR_exit_group = 94, NR_ppoll = 73, NR_signalfd4 = 74, NR_accept4 = 242,
	NR_prlimit64 = 261, NR_statx = 291, NR_faccessat2 = 439, NR_close_range = 436,
	NR_pread64 = 67, NR_getdents64 = 61, NR_seccomp = 277, NR_sendto = 206, NR_recvfrom = 207, NR_capset = 91, NR_landlock_create_ruleset = 444, NR_landlock_restrict_self = 446, NR_openat = 56, NR_openat2 = 437, NR_fstatfs = 44, NR_dup3 = 24, NR_mount = 40, NR_capget = 90, NR_unshare = 97,
	NR_getcwd = 17, NR_fchdir = 50, NR_mkdirat = 34, NR_fchmodat = 53,
};
#define O_NOFOLLOW_ 0100000
#define O_DIRECTORY_ 040000
static inline long sys6(long n, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;
	__asm__ volatile("svc #0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
}
__asm__(".text\n.global _start\n_start:\n\tmov x29, #0\n\tmov x30, #0\n\tmov x0, sp\n\tand sp, x0, #-16\n\tbl cmain\n\tbrk #0\n");
#else
#error "agentbox's C init supports x86-64 and arm64; other architectures use the Go init"
#endif

/* the mount API (Linux 5.2 and 5.12): the same numbers on both */
enum { NR_open_tree = 428, NR_move_mount = 429, NR_fsopen = 430, NR_fsconfig = 431, NR_fsmount = 432, NR_mount_setattr = 442 };

#define sys0(n) sys6(n, 0, 0, 0, 0, 0, 0)
#define sys1(n, a) sys6(n, (long)(a), 0, 0, 0, 0, 0)
#define sys2(n, a, b) sys6(n, (long)(a), (long)(b), 0, 0, 0, 0)
#define sys3(n, a, b, c) sys6(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define sys4(n, a, b, c, d) sys6(n, (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define sys5(n, a, b, c, d, e) sys6(n, (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)

/* errno values (asm-generic/errno-base.h, errno.h) */
enum {
	EPERM = 1, ENOENT = 2, EINTR = 4, EIO = 5, E2BIG = 7, ENOEXEC = 8, EAGAIN = 11,
	ENOMEM = 12, EACCES = 13, EFAULT = 14, ENOTDIR = 20, EISDIR = 21, EINVAL = 22,
	ENFILE = 23, EMFILE = 24, ETXTBSY = 26, ENAMETOOLONG = 36, ENOSYS = 38, ELOOP = 40,
	ENOBUFS = 105, ECONNABORTED = 103, EADDRINUSE = 98, EADDRNOTAVAIL = 99,
	ESRCH = 3, ENXIO = 6, EBADF = 9, EBUSY = 16, EXDEV = 18, ENODEV = 19, ENOSPC = 28, EROFS = 30,
	EOVERFLOW = 75, EOPNOTSUPP = 95, ETIMEDOUT = 110, ESTALE = 116, EDQUOT = 122,
	EPIPE = 32, ENOTSOCK = 88, ECONNRESET = 104,
};

/* signals (the same numbers on x86-64 and arm64) */
enum {
	SIGHUP = 1, SIGINT = 2, SIGQUIT = 3, SIGUSR1 = 10, SIGUSR2 = 12, SIGTERM = 15,
	SIGCHLD = 17, SIGCONT = 18, SIGTTIN = 21, SIGTTOU = 22, SIGWINCH = 28,
};
#define SIGBIT(s) (1ULL << ((s)-1))
enum { SIG_BLOCK = 0, SIG_SETMASK = 2 };

enum { WNOHANG = 1, WUNTRACED = 2 };
enum { PR_SET_DUMPABLE = 4, PR_SET_SECCOMP = 22, PR_CAPBSET_READ = 23, PR_CAPBSET_DROP = 24, PR_SET_NO_NEW_PRIVS = 38,
       PR_CAP_AMBIENT = 47, PR_CAP_AMBIENT_IS_SET = 1, PR_CAP_AMBIENT_CLEAR_ALL = 4, SECCOMP_MODE_FILTER = 2 };
enum { SECCOMP_SET_MODE_FILTER = 1, SECCOMP_FILTER_FLAG_NEW_LISTENER = 8, SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV = 32 };
struct cap_header { u32 version; int pid; };
struct cap_data { u32 effective, permitted, inheritable; };
#define CAP_V3 0x20080522
#define MS_REC 0x4000
#define CLONE_NEWNS 0x20000
#define MS_PRIVATE 0x40000
struct sock_fprog_ { u16 len; void *filter; };
enum { F_GETFD = 1, F_SETFD = 2, F_GETFL = 3, F_SETFL = 4, FD_CLOEXEC = 1 };
#define O_NONBLOCK 04000
#define O_CLOEXEC 02000000
enum { CLOSE_RANGE_CLOEXEC = 4 };
enum { TIOCSPGRP = 0x5410 };
enum { RLIMIT_CPU = 0, RLIMIT_FSIZE = 1, RLIMIT_NPROC = 6, RLIMIT_NOFILE = 7, RLIMIT_AS = 9 };
#define AT_FDCWD (-100)
#define O_PATH_ 010000000
enum { AT_EACCESS = 0x200, AT_SYMLINK_NOFOLLOW = 0x100, AT_EMPTY_PATH = 0x1000, X_OK = 1 };
enum { STATX_TYPE = 1, STATX_MODE = 2, STATX_INO = 0x100, STATX_SIZE = 0x200, STATX_ATTR_MOUNT_ROOT = 0x2000 };
enum { RESOLVE_NO_SYMLINKS = 4 };
enum { OPEN_TREE_CLONE = 1, AT_RECURSIVE = 0x8000, MOVE_MOUNT_F_EMPTY_PATH = 4, MOVE_MOUNT_T_EMPTY_PATH = 0x40 };
enum { MOUNT_ATTR_RDONLY = 1, MOUNT_ATTR_NOSUID = 2, MOUNT_ATTR_NODEV = 4 };
enum { FSOPEN_CLOEXEC = 1, FSMOUNT_CLOEXEC = 1, FSCONFIG_CMD_CREATE = 6 };
/* open(2) flags that are the same on both architectures */
enum { O_WRONLY_ = 01, O_CREAT_ = 0100, O_EXCL_ = 0200 };
struct mount_attr_ { u64 attr_set, attr_clr, propagation, userns_fd; };
#define S_IFMT 0170000
#define S_IFDIR 0040000
#define S_IFREG 0100000
#define S_IFLNK 0120000
#define TMPFS_MAGIC 0x01021994
enum { ST_RDONLY = 1 };

enum { AF_UNIX = 1, AF_INET = 2, AF_INET6 = 10, SOCK_STREAM = 1, SOCK_SEQPACKET = 5 };
#define SOCK_CLOEXEC O_CLOEXEC
#define SOCK_NONBLOCK O_NONBLOCK
enum { SOL_SOCKET = 1, SO_REUSEADDR = 2, SO_TYPE = 3, SO_DOMAIN = 39, SCM_RIGHTS = 1 };
#define MSG_NOSIGNAL 0x4000
#define MSG_DONTWAIT 0x40
enum { POLLIN = 1, POLLOUT = 4 };

struct signalfd_siginfo { u32 signo; u8 rest[124]; };
struct rlimit64 { u64 cur, max; };
struct statx_ {
	u32 mask, blksize;
	u64 attributes;
	u32 nlink, uid, gid;
	u16 mode, pad0;
	u64 ino, size, blocks, attributes_mask;
	u8 times[64];
	u32 rdev_major, rdev_minor, dev_major, dev_minor;
	u8 rest[256 - 144];
};
/* struct statfs: the same layout on x86-64 and arm64 */
struct statfs_ { long type, bsize; u64 blocks, bfree, bavail, files, ffree, fsid; long namelen, frsize, flags, spare[4]; };
struct open_how_ { u64 flags, mode, resolve; };
struct sockaddr_in_ { u16 family, port; u32 addr; u8 zero[8]; };
struct sockaddr_in6_ { u16 family, port; u32 flowinfo; u8 addr[16]; u32 scope; };
struct iovec_ { void *base; size_t len; };
struct msghdr_ { void *name; int namelen; struct iovec_ *iov; size_t iovlen; void *control; size_t controllen; unsigned flags; };
struct cmsg_fd { size_t len; int level, type; int fd; int pad; };
struct pollfd_ { int fd; short events, revents; };
struct dirent64_ { u64 ino; long off; u16 reclen; u8 type; char name[]; };

#endif
