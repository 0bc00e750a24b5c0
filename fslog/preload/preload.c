/* agentbox's filesystem refusal log, inside the box: a shared library that
 * agentbox preloads into every dynamically linked program of the box
 * (LD_PRELOAD). It wraps the C library's functions that can be refused on a
 * path (open, fopen, mkdir, rename, unlink, link, symlink, truncate, chmod,
 * chown, utime, the extended attributes, mknod, mkstemp, bind on a path) and
 * calls the real one. When that fails with EROFS, EACCES, EPERM or EBUSY,
 * it sends agentbox one record (a datagram; under Landlock a frame on an
 * inherited pipe): what the call tried to do, to which path
 * (as the program gave it, with the folder a relative path starts from),
 * and the errno. A call that succeeds costs a compare and a branch.
 *
 * The record is a report, not evidence: agentbox judges each one against
 * the plan, records it only when the plan refuses that operation on that
 * path, and learns the sender's pid from the kernel (SCM_CREDENTIALS;
 * through the pipe, only as the process wrote it).
 * What a process does with this library (unload it, call the kernel
 * directly, send made-up records) changes nothing the kernel enforces.
 *
 * Freestanding: no libc headers, no libc at link time, no DT_NEEDED. It
 * finds the real functions itself, in the objects loaded after it, through
 * dl_iterate_phdr (in every glibc and musl), and reads errno through
 * __errno_location; both are weak, so a program without them runs as it
 * would without the library. It never blocks (a full socket or pipe drops
 * the record), never allocates, keeps no descriptor open between calls (a
 * program may close or reuse any descriptor; the pipe is inherited, and a
 * program that closes it is not heard from), and sends at most 1,000
 * records a second per process after a burst of 256; what it does not send
 * it counts, and the next record carries the count.
 *
 * agentbox writes the library, for each platform ($PLATFORM: x86_64, i686,
 * aarch64), into a folder of the run, next to the socket "log" it reads:
 *   DIR/agentbox-fslog-$PLATFORM.so, DIR/log
 * so the library finds the socket from its own path. Under Landlock, whose
 * box may not make a unix socket, DIR/pipe names an inherited pipe instead
 * (see onpipe below). */
#include "sys.h"

#define EXPORT __attribute__((visibility("default")))
#define va_list __builtin_va_list
#define va_start(v, l) __builtin_va_start(v, l)
#define va_arg(v, t) __builtin_va_arg(v, t)
#define va_end(v) __builtin_va_end(v)

/* The compiler may call these for structure copies; ours, not exported. */
void *memset(void *d, int c, size_t n)
{
	u8 *p = d;
	while (n--) *p++ = (u8)c;
	return d;
}

void *memcpy(void *d, const void *s, size_t n)
{
	u8 *p = d;
	const u8 *q = s;
	while (n--) *p++ = *q++;
	return d;
}

static size_t slen(const char *s, size_t max)
{
	size_t n = 0;
	while (n < max && s[n]) n++;
	return n;
}

static int seq(const char *a, const char *b)
{
	while (*a && *a == *b) a++, b++;
	return *a == *b;
}

/* ---- from the C library and the dynamic linker, found at load time ---- */

struct dl_phdr_info_ {
	uptr addr;
	const char *name;
	const phdr_t *phdr;
	u16 phnum;
};
extern int dl_iterate_phdr(int (*)(struct dl_phdr_info_ *, size_t, void *), void *) __attribute__((weak));
extern int *__errno_location(void) __attribute__((weak));
/* the program's name as it was started (argv[0] without its folder) */
extern char *program_invocation_short_name __attribute__((weak));
/* this library's own ELF header: its load address */
extern const char __ehdr_start[] __attribute__((visibility("hidden")));

/* ---- finding the real functions ---- */

/* The folder the library was loaded from (its own path without the file
 * name), set once when a real function is first looked up. */
static char dir[4096];
static int dirlen = -1; /* -1: not known (yet) */

struct find {
	const char *name;
	u32 gnu, sysv;
	int after;
	void *addr;
};

static u32 gnuhash(const char *s)
{
	u32 h = 5381;
	for (; *s; s++) h = h * 33 + (u8)*s;
	return h;
}

static u32 sysvhash(const char *s)
{
	u32 h = 0, g;
	for (; *s; s++) {
		h = (h << 4) + (u8)*s;
		g = h & 0xf0000000;
		if (g) h ^= g >> 24;
		h &= ~g;
	}
	return h;
}

/* A dynamic entry's address: glibc relocates them in place, musl does not
 * (and neither does anyone for the vDSO); a relocated one is never below
 * the object's load address, an unrelocated one always is. */
static uptr dynaddr(uptr v, uptr base) { return v < base ? v + base : v; }

