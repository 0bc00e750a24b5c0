/* Freestanding Linux system interface for agentbox's preloaded refusal log:
 * raw system calls for x86-64, i386 and arm64, and the few kernel and ELF
 * constants and structures it uses. No libc headers and no kernel headers,
 * so the library depends only on the compiler and linker (reproducible).
 * The values are the kernel's ABI (asm-generic and arch/x86 uapi) and the
 * ELF specification's. */
#ifndef AGENTBOX_PRELOAD_SYS_H
#define AGENTBOX_PRELOAD_SYS_H

typedef unsigned long size_t;
typedef long ssize_t;
typedef unsigned long uptr;
typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

/* The C types of the wrapped functions' arguments, as glibc declares them
 * (the same widths on every architecture here but off_t). */
typedef unsigned int mode_t;
typedef unsigned int uid_t;
typedef unsigned int gid_t;
typedef unsigned long long dev_t;
typedef long off_t;
typedef long long off64_t;
typedef unsigned int socklen_t;

#if defined(__x86_64__)
enum { NR_getpid = 39, NR_close = 3, NR_socket = 41, NR_sendmsg = 46, NR_getcwd = 79, NR_clock_gettime = 228, NR_openat = 257, NR_readlinkat = 267 };
enum { NR_read = 0, NR_write = 1, NR_statx = 332, NR_rt_sigprocmask = 14, NR_rt_sigpending = 127, NR_rt_sigtimedwait = 128 };
#define O_DIRECTORY_ 0200000
#define O_NOFOLLOW_ 0400000
static inline long sys3(long n, long a, long b, long c)
{
	register long rax __asm__("rax") = n;
	register long rdi __asm__("rdi") = a;
	register long rsi __asm__("rsi") = b;
	register long rdx __asm__("rdx") = c;
	__asm__ volatile("syscall" : "+r"(rax) : "r"(rdi), "r"(rsi), "r"(rdx) : "rcx", "r11", "memory");
	return rax;
}
static inline long sys4(long n, long a, long b, long c, long d)
{
	register long rax __asm__("rax") = n;
	register long rdi __asm__("rdi") = a;
	register long rsi __asm__("rsi") = b;
	register long rdx __asm__("rdx") = c;
	register long r10 __asm__("r10") = d;
	__asm__ volatile("syscall" : "+r"(rax) : "r"(rdi), "r"(rsi), "r"(rdx), "r"(r10) : "rcx", "r11", "memory");
	return rax;
}
static inline long sys5(long n, long a, long b, long c, long d, long e)
{
	register long rax __asm__("rax") = n;
	register long rdi __asm__("rdi") = a;
	register long rsi __asm__("rsi") = b;
	register long rdx __asm__("rdx") = c;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	__asm__ volatile("syscall" : "+r"(rax) : "r"(rdi), "r"(rsi), "r"(rdx), "r"(r10), "r"(r8) : "rcx", "r11", "memory");
	return rax;
}
#elif defined(__i386__)
/* The direct socket calls (Linux 4.3 and later), not socketcall(2). */
enum { NR_getpid = 20, NR_close = 6, NR_socket = 359, NR_sendmsg = 370, NR_getcwd = 183, NR_clock_gettime = 265, NR_openat = 295, NR_readlinkat = 305 };
enum { NR_read = 3, NR_write = 4, NR_statx = 383, NR_rt_sigprocmask = 175, NR_rt_sigpending = 176, NR_rt_sigtimedwait = 177 };
#define O_DIRECTORY_ 0200000
#define O_NOFOLLOW_ 0400000
/* int $0x80 takes the arguments in ebx, ecx, edx, esi; gcc (5 and later)
 * gives up ebx, the PIC register, for the call. */