/* found reports whether symbol i is the definition to use: a function,
 * defined, global or weak, in its default version. */
static void *found(const struct find *f, const sym_t *sym, const char *str, const u16 *ver, u32 i, uptr base)
{
	const sym_t *s = &sym[i];
	u8 type = s->info & 0xf, bind = s->info >> 4;
	if (s->shndx == SHN_UNDEF || !s->value || (type != STT_FUNC && type != 10 /* STT_GNU_IFUNC */) ||
	    (bind != STB_GLOBAL && bind != STB_WEAK) || (ver && (ver[i] & 0x8000 || ver[i] == 0)) || !seq(str + s->name, f->name))
		return 0;
	void *a = (void *)(base + s->value);
	if (type == 10) a = ((void *(*)(unsigned long, void *))a)(0, 0); /* the resolver, for the baseline */
	return a;
}

static int each(struct dl_phdr_info_ *in, size_t size, void *data)
{
	struct find *f = data;
	(void)size;
	if (in->addr == (uptr)__ehdr_start) {
		/* ourselves: what comes after is what we wrap */
		if (__atomic_load_n(&dirlen, __ATOMIC_ACQUIRE) < 0 && in->name) {
			size_t n = slen(in->name, sizeof dir), cut = 0;
			for (size_t i = 0; i < n; i++)
				if (in->name[i] == '/') cut = i;
			if (n < sizeof dir && cut > 0) {
				memcpy(dir, in->name, cut);
				dir[cut] = 0;
				__atomic_store_n(&dirlen, (int)cut, __ATOMIC_RELEASE);
			}
		}
		f->after = 1;
		return 0;
	}
	if (!f->after) return 0;
	const dyn_t *d = 0;
	for (u16 i = 0; i < in->phnum; i++)
		if (in->phdr[i].type == PT_DYNAMIC) d = (const dyn_t *)(in->addr + in->phdr[i].vaddr);
	if (!d) return 0;
	const char *str = 0;
	const sym_t *sym = 0;
	const u32 *hash = 0, *gnu = 0;
	const u16 *ver = 0;
	for (; d->tag != DT_NULL; d++) {
		uptr v = dynaddr(d->val, in->addr);
		switch (d->tag) {
		case DT_STRTAB: str = (const char *)v; break;
		case DT_SYMTAB: sym = (const sym_t *)v; break;
		case DT_HASH: hash = (const u32 *)v; break;
		case DT_GNU_HASH: gnu = (const u32 *)v; break;
		case DT_VERSYM: ver = (const u16 *)v; break;
		}
	}
	if (!str || !sym) return 0;
	if (gnu) {
		u32 nbuckets = gnu[0], symoffset = gnu[1], bloomsize = gnu[2];
		const u32 *buckets = (const u32 *)((const uptr *)(gnu + 4) + bloomsize);
		const u32 *chain = buckets + nbuckets;
		if (!nbuckets) return 0;
		u32 i = buckets[f->gnu % nbuckets];
		if (i < symoffset) return 0;
		for (;; i++) {
			u32 h = chain[i - symoffset];
			if ((h | 1) == (f->gnu | 1) && (f->addr = found(f, sym, str, ver, i, in->addr))) return 1;
			if (h & 1) return 0;
		}
	}
	if (hash) {
		u32 nbucket = hash[0];
		const u32 *bucket = hash + 2, *chain = bucket + nbucket;
		if (!nbucket) return 0;
		for (u32 i = bucket[f->sysv % nbucket]; i; i = chain[i])
			if ((f->addr = found(f, sym, str, ver, i, in->addr))) return 1;
	}
	return 0;
}

/* look returns the real function name, the next definition after this
 * library in the order the dynamic linker loaded the objects (what
 * dlsym(RTLD_NEXT) would return), remembered in *slot. */
static void *look(const char *name, void **slot)
{
	void *a = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (a || !dl_iterate_phdr) return a;
	struct find f = {.name = name, .gnu = gnuhash(name), .sysv = sysvhash(name)};
	dl_iterate_phdr(each, &f);
	if (f.addr) __atomic_store_n(slot, f.addr, __ATOMIC_RELEASE);
	return f.addr;
}

static int *errp(void) { return __errno_location ? __errno_location() : 0; }

/* what a wrapper returns when it finds no real function to call */
static long nosys(void)
{
	int *e = errp();
	if (e) *e = ENOSYS;
	return -1;
}

static void *nullsys(void)
{
	nosys();
	return 0;
}

/* ---- the record ---- */

enum { OP_READ = 1, OP_WRITE, OP_CREATE, OP_MKDIR, OP_REMOVE, OP_RMDIR, OP_RENAME, OP_LINK, OP_SYMLINK, OP_TRUNCATE,
       OP_CHMOD, OP_CHOWN, OP_UTIME, OP_XATTR };