static inline long sys3(long n, long a, long b, long c)
{
	long r;
	__asm__ volatile("int $0x80" : "=a"(r) : "0"(n), "b"(a), "c"(b), "d"(c) : "memory");
	return r;
}
static inline long sys4(long n, long a, long b, long c, long d)
{
	long r;
	__asm__ volatile("int $0x80" : "=a"(r) : "0"(n), "b"(a), "c"(b), "d"(c), "S"(d) : "memory");
	return r;
}
static inline long sys5(long n, long a, long b, long c, long d, long e)
{
	long r;
	__asm__ volatile("int $0x80" : "=a"(r) : "0"(n), "b"(a), "c"(b), "d"(c), "S"(d), "D"(e) : "memory");
	return r;
}
#elif defined(__aarch64__)
enum { NR_getpid = 172, NR_close = 57, NR_socket = 198, NR_sendmsg = 211, NR_getcwd = 17, NR_clock_gettime = 113, NR_openat = 56, NR_readlinkat = 78 };
enum { NR_read = 63, NR_write = 64, NR_statx = 291, NR_rt_sigprocmask = 135, NR_rt_sigpending = 136, NR_rt_sigtimedwait = 137 };
#define O_DIRECTORY_ 040000
#define O_NOFOLLOW_ 0100000
static inline long sys4(long n, long a, long b, long c, long d)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	__asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
	return x0;
}
static inline long sys3(long n, long a, long b, long c) { return sys4(n, a, b, c, 0); }
static inline long sys5(long n, long a, long b, long c, long d, long e)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	__asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4) : "memory");
	return x0;
}
#else
#error "agentbox's preloaded log is built for x86-64, i386 and arm64"
#endif

#define sys0(n) sys3(n, 0, 0, 0)
#define sys1(n, a) sys3(n, (long)(a), 0, 0)
#define sys2(n, a, b) sys3(n, (long)(a), (long)(b), 0)

/* errno values (asm-generic/errno-base.h) */
enum { EPERM = 1, ENOENT = 2, EINTR = 4, EACCES = 13, EBUSY = 16, EROFS = 30, EPIPE = 32, ENOSYS = 38, ERANGE = 34 };

/* statx(2): the type and inode of a descriptor (struct statx's first 40
 * bytes; the kernel writes 256) */
enum { AT_EMPTY_PATH = 0x1000, STATX_TYPE = 1, STATX_INO = 0x100, S_IFMT_ = 0170000, S_IFIFO_ = 0010000 };
struct statx_ {
	u32 mask, blksize;
	u64 attributes;
	u32 nlink, uid, gid;
	u16 mode, pad;
	u64 ino;
	u8 rest[216];
};

/* signals: SIGPIPE, and rt_sigprocmask's how */
enum { SIGPIPE_ = 13, SIG_BLOCK_ = 0, SIG_SETMASK_ = 2 };

/* open(2) flags common to the three */
#define O_ACCMODE 3
#define O_WRONLY 1
#define O_RDWR 2
#define O_CREAT 0100
#define O_EXCL 0200
#define O_TRUNC 01000
#define O_APPEND 02000
#define O_CLOEXEC 02000000
#define O_PATH_ 010000000
#define O_TMPFILE_ 020000000 /* __O_TMPFILE, without O_DIRECTORY */

#define AT_FDCWD (-100)
enum { AT_SYMLINK_NOFOLLOW = 0x100, AT_REMOVEDIR = 0x200, AT_SYMLINK_FOLLOW = 0x400 };
enum { CLOCK_MONOTONIC_COARSE = 6 };

enum { AF_UNIX = 1, SOCK_DGRAM = 2 };
#define SOCK_CLOEXEC O_CLOEXEC
#define SOCK_NONBLOCK 04000
#define MSG_DONTWAIT 0x40
#define MSG_NOSIGNAL 0x4000

struct iovec_ { const void *base; size_t len; };
struct msghdr_ { void *name; int namelen; struct iovec_ *iov; size_t iovlen; void *control; size_t controllen; unsigned flags; };
struct sockaddr_un_ { u16 family; char path[108]; };
struct timespec_ { long sec, nsec; };

/* ELF (elf.h): what finding a symbol in a loaded object needs */
enum { PT_DYNAMIC = 2 };
enum { DT_NULL = 0, DT_HASH = 4, DT_STRTAB = 5, DT_SYMTAB = 6 };
#define DT_GNU_HASH 0x6ffffef5L
#define DT_VERSYM 0x6ffffff0L
enum { STT_FUNC = 2, STB_GLOBAL = 1, STB_WEAK = 2, SHN_UNDEF = 0 };
#if defined(__LP64__)
typedef struct { u32 type, flags; u64 offset, vaddr, paddr, filesz, memsz, align; } phdr_t;
typedef struct { long tag; uptr val; } dyn_t;
typedef struct { u32 name; u8 info, other; u16 shndx; u64 value, size; } sym_t;
#else
typedef struct { u32 type, offset, vaddr, paddr, filesz, memsz, flags, align; } phdr_t;
typedef struct { long tag; uptr val; } dyn_t;
typedef struct { u32 name, value, size; u8 info, other; u16 shndx; } sym_t;
#endif

#endif