/* F_NOFOLLOW: the call does not follow a link at the end of its first
 * path; F_EXCL and F_TRUNC: O_EXCL and O_TRUNC. */
enum { F_NOFOLLOW = 1, F_EXCL = 2, F_TRUNC = 4 };

/* A record: this header, then six NUL-terminated strings: the call, the
 * folder the first path is relative to ("" when it is absolute or that
 * folder cannot be named), the first path, the same two for the second
 * path ("" when the call has one path), and the program's name. A record
 * with no operation and six empty strings only counts what was lost (sent
 * when a process that lost some exits). */
struct rec {
	u8 magic[4]; /* "fsl1" */
	u8 op, flags, pad[2];
	u32 err;  /* the errno the call failed with */
	u32 lost; /* refusals of this process not reported before this one */
};

enum { BURST = 256 };
static int tokens = BURST;
static u32 refilled; /* CLOCK_MONOTONIC_COARSE, ms, at the last refill */
static u32 over;     /* refusals past the rate since the clock was read */
static u32 lost;
static int lostpid; /* the process that counted them (a forked child inherits the count) */
static int busy;    /* the buffers below are in use */
static char bases[8192];
static char name[64];
static struct sockaddr_un_ addr;

/* take reports whether a refusal may be sent now: a token bucket of BURST
 * records refilled at one a millisecond. Past it, the clock is read on
 * every 16th refusal only. */
static int take(void)
{
	if (__atomic_sub_fetch(&tokens, 1, __ATOMIC_RELAXED) >= 0) return 1;
	if (__atomic_add_fetch(&over, 1, __ATOMIC_RELAXED) % 16) return 0;
	struct timespec_ ts;
	if (sys2(NR_clock_gettime, CLOCK_MONOTONIC_COARSE, &ts) < 0) return 0;
	u32 now = (u32)ts.sec * 1000u + (u32)ts.nsec / 1000000u;
	u32 last = __atomic_load_n(&refilled, __ATOMIC_RELAXED);
	u32 add = now - last;
	if (add == 0 || add > 0x80000000u ||
	    !__atomic_compare_exchange_n(&refilled, &last, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return 0;
	if (add > BURST) add = BURST;
	__atomic_store_n(&tokens, (int)add - 1, __ATOMIC_RELAXED);
	return 1;
}

static void addlost(u32 n)
{
	if (!__atomic_load_n(&lostpid, __ATOMIC_RELAXED)) __atomic_store_n(&lostpid, (int)sys0(NR_getpid), __ATOMIC_RELAXED);
	__atomic_add_fetch(&lost, n, __ATOMIC_RELAXED);
}

/* takelost returns the count to send, and starts it again; a count this
 * process inherited from the one that forked it is not its own, and that
 * one reports it. */
static u32 takelost(void)
{
	u32 n = __atomic_exchange_n(&lost, 0, __ATOMIC_RELAXED);
	int owner = __atomic_exchange_n(&lostpid, 0, __ATOMIC_RELAXED);
	if (n && owner != (int)sys0(NR_getpid)) n = 0;
	return n;
}

static char *utoa(char *p, unsigned v)
{
	char t[12];
	int i = 0;
	do t[i++] = (char)('0' + v % 10); while (v /= 10);
	while (i) *p++ = t[--i];
	return p;
}

/* base writes, at b (room n), the folder a relative path p is relative to:
 * the working folder (dfd AT_FDCWD) or what descriptor dfd names; nothing
 * for an absolute path or one that cannot be named. It returns the length
 * with the NUL. */
static size_t base(int dfd, const char *p, char *b, size_t n)
{
	b[0] = 0;
	if (n < 2 || p[0] == '/') return 1;
	long r;
	if (dfd == AT_FDCWD) {
		r = sys2(NR_getcwd, b, n);
		if (r <= 0 || b[0] != '/') b[0] = 0;
	} else {
		char link[32] = "/proc/self/fd/";
		*utoa(link + 14, (unsigned)dfd) = 0;
		r = sys4(NR_readlinkat, AT_FDCWD, (long)link, (long)b, (long)(n - 1));
		b[r > 0 && b[0] == '/' ? r : 0] = 0;
	}
	return slen(b, n) + 1;
}

/* ---- the pipe (Landlock) ----
 * A Landlock box may not make a unix socket: there agentbox hands every
 * process of the box the write end of a pipe at descriptor PIPEFD (not
 * closed on exec, O_NONBLOCK) and writes the pipe's inode number to
 * DIR/pipe. A record then goes as one frame, one write(2) of at most
 * PIPE_BUF bytes, which the kernel never interleaves with another
 * writer's: its length (the whole frame's), the pid of this process (what
 * agentbox knows of the sender: no kernel vouches for it), the record. A
 * record too long for a frame is not sent (and counted lost). Only a
 * pipe at PIPEFD with that inode is agentbox's: a program's own
 * descriptor there (or none, after it closed every descriptor) means the
 * socket, as without a pipe. */
enum { PIPEFD = 1021, PIPE_BUF_ = 4096 };
static u64 pipeino; /* DIR/pipe's number; 0 none */
static int pipeknown; /* DIR/pipe was read */
static char frame[PIPE_BUF_];
static char pipepath[sizeof dir + 8];

/* onpipe reports whether PIPEFD is agentbox's pipe; the caller holds busy. */
static int onpipe(int dl)
{
	if (!pipeknown) {
		pipeknown = 1;
		memcpy(pipepath, dir, (size_t)dl);
		memcpy(pipepath + dl, "/pipe", 6);
		long f = sys4(NR_openat, AT_FDCWD, (long)pipepath, O_CLOEXEC | O_NOFOLLOW_, 0);
		if (f >= 0) {
			char t[24];
			long n = sys3(NR_read, f, (long)t, sizeof t);
			u64 v = 0;
			for (long i = 0; i < n && t[i] >= '0' && t[i] <= '9'; i++) v = v * 10 + (u64)(t[i] - '0');
			pipeino = v;
			sys1(NR_close, f);
		}
	}
	if (!pipeino) return 0;
	struct statx_ sx;
	sx.mode = 0;
	if (sys5(NR_statx, PIPEFD, (long)"", AT_EMPTY_PATH, STATX_TYPE | STATX_INO, (long)&sx) < 0) return 0;
	return (sx.mode & S_IFMT_) == S_IFIFO_ && sx.ino == pipeino;
}

/* sendpipe writes one record (n pieces) as a frame to PIPEFD. With SIGPIPE
 * blocked meanwhile: agentbox gone (no reader) is a record lost, not a
 * program killed; a SIGPIPE the write raised is taken back, one that was
 * pending before is left for the program. */
static long sendpipe(struct iovec_ *iov, size_t n)
{
	size_t len = 8;
	for (size_t i = 0; i < n; i++) {
		if (iov[i].len > PIPE_BUF_ - len) return -1;
		memcpy(frame + len, iov[i].base, iov[i].len);
		len += iov[i].len;
	}
	u32 head[2] = {(u32)len, (u32)sys0(NR_getpid)};
	memcpy(frame, head, sizeof head);
	u64 pipe = 1ull << (SIGPIPE_ - 1), old = 0, pending = 0;
	if (sys4(NR_rt_sigprocmask, SIG_BLOCK_, (long)&pipe, (long)&old, 8) < 0) return -1;
	sys2(NR_rt_sigpending, &pending, 8);
	long r = sys3(NR_write, PIPEFD, (long)frame, (long)len);
	if (r == -EPIPE && !(pending & pipe)) {
		struct timespec_ zero = {0, 0};
		sys4(NR_rt_sigtimedwait, (long)&pipe, 0, (long)&zero, 8);
	}
	sys4(NR_rt_sigprocmask, SIG_SETMASK_, (long)&old, 0, 8);
	return r == (long)len ? r : -1;
}

/* sendlog sends one record (n pieces) to agentbox: through its pipe when
 * this process has it, else to DIR/log, or through a descriptor of DIR
 * when that path is longer than a socket address holds; the caller holds
 * busy. Negative when the record was not sent. */
static long sendlog(struct iovec_ *iov, size_t n, int dl)
{
	if (onpipe(dl)) return sendpipe(iov, n);
	long dfd = -1, s = -1, r = -1;
	int alen, viafd = 0;
	addr.family = AF_UNIX;
	if ((size_t)dl + 5 < sizeof addr.path) {
		memcpy(addr.path, dir, (size_t)dl);
		memcpy(addr.path + dl, "/log", 5);
		alen = 2 + dl + 5;
	} else {
		viafd = 1;
		dfd = sys4(NR_openat, AT_FDCWD, (long)dir, O_PATH_ | O_DIRECTORY_ | O_CLOEXEC, 0);
		char *q = addr.path;
		memcpy(q, "/proc/self/fd/", 14);
		q = utoa(q + 14, (unsigned)dfd);
		memcpy(q, "/log", 5);
		alen = 2 + (int)(q - addr.path) + 5;
	}
	if (!viafd || dfd >= 0) s = sys3(NR_socket, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s >= 0) {
		struct msghdr_ m = {.name = &addr, .namelen = alen, .iov = iov, .iovlen = n};
		r = sys3(NR_sendmsg, s, (long)&m, MSG_DONTWAIT | MSG_NOSIGNAL);
		sys1(NR_close, s);
	}
	if (viafd && dfd >= 0) sys1(NR_close, dfd);
	return r;
}

static void report(const char *call, int op, int fl, int d1, const char *p1, int d2, const char *p2)
{
	int *ep = errp();
	if (!ep || !p1 || !op) return;
	int e = *ep;
	if (e != EROFS && e != EACCES && e != EPERM && e != EBUSY) return;
	/* (the kernel refuses a longer path before it looks at permissions) */
	if (slen(p1, 4096) == 4096 || (p2 && slen(p2, 4096) == 4096)) return;
	int dl = __atomic_load_n(&dirlen, __ATOMIC_ACQUIRE);
	if (dl < 0) return; /* never found ourselves: nowhere to send */
	if (!take() || __atomic_exchange_n(&busy, 1, __ATOMIC_ACQUIRE)) {
		/* over the rate, or another thread (or a signal handler
		 * interrupting this one) is sending */
		addlost(1);
		*ep = e;
		return;
	}
	struct rec h = {.magic = {'f', 's', 'l', '1'}, .op = (u8)op, .flags = (u8)fl, .err = (u32)e};
	h.lost = takelost();
	size_t n1 = base(d1, p1, bases, sizeof bases / 2);
	size_t n2 = 1;
	char *b2 = bases + sizeof bases / 2;
	b2[0] = 0;
	if (p2) n2 = base(d2, p2, b2, sizeof bases / 2);
	const char *empty = "";
	const char *prog = &program_invocation_short_name && program_invocation_short_name ? program_invocation_short_name : empty;
	size_t np = slen(prog, sizeof name - 1);
	memcpy(name, prog, np);
	name[np] = 0;
	struct iovec_ iov[7] = {
		{&h, sizeof h},
		{call, slen(call, 64) + 1},
		{bases, n1},
		{p1, slen(p1, 4096) + 1},
		{b2, n2},
		{p2 ? p2 : empty, p2 ? slen(p2, 4096) + 1 : 1},
		{name, np + 1},
	};
	if (sendlog(iov, 7, dl) < 0) addlost(h.lost + 1);
	__atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
	*ep = e;
}

/* At exit, a process that lost records says how many: nothing may follow
 * to carry the count. */
__attribute__((destructor)) static void bye(void)
{
	int dl = __atomic_load_n(&dirlen, __ATOMIC_ACQUIRE);
	if (!__atomic_load_n(&lost, __ATOMIC_RELAXED) || dl < 0 || __atomic_exchange_n(&busy, 1, __ATOMIC_ACQUIRE)) return;
	int *ep = errp();
	int e = ep ? *ep : 0;
	struct rec h = {.magic = {'f', 's', 'l', '1'}};
	h.lost = takelost();
	struct iovec_ iov[2] = {{&h, sizeof h}, {"\0\0\0\0\0", 6}};
	if (h.lost) sendlog(iov, 2, dl);
	__atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
	if (ep) *ep = e;
}

/* what an open with flags fl does */
static int openop(int fl, int *f)
{
	*f = 0;
	if (fl & (O_PATH_ | O_TMPFILE_)) return 0; /* a handle, or a file with no name */
	if (fl & O_TRUNC) *f |= F_TRUNC;
	if (fl & O_NOFOLLOW_) *f |= F_NOFOLLOW;
	if (fl & O_CREAT) {
		if (fl & O_EXCL) *f |= F_EXCL | F_NOFOLLOW;
		return OP_CREATE;
	}
	if ((fl & O_ACCMODE) != 0 || (fl & O_TRUNC)) return OP_WRITE;
	return OP_READ;
}

/* the open flags of an fopen mode */
static int fmode(const char *m)
{
	int fl;
	switch (m ? *m : 0) {
	case 'r': fl = 0; break;
	case 'w': fl = O_WRONLY | O_CREAT | O_TRUNC; break;
	case 'a': fl = O_WRONLY | O_CREAT | O_APPEND; break;
	default: return O_PATH_; /* not an fopen the C library takes: nothing to report */
	}
	for (m++; *m && *m != ','; m++) {
		if (*m == '+') fl = (fl & ~O_ACCMODE) | O_RDWR;
		if (*m == 'x') fl |= O_EXCL;
	}
	return fl;
}

static int atflags(int at) { return at & AT_SYMLINK_NOFOLLOW ? F_NOFOLLOW : 0; }

/* ---- the wrappers ---- */

#define REAL(ret, name, params)                                                   \
	typedef ret(*name##_fn) params;                                            \
	static void *slot_##name;                                                  \
	static name##_fn real_##name(void) { return (name##_fn)look(#name, &slot_##name); }

/* path calls that return an int, -1 on failure */
#define CALL(name, params, args, op, fl, d1, p1, d2, p2)           \
	REAL(int, name, params)                                    \
	EXPORT int name params                                     \
	{                                                          \
		name##_fn f = real_##name();                       \
		if (!f) return (int)nosys();                       \
		int r = f args;                                    \
		if (r < 0) report(#name, op, fl, d1, p1, d2, p2); \
		return r;                                          \
	}

/* open and its kin take a mode only when they create */
#define NEEDMODE(fl) ((fl) & (O_CREAT | O_TMPFILE_))

#define OPEN(name)                                                \
	REAL(int, name, (const char *, int, ...))                 \
	EXPORT int name(const char *p, int fl, ...)               \
	{                                                         \
		mode_t m = 0;                                     \
		if (NEEDMODE(fl)) {                               \
			va_list ap;                               \
			va_start(ap, fl);                         \
			m = va_arg(ap, mode_t);                   \
			va_end(ap);                               \
		}                                                 \
		name##_fn f = real_##name();                      \
		if (!f) return (int)nosys();                      \
		int r = f(p, fl, m);                              \
		if (r < 0) {                                      \
			int x, op = openop(fl, &x);               \
			report(#name, op, x, AT_FDCWD, p, 0, 0);  \
		}                                                 \
		return r;                                         \
	}
OPEN(open)
OPEN(open64)

#define OPENAT(name)                                              \
	REAL(int, name, (int, const char *, int, ...))            \
	EXPORT int name(int d, const char *p, int fl, ...)        \
	{                                                         \
		mode_t m = 0;                                     \
		if (NEEDMODE(fl)) {                               \
			va_list ap;                               \
			va_start(ap, fl);                         \
			m = va_arg(ap, mode_t);                   \
			va_end(ap);                               \
		}                                                 \
		name##_fn f = real_##name();                      \
		if (!f) return (int)nosys();                      \
		int r = f(d, p, fl, m);                           \
		if (r < 0) {                                      \
			int x, op = openop(fl, &x);               \
			report(#name, op, x, d, p, 0, 0);         \
		}                                                 \
		return r;                                         \
	}
OPENAT(openat)
OPENAT(openat64)

/* _FORTIFY_SOURCE's checked opens */
#define OPEN2(name)                                               \
	REAL(int, name, (const char *, int))                      \
	EXPORT int name(const char *p, int fl)                    \
	{                                                         \
		name##_fn f = real_##name();                      \
		if (!f) return (int)nosys();                      \
		int r = f(p, fl);                                 \
		if (r < 0) {                                      \
			int x, op = openop(fl, &x);               \
			report(#name, op, x, AT_FDCWD, p, 0, 0);  \
		}                                                 \
		return r;                                         \
	}
OPEN2(__open_2)
OPEN2(__open64_2)

#define OPENAT2(name)                                             \
	REAL(int, name, (int, const char *, int))                 \
	EXPORT int name(int d, const char *p, int fl)             \
	{                                                         \
		name##_fn f = real_##name();                      \
		if (!f) return (int)nosys();                      \
		int r = f(d, p, fl);                              \
		if (r < 0) {                                      \
			int x, op = openop(fl, &x);               \
			report(#name, op, x, d, p, 0, 0);         \
		}                                                 \
		return r;                                         \
	}
OPENAT2(__openat_2)
OPENAT2(__openat64_2)

CALL(creat, (const char *p, mode_t m), (p, m), OP_CREATE, F_TRUNC, AT_FDCWD, p, 0, 0)
CALL(creat64, (const char *p, mode_t m), (p, m), OP_CREATE, F_TRUNC, AT_FDCWD, p, 0, 0)

#define FOPEN(name)                                                 \
	REAL(void *, name, (const char *, const char *))            \
	EXPORT void *name(const char *p, const char *mode)          \
	{                                                           \
		name##_fn f = real_##name();                        \
		if (!f) return nullsys();         \
		void *r = f(p, mode);                               \
		if (!r) {                                           \
			int x, op = openop(fmode(mode), &x);        \
			report(#name, op, x, AT_FDCWD, p, 0, 0);    \
		}                                                   \
		return r;                                           \
	}
FOPEN(fopen)
FOPEN(fopen64)

#define FREOPEN(name)                                                       \
	REAL(void *, name, (const char *, const char *, void *))            \
	EXPORT void *name(const char *p, const char *mode, void *s)         \
	{                                                                   \
		name##_fn f = real_##name();                                \
		if (!f) return nullsys();                 \
		void *r = f(p, mode, s);                                    \
		if (!r && p) {                                              \
			int x, op = openop(fmode(mode), &x);                \
			report(#name, op, x, AT_FDCWD, p, 0, 0);            \
		}                                                           \
		return r;                                                   \
	}
FREOPEN(freopen)
FREOPEN(freopen64)

REAL(void *, opendir, (const char *))
EXPORT void *opendir(const char *p)
{
	opendir_fn f = real_opendir();
	if (!f) return nullsys();
	void *r = f(p);
	if (!r) report("opendir", OP_READ, 0, AT_FDCWD, p, 0, 0);
	return r;
}

CALL(mkdir, (const char *p, mode_t m), (p, m), OP_MKDIR, F_NOFOLLOW, AT_FDCWD, p, 0, 0)
CALL(mkdirat, (int d, const char *p, mode_t m), (d, p, m), OP_MKDIR, F_NOFOLLOW, d, p, 0, 0)
CALL(mknod, (const char *p, mode_t m, dev_t v), (p, m, v), OP_CREATE, F_EXCL | F_NOFOLLOW, AT_FDCWD, p, 0, 0)
CALL(mknodat, (int d, const char *p, mode_t m, dev_t v), (d, p, m, v), OP_CREATE, F_EXCL | F_NOFOLLOW, d, p, 0, 0)
CALL(mkfifo, (const char *p, mode_t m), (p, m), OP_CREATE, F_EXCL | F_NOFOLLOW, AT_FDCWD, p, 0, 0)
CALL(mkfifoat, (int d, const char *p, mode_t m), (d, p, m), OP_CREATE, F_EXCL | F_NOFOLLOW, d, p, 0, 0)

CALL(rename, (const char *a, const char *b), (a, b), OP_RENAME, F_NOFOLLOW, AT_FDCWD, a, AT_FDCWD, b)
CALL(renameat, (int da, const char *a, int db, const char *b), (da, a, db, b), OP_RENAME, F_NOFOLLOW, da, a, db, b)
CALL(renameat2, (int da, const char *a, int db, const char *b, unsigned fl), (da, a, db, b, fl), OP_RENAME, F_NOFOLLOW, da, a,
     db, b)
CALL(unlink, (const char *p), (p), OP_REMOVE, F_NOFOLLOW, AT_FDCWD, p, 0, 0)
CALL(unlinkat, (int d, const char *p, int at), (d, p, at), at & AT_REMOVEDIR ? OP_RMDIR : OP_REMOVE, F_NOFOLLOW, d, p, 0, 0)
CALL(rmdir, (const char *p), (p), OP_RMDIR, F_NOFOLLOW, AT_FDCWD, p, 0, 0)
CALL(remove, (const char *p), (p), OP_REMOVE, F_NOFOLLOW, AT_FDCWD, p, 0, 0)
CALL(link, (const char *a, const char *b), (a, b), OP_LINK, F_NOFOLLOW, AT_FDCWD, a, AT_FDCWD, b)
CALL(linkat, (int da, const char *a, int db, const char *b, int at), (da, a, db, b, at), OP_LINK,
     at & AT_SYMLINK_FOLLOW ? 0 : F_NOFOLLOW, da, a, db, b)
/* a symbolic link's target is any text: the path made is the second */
CALL(symlink, (const char *t, const char *p), (t, p), OP_SYMLINK, F_NOFOLLOW, AT_FDCWD, p, 0, 0)
CALL(symlinkat, (const char *t, int d, const char *p), (t, d, p), OP_SYMLINK, F_NOFOLLOW, d, p, 0, 0)

CALL(truncate, (const char *p, off_t n), (p, n), OP_TRUNCATE, 0, AT_FDCWD, p, 0, 0)
CALL(truncate64, (const char *p, off64_t n), (p, n), OP_TRUNCATE, 0, AT_FDCWD, p, 0, 0)
CALL(chmod, (const char *p, mode_t m), (p, m), OP_CHMOD, 0, AT_FDCWD, p, 0, 0)
CALL(fchmodat, (int d, const char *p, mode_t m, int at), (d, p, m, at), OP_CHMOD, atflags(at), d, p, 0, 0)
CALL(chown, (const char *p, uid_t u, gid_t g), (p, u, g), OP_CHOWN, 0, AT_FDCWD, p, 0, 0)
CALL(lchown, (const char *p, uid_t u, gid_t g), (p, u, g), OP_CHOWN, F_NOFOLLOW, AT_FDCWD, p, 0, 0)
CALL(fchownat, (int d, const char *p, uid_t u, gid_t g, int at), (d, p, u, g, at), OP_CHOWN, atflags(at), d, p, 0, 0)
CALL(utime, (const char *p, const void *t), (p, t), OP_UTIME, 0, AT_FDCWD, p, 0, 0)
CALL(utimes, (const char *p, const void *t), (p, t), OP_UTIME, 0, AT_FDCWD, p, 0, 0)
CALL(lutimes, (const char *p, const void *t), (p, t), OP_UTIME, F_NOFOLLOW, AT_FDCWD, p, 0, 0)
/* utimensat(fd, NULL, …) and futimesat(fd, NULL, …) change fd itself: no path */
CALL(utimensat, (int d, const char *p, const void *t, int at), (d, p, t, at), OP_UTIME, atflags(at), d, p, 0, 0)
CALL(futimesat, (int d, const char *p, const void *t), (d, p, t), OP_UTIME, 0, d, p, 0, 0)
#if defined(__i386__)
/* the 64-bit time variants a 32-bit program built with _TIME_BITS=64 calls */
CALL(__utime64, (const char *p, const void *t), (p, t), OP_UTIME, 0, AT_FDCWD, p, 0, 0)
CALL(__utimes64, (const char *p, const void *t), (p, t), OP_UTIME, 0, AT_FDCWD, p, 0, 0)
CALL(__lutimes64, (const char *p, const void *t), (p, t), OP_UTIME, F_NOFOLLOW, AT_FDCWD, p, 0, 0)
CALL(__utimensat64, (int d, const char *p, const void *t, int at), (d, p, t, at), OP_UTIME, atflags(at), d, p, 0, 0)
CALL(__futimesat64, (int d, const char *p, const void *t), (d, p, t), OP_UTIME, 0, d, p, 0, 0)
#endif
CALL(setxattr, (const char *p, const char *n, const void *v, size_t s, int fl), (p, n, v, s, fl), OP_XATTR, 0, AT_FDCWD, p, 0, 0)
CALL(lsetxattr, (const char *p, const char *n, const void *v, size_t s, int fl), (p, n, v, s, fl), OP_XATTR, F_NOFOLLOW, AT_FDCWD,
     p, 0, 0)
CALL(removexattr, (const char *p, const char *n), (p, n), OP_XATTR, 0, AT_FDCWD, p, 0, 0)
CALL(lremovexattr, (const char *p, const char *n), (p, n), OP_XATTR, F_NOFOLLOW, AT_FDCWD, p, 0, 0)

/* mkstemp and its kin open O_CREAT|O_EXCL in the C library itself; the
 * template holds the last name tried */
CALL(mkstemp, (char *p), (p), OP_CREATE, F_EXCL | F_NOFOLLOW, AT_FDCWD, p, 0, 0)
CALL(mkstemp64, (char *p), (p), OP_CREATE, F_EXCL | F_NOFOLLOW, AT_FDCWD, p, 0, 0)
CALL(mkostemp, (char *p, int fl), (p, fl), OP_CREATE, F_EXCL | F_NOFOLLOW, AT_FDCWD, p, 0, 0)
CALL(mkostemp64, (char *p, int fl), (p, fl), OP_CREATE, F_EXCL | F_NOFOLLOW, AT_FDCWD, p, 0, 0)
CALL(mkstemps, (char *p, int n), (p, n), OP_CREATE, F_EXCL | F_NOFOLLOW, AT_FDCWD, p, 0, 0)
CALL(mkstemps64, (char *p, int n), (p, n), OP_CREATE, F_EXCL | F_NOFOLLOW, AT_FDCWD, p, 0, 0)
CALL(mkostemps, (char *p, int n, int fl), (p, n, fl), OP_CREATE, F_EXCL | F_NOFOLLOW, AT_FDCWD, p, 0, 0)
CALL(mkostemps64, (char *p, int n, int fl), (p, n, fl), OP_CREATE, F_EXCL | F_NOFOLLOW, AT_FDCWD, p, 0, 0)

REAL(char *, mkdtemp, (char *))
EXPORT char *mkdtemp(char *p)
{
	mkdtemp_fn f = real_mkdtemp();
	if (!f) return (char *)nullsys();
	char *r = f(p);
	if (!r) report("mkdtemp", OP_MKDIR, F_NOFOLLOW, AT_FDCWD, p, 0, 0);
	return r;
}

/* bind on a path makes the socket's file */
REAL(int, bind, (int, const void *, socklen_t))
EXPORT int bind(int s, const void *a, socklen_t n)
{
	bind_fn f = real_bind();
	if (!f) return (int)nosys();
	int r = f(s, a, n);
	const struct sockaddr_un_ *u = a;
	if (r < 0 && u && n > 2 && u->family == AF_UNIX && u->path[0]) {
		char p[sizeof u->path + 1];
		size_t k = n - 2 < sizeof u->path ? n - 2 : sizeof u->path;
		memcpy(p, u->path, k);
		p[k] = 0;
		report("bind", OP_CREATE, F_EXCL | F_NOFOLLOW, AT_FDCWD, p, 0, 0);
	}
	return r;
}
