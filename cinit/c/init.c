/* agentbox's init: pid 1 inside a bwrap box, in C so a run does not pay for
 * a second Go runtime. It does exactly what the Go init (mount.Init) does:
 *
 *   INIT __init --ready-fd N [--check-fd N] [--private-mounts] [--foreground] [--log-fd N] [--preload-fd N] [--rlimit NAME=VALUE]...
 *        [--net-fd N [--net-port PORT] [--forward HOST:PORT]... [--publish PORT]...] -- CMD ARGS...
 *
 * It first makes the box's mounts private (--private-mounts) and drops every
 * capability, then makes itself non-dumpable, blocks the signals it forwards (so none is
 * lost before CMD exists), checks that the box's mounts are what agentbox
 * asked for, sets up the allowlist relay (and answers agentbox's questions
 * for sockets to published ports), writes the ready byte,
 * closes every descriptor it inherited, starts CMD in its own process group
 * (with the terminal's foreground when told, and the rlimits set in the child
 * only), forwards INT TERM HUP QUIT WINCH USR1 USR2 to CMD, continues a
 * stopped CMD, reaps every process, and exits with CMD's status: its code,
 * or 128+N when signal N killed it; 126/127 when it cannot be started, 125
 * for its own failures. It allocates nothing.
 *
 *   INIT __landlock --ruleset-fd N --restrict-flags F --seccomp-fd M
 *        [--drop-caps] [--log-fd L] [--preload-fd P] [--rlimit NAME=VALUE]... -- CMD ARGS...
 *
 * is the Landlock run's child instead (see landlock_exec below). */
#include "sys.h"

/* ---- small helpers: no libc ---- */

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

static size_t slen(const char *s)
{
	size_t n = 0;
	while (s[n]) n++;
	return n;
}

static int seq(const char *a, const char *b)
{
	while (*a && *a == *b) a++, b++;
	return *a == *b;
}

static int haschar(const char *s, char c)
{
	for (; *s; s++)
		if (*s == c) return 1;
	return 0;
}

/* parse a decimal number; -1 on anything else or overflow past max */
static int parseu(const char *s, u64 max, u64 *out)
{
	u64 v = 0;
	if (!*s) return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9') return -1;
		u64 d = (u64)(*s - '0');
		if (v > (max - d) / 10) return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* a message is built in one buffer and written with one write(2), so lines
 * of concurrent writers never interleave */
struct msg { char b[8192]; size_t n; };

/* room is always kept for the message's last character, its newline */
static void add(struct msg *m, const char *s)
{
	while (*s && m->n < sizeof m->b - 2) m->b[m->n++] = *s++;
}

static void addnum(struct msg *m, long v)
{
	char t[24];
	int i = 0;
	unsigned long u = v < 0 ? -(unsigned long)v : (unsigned long)v;
	do t[i++] = (char)('0' + u % 10); while (u /= 10);
	if (v < 0) t[i++] = '-';
	while (i) {
		char c[2] = {t[--i], 0};
		add(m, c);
	}
}

/* errno text as Go's syscall package words it (the Go init's messages) */
static const char *errtext(long e, char *buf)
{
	switch (e) {
	case EPERM: return "operation not permitted";
	case ENOENT: return "no such file or directory";
	case EIO: return "input/output error";
	case E2BIG: return "argument list too long";
	case ENOEXEC: return "exec format error";
	case EAGAIN: return "resource temporarily unavailable";
	case ENOMEM: return "cannot allocate memory";
	case EACCES: return "permission denied";
	case EFAULT: return "bad address";
	case ENOTDIR: return "not a directory";
	case EISDIR: return "is a directory";
	case EINVAL: return "invalid argument";
	case ENFILE: return "too many open files in system";
	case EMFILE: return "too many open files";
	case ETXTBSY: return "text file busy";
	case ENAMETOOLONG: return "file name too long";
	case ELOOP: return "too many levels of symbolic links";
	case EADDRINUSE: return "address already in use";
	case EADDRNOTAVAIL: return "cannot assign requested address";
	case ESRCH: return "no such process";
	case ENXIO: return "no such device or address";
	case EBADF: return "bad file descriptor";
	case EBUSY: return "device or resource busy";
	case EXDEV: return "invalid cross-device link";
	case ENODEV: return "no such device";
	case ENOSPC: return "no space left on device";
	case EROFS: return "read-only file system";
	case ENOSYS: return "function not implemented";
	case EOVERFLOW: return "value too large for defined data type";
	case EOPNOTSUPP: return "operation not supported";
	case ETIMEDOUT: return "connection timed out";
	case ESTALE: return "stale file handle";
	case EDQUOT: return "disk quota exceeded";
	case EPIPE: return "broken pipe";
	case ENOTSOCK: return "socket operation on non-socket";
	case ECONNRESET: return "connection reset by peer";
	}
	struct msg m = {.n = 0};
	add(&m, "errno ");
	addnum(&m, e);
	m.b[m.n] = 0;
	memcpy(buf, m.b, m.n + 1);
	return buf;
}

static void tell(const char *kind, const char *a, const char *b, const char *c, const char *d)
{
	struct msg m = {.n = 0};
	add(&m, kind);
	add(&m, a);
	if (b) add(&m, b);
	if (c) add(&m, c);
	if (d) add(&m, d);
	add(&m, "\n");
	sys3(NR_write, 2, m.b, m.n);
}

static void say(const char *a, const char *b, const char *c, const char *d) { tell("agentbox: error: ", a, b, c, d); }

static __attribute__((noreturn)) void quit(int code)
{
	for (;;) sys1(NR_exit_group, code);
}

enum { EXIT_FAILURE_ = 125, EXIT_CANNOT_EXECUTE = 126, EXIT_NOT_FOUND = 127 };

/* ---- the command: PATH lookup as Go's exec.LookPath does it ---- */

static char pathbuf[4096];

/* findExecutable: a file (not a folder) that we may execute */
static long executable(const char *p)
{
	struct statx_ st;
	long r = sys5(NR_statx, AT_FDCWD, p, 0, STATX_MODE, &st);
	if (r < 0) return r;
	if ((st.mode & S_IFMT) == S_IFDIR) return -EISDIR;
	r = sys4(NR_faccessat2, AT_FDCWD, p, X_OK, AT_EACCESS);
	if (r == 0 || (r != -ENOSYS && r != -EPERM)) return r;
	return (st.mode & 0111) ? 0 : -EACCES;
}

static const char *getenv_(char **envp, const char *k)
{
	size_t n = slen(k);
	for (; *envp; envp++) {
		const char *e = *envp;
		size_t i = 0;
		while (i < n && e[i] == k[i]) i++;
		if (i == n && e[n] == '=') return e + n + 1;
	}
	return 0;
}

/* lookup resolves name; on failure it prints the message and returns the
 * exit status (127 not found, 126 cannot execute), else 0 with *out set. */
static int lookup(const char *name, char **envp, const char **out)
{
	char eb[32];
	if (haschar(name, '/')) {
		long r = executable(name);
		if (r == -ENOENT) {
			say(name, ": command not found", 0, 0);
			return EXIT_NOT_FOUND;
		}
		if (r < 0) {
			say(name, ": cannot execute: ", errtext(-r, eb), 0);
			return EXIT_CANNOT_EXECUTE;
		}
		*out = name;
		return 0;
	}
	const char *path = getenv_(envp, "PATH");
	size_t nl = slen(name);
	/* filepath.SplitList: nothing for an empty PATH; an empty entry is "." */
	for (const char *d = path; d && *path;) {
		const char *e = d;
		while (*e && *e != ':') e++;
		size_t dl = (size_t)(e - d);
		const char *dir = dl ? d : ".";
		if (!dl) dl = 1;
		if (dl + 1 + nl + 1 <= sizeof pathbuf) {
			memcpy(pathbuf, dir, dl);
			pathbuf[dl] = '/';
			memcpy(pathbuf + dl + 1, name, nl + 1);
			if (executable(pathbuf) == 0) {
				if (pathbuf[0] != '/') {
					/* exec.ErrDot */
					say(name, ": cannot execute: cannot run executable found relative to current directory", 0, 0);
					return EXIT_CANNOT_EXECUTE;
				}
				*out = pathbuf;
				return 0;
			}
		}
		if (!*e) break;
		d = e + 1;
	}
	say(name, ": command not found", 0, 0);
	return EXIT_NOT_FOUND;
}

/* ---- arguments ---- */

#define MAXLIM 8
#define MAXFORWARD 255 /* the Go init's limit too */
#define MAXLISTEN (1 + 2 * MAXFORWARD)

static struct { int res; u64 v; const char *spec; } lims[MAXLIM];
static int nlims;

static int rlimit(const char *spec)
{
	static const struct { const char *name; int res; } names[] = {
		{"nproc", RLIMIT_NPROC}, {"nofile", RLIMIT_NOFILE}, {"as", RLIMIT_AS},
		{"cpu", RLIMIT_CPU}, {"fsize", RLIMIT_FSIZE},
	};
	char name[16];
	size_t i = 0;
	while (spec[i] && spec[i] != '=' && i < sizeof name - 1) name[i] = spec[i], i++;
	name[i] = 0;
	if (spec[i] != '=' || nlims == MAXLIM) return -1;
	for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
		if (seq(name, names[k].name)) {
			if (parseu(spec + i + 1, ~0ULL, &lims[nlims].v) < 0) return -1;
			lims[nlims].res = names[k].res;
			lims[nlims++].spec = spec;
			return 0;
		}
	}
	return -1;
}

/* ---- network mode allowlist: the relay (see netproxy.Relay) ---- */

static struct pollfd_ pfd[2 + MAXLISTEN]; /* the signalfd, the listeners, the pair's questions */
static u8 tags[2 + MAXLISTEN];
static int npfd;

/* sendfd sends one message of n bytes with fd attached (none when fd < 0) */
static long sendfd(int ch, const void *b, size_t n, int fd, int flags)
{
	struct iovec_ iov = {(void *)b, n};
	struct cmsg_fd c = {.len = sizeof(size_t) + 2 * sizeof(int) + sizeof(int), .level = SOL_SOCKET, .type = SCM_RIGHTS, .fd = fd};
	struct msghdr_ m = {.iov = &iov, .iovlen = 1, .control = fd >= 0 ? &c : 0, .controllen = fd >= 0 ? sizeof c : 0};
	long r;
	while ((r = sys3(NR_sendmsg, ch, &m, MSG_NOSIGNAL | flags)) == -EINTR) {}
	return r;
}

/* mint answers agentbox's 'S' (netproxy.AnswerSockets): a fresh TCP/IPv4
 * socket, which agentbox connects to a published port in the box, or 'S'
 * and the errno. Never blocks: an answer that does not fit is dropped, and
 * agentbox's wait for it times out. */
static void mint(int ch)
{
	int s = (int)sys3(NR_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	u8 a[2] = {'S', 0};
	if (s < 0) {
		a[1] = (u8)(-s > 255 ? EIO : -s);
		sendfd(ch, a, 2, -1, MSG_DONTWAIT);
		return;
	}
	sendfd(ch, a, 2, s, MSG_DONTWAIT);
	sys1(NR_close, s);
}

/* hostbind is the box's side of 'B' (netproxy.HostBind): the init may not
 * bind a port below the namespace's ip_unprivileged_port_start (it holds no
 * capability, as root neither), so agentbox binds s, unbound, to loopback
 * and port from the host, and listens. The answer comes within ten
 * seconds; questions for sockets that come first are answered meanwhile. */
static long hostbind(int ch, int s, int port)
{
	u8 q[3] = {'B', (u8)(port >> 8), (u8)port};
	long r = sendfd(ch, q, 3, s, 0);
	if (r < 0) return r;
	for (;;) {
		struct pollfd_ w = {ch, POLLIN, 0};
		struct { long s, ns; } ts = {10, 0};
		r = sys5(NR_ppoll, &w, 1, &ts, 0, 8);
		if (r == -EINTR) continue;
		if (r <= 0) return r == 0 ? -ETIMEDOUT : r;
		u8 a[8];
		long n = sys4(NR_recvfrom, ch, a, sizeof a, MSG_DONTWAIT);
		if (n == -EINTR || n == -EAGAIN) continue;
		if (n <= 0) return n == 0 ? -ECONNRESET : n;
		if (n == 1 && a[0] == 'S') {
			mint(ch);
			continue;
		}
		if (n != 2 || a[0] != 'B') return -EIO;
		return a[1] ? -(long)a[1] : 0;
	}
}

static int netfd_ = -1; /* the pair, for listen_on's hostbind */

static int listen_on(int family, int port, u8 tag, int optional)
{
	int s = (int)sys3(NR_socket, family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0) return optional ? 0 : s;
	int one = 1;
	sys5(NR_setsockopt, s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	long r;
	u16 nport = (u16)(((port & 0xff) << 8) | ((port >> 8) & 0xff));
	if (family == AF_INET) {
		struct sockaddr_in_ a = {.family = AF_INET, .port = nport, .addr = 0x0100007f};
		r = sys3(NR_bind, s, &a, sizeof a);
	} else {
		struct sockaddr_in6_ a = {.family = AF_INET6, .port = nport};
		a.addr[15] = 1;
		r = sys3(NR_bind, s, &a, sizeof a);
	}
	if (r == 0) {
		r = sys2(NR_listen, s, 4096);
	} else if (r == -EACCES) {
		r = hostbind(netfd_, s, port);
	}
	if (r < 0) {
		sys1(NR_close, s);
		return optional ? 0 : (int)r;
	}
	if (npfd == 1 + MAXLISTEN) return -EMFILE;
	pfd[npfd].fd = s;
	pfd[npfd].events = POLLIN;
	tags[npfd++] = tag;
	return 0;
}

/* hand one accepted connection to the proxy: one byte, the tag, with the
 * socket attached, and close it here. Never blocks: -EAGAIN when the
 * proxy's socket is full (the connection is kept, to send once it drains,
 * so a slow proxy cannot stop the init reaping and forwarding signals);
 * a gone proxy closes the connection unanswered (fails closed). */
static long handoff(int ch, int conn, u8 tag)
{
	long r = sendfd(ch, &tag, 1, conn, MSG_DONTWAIT);
	if (r == -EAGAIN) return r;
	sys1(NR_close, conn);
	return 0;
}

static int portof(const char *hostport)
{
	const char *p = 0;
	for (const char *s = hostport; *s; s++)
		if (*s == ':') p = s + 1;
	u64 v;
	if (!p || parseu(p, 65535, &v) < 0 || v == 0) return -1;
	return (int)v;
}

/* ---- closing descriptors ----
 *
 * closefds closes every descriptor from lo up but the keep ones: with
 * close_range, or where it is missing (before Linux 5.9) or refused (a
 * container's seccomp profile) one by one as /proc/self/fd lists them.
 * Negative when neither works: nothing inherited may reach CMD. */

static u8 dents[4096];

static long closefds(int lo, int keep1, int keep2, int keep3, int keep4)
{
	int keep[4] = {keep1, keep2, keep3, keep4};
	for (int a = 0; a < 4; a++) /* sorted */
		for (int b = a + 1; b < 4; b++)
			if (keep[b] < keep[a]) {
				int t = keep[a];
				keep[a] = keep[b], keep[b] = t;
			}
	long r = 0;
	unsigned from = (unsigned)lo;
	for (int k = 0; k < 4 && r == 0; k++) {
		if (keep[k] < (int)from) continue;
		if (keep[k] > (int)from) r = sys3(NR_close_range, from, (unsigned)keep[k] - 1, 0);
		from = (unsigned)keep[k] + 1;
	}
	if (r == 0) r = sys3(NR_close_range, from, ~0U, 0);
	if (r == 0) return 0;
	for (int closed = 1; closed;) {
		closed = 0;
		long dir = sys4(NR_openat, AT_FDCWD, "/proc/self/fd", O_DIRECTORY_ | O_CLOEXEC, 0);
		if (dir < 0) return dir;
		for (;;) {
			long n = sys3(NR_getdents64, dir, dents, sizeof dents);
			if (n <= 0) break;
			for (long off = 0; off < n;) {
				struct dirent64_ *d = (struct dirent64_ *)(dents + off);
				off += d->reclen;
				u64 fd;
				if (parseu(d->name, 1 << 30, &fd) < 0) continue;
				if ((long)fd < lo || (long)fd == dir || (int)fd == keep1 || (int)fd == keep2 || (int)fd == keep3 || (int)fd == keep4) continue;
				sys1(NR_close, fd);
				closed = 1;
			}
		}
		sys1(NR_close, dir);
	}
	return 0;
}

/* ---- the mount check (mount.Check, verifyMounts in check_linux.go) ----
 *
 * The check file (--check-fd) holds one record per mount that no later
 * mount covers, each ended by a NUL: kind, device, inode and path separated
 * by tabs. Each path must be reached without following a link, be the root
 * of a mount, and be the file agentbox opened (a bind: same device and
 * inode) or what bwrap makes (an empty read-only tmpfs folder or file). Any
 * difference and the box does not start. */

/* The check buffer's size: the one definition. agentbox reads it from this
 * program's .agentbox_limits section (package cinit, CheckMax) to decide
 * whether a box's checks fit, so the Go side never restates it. */
#define CHECK_MAX (4 << 20)
static char chk[CHECK_MAX];
__attribute__((used, retain, section(".agentbox_limits"))) static const unsigned long check_max = CHECK_MAX;

static const char *swapped = "a path was swapped while the box started (another box writing the same folders?); nothing ran";
static const char *symlinked = "a symbolic link is in the way (it appeared after the plan was made, or the path names one); agentbox does not follow it";

static __attribute__((noreturn)) void checkfail(const char *path, const char *why, const char *tail)
{
	struct msg m = {.n = 0};
	add(&m, "agentbox: error: init: ");
	add(&m, path);
	add(&m, ": ");
	add(&m, why);
	if (tail) {
		add(&m, ": ");
		add(&m, tail);
	}
	add(&m, "\n");
	sys3(NR_write, 2, m.b, m.n);
	quit(EXIT_FAILURE_);
}

/* statx of an open descriptor itself */
static long fdstat(int fd, struct statx_ *st)
{
	return sys5(NR_statx, fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_INO | STATX_SIZE, st);
}

/* For kernels without openat2 (before 5.6): one component at a time, each
 * opened with O_NOFOLLOW relative to the last and none a link. */
static long walknofollow(char *path)
{
	long cur = sys4(NR_openat, AT_FDCWD, "/", O_PATH_ | O_DIRECTORY_ | O_CLOEXEC, 0);
	if (cur < 0) return cur;
	char *p = path;
	for (;;) {
		while (*p == '/') p++;
		if (!*p) return cur;
		char *e = p;
		while (*e && *e != '/') e++;
		char c = *e;
		*e = 0;
		long next = sys4(NR_openat, cur, p, O_PATH_ | O_NOFOLLOW_ | O_CLOEXEC, 0);
		*e = c;
		sys1(NR_close, cur);
		if (next < 0) return next;
		p = e;
		while (*p == '/') p++;
		struct statx_ st;
		if (*p && (fdstat((int)next, &st) < 0 || (st.mode & S_IFMT) == S_IFLNK)) {
			/* a link before the last component (the last one is
			 * opened as the link itself, as the Go init does) */
			sys1(NR_close, next);
			return -ELOOP;
		}
		cur = next;
	}
}

static long opennofollow(char *path)
{
	struct open_how_ how = {.flags = O_PATH_ | O_NOFOLLOW_ | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS};
	long fd;
	for (;;) {
		fd = sys4(NR_openat2, AT_FDCWD, path, &how, sizeof how);
		if (fd == -EINTR || fd == -EAGAIN) continue; /* a rename raced the lookup */
		if (fd == -ENOSYS) fd = walknofollow(path);
		break;
	}
	/* O_PATH|O_NOFOLLOW opens a link at the end of the path as itself,
	 * without an error: refused like one on the way. */
	struct statx_ st;
	if (fd >= 0 && fdstat((int)fd, &st) == 0 && (st.mode & S_IFMT) == S_IFLNK) {
		sys1(NR_close, fd);
		return -ELOOP;
	}
	return fd;
}

static u64 mkdev(u64 major, u64 minor)
{
	return ((major & 0x00000fffULL) << 8) | ((major & 0xfffff000ULL) << 32) | (minor & 0x000000ffULL) |
	       ((minor & 0xffffff00ULL) << 12);
}

static void verifymount(const char *kind, u64 dev, u64 ino, char *path)
{
	char eb[32];
	long fd = opennofollow(path);
	if (seq(kind, "ro")) {
		/* a path bwrap makes read-only itself: missing is fine, there it
		 * must be on a read-only mount */
		if (fd == -ENOENT) return;
		if (fd == -ELOOP) checkfail(path, symlinked, 0);
		if (fd < 0) checkfail(path, errtext(-fd, eb), 0);
		struct statfs_ rfs;
		long rr = sys2(NR_fstatfs, fd, &rfs);
		sys1(NR_close, fd);
		if (rr < 0) checkfail(path, errtext(-rr, eb), 0);
		if (!(rfs.flags & ST_RDONLY)) checkfail(path, "writable in the box (bubblewrap did not make it read-only)", "nothing ran");
		return;
	}
	if (fd == -ELOOP) checkfail(path, symlinked, swapped);
	if (fd < 0) checkfail(path, errtext(-fd, eb), swapped);
	struct statx_ st;
	long r = fdstat((int)fd, &st);
	if (r < 0) checkfail(path, errtext(-r, eb), 0);
	if ((st.attributes_mask & STATX_ATTR_MOUNT_ROOT) && !(st.attributes & STATX_ATTR_MOUNT_ROOT))
		checkfail(path, "not mounted there", swapped);
	if (seq(kind, "bind") || seq(kind, "bind-ro")) {
		if (mkdev(st.dev_major, st.dev_minor) != dev || st.ino != ino)
			checkfail(path, "not the folder or file agentbox opened", swapped);
		if (seq(kind, "bind-ro")) {
			struct statfs_ rfs;
			long rr = sys2(NR_fstatfs, fd, &rfs);
			if (rr < 0) checkfail(path, errtext(-rr, eb), 0);
			if (!(rfs.flags & ST_RDONLY)) checkfail(path, "writable in the box (it must be read-only)", swapped);
		}
		sys1(NR_close, fd);
		return;
	}
	struct statfs_ fs;
	r = sys2(NR_fstatfs, fd, &fs);
	sys1(NR_close, fd);
	if (r < 0) checkfail(path, errtext(-r, eb), 0);
	if (fs.type != TMPFS_MAGIC) checkfail(path, "not the empty tmpfs agentbox put there", swapped);
	if (seq(kind, "hide-dir") && (!(fs.flags & ST_RDONLY) || (st.mode & S_IFMT) != S_IFDIR))
		checkfail(path, "not an empty read-only folder", swapped);
	if (seq(kind, "hide-file") && (!(fs.flags & ST_RDONLY) || (st.mode & S_IFMT) != S_IFREG || st.size != 0))
		checkfail(path, "not an empty read-only file", swapped);
}

static void badrecord(const char *rec)
{
	say("init: bad check record \"", rec, "\"", 0);
	quit(EXIT_FAILURE_);
}

/* readchecks reads the check file into chk (from its start, each time) and
 * returns its length. */
static long readchecks(int fd)
{
	char eb[32];
	long len = 0;
	for (;;) {
		long r = sys4(NR_pread64, fd, chk + len, sizeof chk - len, len);
		if (r == -EINTR) continue;
		if (r < 0) {
			say("init: reading the mount checks: ", errtext(-r, eb), 0, 0);
			quit(EXIT_FAILURE_);
		}
		if (r == 0) break;
		len += r;
		if (len == (long)sizeof chk) {
			say("init: the mount checks are too large", 0, 0, 0);
			quit(EXIT_FAILURE_);
		}
	}
	chk[len] = 0;
	return len;
}

/* eachcheck calls fn with each record of the check file: kind \t dev \t
 * ino \t path (the path may hold a tab itself). */
static void eachcheck(int fd, void (*fn)(const char *kind, u64 dev, u64 ino, char *path))
{
	long len = readchecks(fd);
	for (char *rec = chk, *next; rec < chk + len; rec = next) {
		next = rec + slen(rec) + 1; /* before the tabs below become NULs */
		if (!*rec) continue;
		char *f[4] = {rec, 0, 0, 0};
		char *p = rec;
		for (int k = 1; k < 4; k++) {
			while (*p && *p != '\t') p++;
			if (!*p) badrecord(rec);
			*p++ = 0;
			f[k] = p;
		}
		u64 dev, ino;
		if (parseu(f[1], ~0ULL, &dev) < 0 || parseu(f[2], ~0ULL, &ino) < 0) badrecord(f[0]);
		fn(f[0], dev, ino, f[3]);
	}
}

static int ismake(const char *kind)
{
	return seq(kind, "make-ro") || seq(kind, "make-pin") || seq(kind, "make-hide-dir") || seq(kind, "make-hide-file");
}

static void verifyone(const char *kind, u64 dev, u64 ino, char *path)
{
	if (!ismake(kind)) verifymount(kind, dev, ino, path); /* made, then checked by their own records */
}

static void verifymounts(int fd) { eachcheck(fd, verifyone); }

/* ---- the mounts the init makes in bwrap's place ----
 *
 * A mount bwrap would make costs it a read of the whole mount table;
 * agentbox leaves those that can come after all of bwrap's mounts to the
 * init (records make-*, in the plan's order; mount.InitMount):
 * - make-ro, a read-only bind of a path onto itself (a read-only path, a
 *   placeholder): the path, reached without following a link, must be the
 *   file or folder agentbox opened (its device and inode); the init clones
 *   it with what is mounted below it, makes the clone read-only, nosuid,
 *   nodev and private, and mounts it there, through the descriptor it
 *   checked;
 * - make-pin, a pinned folder (.git, .git/info: bound onto itself so that
 *   it cannot be renamed or removed) inside the project's writable bind:
 *   the same checks and clone, made nosuid, nodev and private, writable as
 *   the bind it is cloned from;
 * - make-hide-dir and make-hide-file, a hidden path (a deny path): a
 *   read-only, nosuid, nodev, private bind of an empty folder (0755) or an
 *   empty file (0600) of one tmpfs of the init's own, made at the first
 *   such record and never attached anywhere, mounted over the path reached
 *   without following a link, as bwrap's --tmpfs and --remount-ro, or
 *   --ro-bind-data of nothing, would.
 * Then the working folder is entered again: bwrap entered it before, and a
 * mount over it or above it would otherwise be behind CMD's back. */

static int made_;
static long hidefs_ = -1;
static __attribute__((noreturn)) void capfail(const char *what, long e);

/* hidetree returns a detached clone of the hidden paths' empty folder
 * (dir) or empty file, making their tmpfs first when there is none yet. */
static long hidetree(const char *path, int dir)
{
	char eb[32];
	if (hidefs_ < 0) {
		long fs = sys2(NR_fsopen, "tmpfs", FSOPEN_CLOEXEC);
		if (fs < 0) checkfail(path, "hiding it (fsopen)", errtext(-fs, eb));
		long r = sys5(NR_fsconfig, fs, FSCONFIG_CMD_CREATE, 0, 0, 0);
		if (r < 0) checkfail(path, "hiding it (fsconfig)", errtext(-r, eb));
		long m = sys3(NR_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
		sys1(NR_close, fs);
		if (m < 0) checkfail(path, "hiding it (fsmount)", errtext(-m, eb));
		r = sys3(NR_mkdirat, m, "d", 0755);
		if (r == 0) r = sys4(NR_fchmodat, m, "d", 0755, 0); /* whatever the umask */
		if (r < 0) checkfail(path, "hiding it (its empty folder)", errtext(-r, eb));
		long f = sys4(NR_openat, m, "f", O_WRONLY_ | O_CREAT_ | O_EXCL_ | O_CLOEXEC | O_NOFOLLOW_, 0600);
		if (f < 0) checkfail(path, "hiding it (its empty file)", errtext(-f, eb));
		sys1(NR_close, f);
		r = sys4(NR_fchmodat, m, "f", 0600, 0);
		if (r < 0) checkfail(path, "hiding it (its empty file)", errtext(-r, eb));
		hidefs_ = m;
	}
	return sys3(NR_open_tree, hidefs_, dir ? "d" : "f", OPEN_TREE_CLONE | O_CLOEXEC);
}

static void makemount(const char *kind, u64 dev, u64 ino, char *path)
{
	char eb[32];
	if (!ismake(kind)) return;
	int hide = seq(kind, "make-hide-dir") ? 1 : seq(kind, "make-hide-file") ? 2 : 0;
	long fd = opennofollow(path);
	if (fd == -ELOOP) checkfail(path, symlinked, swapped);
	if (fd < 0) checkfail(path, errtext(-fd, eb), swapped);
	long t;
	if (hide) {
		t = hidetree(path, hide == 1);
		if (t < 0) checkfail(path, "hiding it (open_tree)", errtext(-t, eb));
	} else {
		struct statx_ st;
		long r = fdstat((int)fd, &st);
		if (r < 0) checkfail(path, errtext(-r, eb), 0);
		if (mkdev(st.dev_major, st.dev_minor) != dev || st.ino != ino) checkfail(path, "not the folder or file agentbox opened", swapped);
		t = sys3(NR_open_tree, fd, "", OPEN_TREE_CLONE | O_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
		if (t < 0) checkfail(path, "binding it (open_tree)", errtext(-t, eb));
	}
	u64 set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
	if (!seq(kind, "make-pin")) set |= MOUNT_ATTR_RDONLY;
	struct mount_attr_ a = {set, 0, MS_PRIVATE, 0};
	long r = sys5(NR_mount_setattr, t, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof a);
	if (r < 0) checkfail(path, "binding it (mount_setattr)", errtext(-r, eb));
	r = sys5(NR_move_mount, t, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
	if (r < 0) checkfail(path, "binding it (move_mount)", errtext(-r, eb));
	sys1(NR_close, t);
	sys1(NR_close, fd);
	made_ = 1;
}

static void makemounts(int fd)
{
	char eb[32];
	eachcheck(fd, makemount);
	/* Only the read-only binds of the hidden paths' tmpfs stay. */
	if (hidefs_ >= 0) sys1(NR_close, hidefs_);
	hidefs_ = -1;
	if (!made_) return;
	long r = sys2(NR_getcwd, pathbuf, sizeof pathbuf);
	if (r < 0) capfail("the working folder, to enter it again over the init's binds", -r);
	/* A folder the box's root does not reach comes back as
	 * "(unreachable)/...": relative, it would be opened below the old
	 * working folder. */
	if (pathbuf[0] != '/') checkfail(pathbuf, "the working folder is not reachable from the box's root", swapped);
	long cwd = opennofollow(pathbuf);
	if (cwd == -ELOOP) checkfail(pathbuf, symlinked, swapped);
	if (cwd < 0) checkfail(pathbuf, errtext(-cwd, eb), swapped);
	r = sys1(NR_fchdir, cwd);
	if (r < 0) checkfail(pathbuf, errtext(-r, eb), 0);
	sys1(NR_close, cwd);
}

/* ---- the filesystem log (package fslog) ----
 *
 * armlog installs the log's seccomp filter, which the supervisor offered on
 * the log socket (one message: 'P' and the sock_filter array), on this
 * process, which then execs CMD, and hands its notification listener to the
 * supervisor ('N' with the descriptor) before closing both: nothing in the
 * box ever holds the listener. A filter that cannot be installed is the
 * supervisor's warning ('E' and why) and CMD runs without the log, as
 * confined as ever; a listener that cannot be handed over ends this process
 * with 125, since nobody would let the watched calls go on. It does what
 * fslog.Arm does in the Go init and child. */

static u8 logmsg[1 + 8 * 4096 + 1]; /* one more: a longer message is refused */
static u64 logprog[4096];

static void logfailed(int sock, const char *a, const char *b)
{
	struct msg m = {.n = 0};
	add(&m, "E");
	add(&m, a);
	if (b) add(&m, b);
	while (sys4(NR_sendto, sock, m.b, m.n, MSG_NOSIGNAL) == -EINTR) {}
}

static void armlog(int sock, const char *who, int must)
{
	char eb[32];
	long n;
	while ((n = sys4(NR_recvfrom, sock, logmsg, sizeof logmsg, MSG_DONTWAIT)) == -EINTR) {}
	/* 'S': the filter judges the box's connects (fslog.ErrRequired): CMD
	 * must not start without it; nor, with must (bwrap's init, whose
	 * filter always judges them), without any filter. */
	int required = must || (n > 0 && logmsg[0] == 'S');
	if (n == -ENOTSOCK || n == -EBADF) {
		if (required) {
			say(who, "the box's unix socket connects cannot be judged: no filter came from agentbox", 0, 0);
			quit(EXIT_FAILURE_);
		}
		return; /* no socket: nothing to tell (as fslog.Arm) */
	}
	if (n < 9 || (logmsg[0] != 'P' && logmsg[0] != 'S') || (n - 1) % 8 || n == (long)sizeof logmsg) {
		logfailed(sock, "the log's filter did not come from agentbox", 0);
		sys1(NR_close, sock);
		if (required) {
			say(who, "the box's unix socket connects cannot be judged: its filter did not come from agentbox", 0, 0);
			quit(EXIT_FAILURE_);
		}
		return;
	}
	memcpy(logprog, logmsg + 1, (size_t)(n - 1));
	struct sock_fprog_ prog = {(u16)((n - 1) / 8), logprog};
	/* WAIT_KILLABLE_RECV (5.19+), as fslog.Arm asks, else without */
	long lfd = sys3(NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &prog);
	if (lfd == -EINVAL) lfd = sys3(NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (lfd < 0) {
		logfailed(sock, "installing the log's seccomp filter: ", errtext(-lfd, eb));
		sys1(NR_close, sock);
		if (required) {
			say(who, "the box's unix socket connects cannot be judged: installing its seccomp filter: ", errtext(-lfd, eb), 0);
			quit(EXIT_FAILURE_);
		}
		return;
	}
	u8 tag = 'N';
	struct iovec_ iov = {&tag, 1};
	struct cmsg_fd c = {.len = sizeof(size_t) + 2 * sizeof(int) + sizeof(int), .level = SOL_SOCKET, .type = SCM_RIGHTS, .fd = (int)lfd};
	struct msghdr_ mh = {.iov = &iov, .iovlen = 1, .control = &c, .controllen = sizeof c};
	long r;
	while ((r = sys3(NR_sendmsg, sock, &mh, MSG_NOSIGNAL)) == -EINTR) {}
	sys1(NR_close, lfd);
	sys1(NR_close, sock);
	if (r < 0) {
		say(who, "the filesystem log's listener could not be handed to agentbox: ", errtext(-r, eb), 0);
		quit(EXIT_FAILURE_);
	}
}

/* ---- __landlock --ruleset-fd N --restrict-flags F --seccomp-fd M
 * [--drop-caps] [--rlimit NAME=VALUE]... -- CMD ARGS...: the Landlock run's
 * child (landlock.ChildMain is the Go one, which does the same in the same
 * order). agentbox built the rule set on descriptors and the seccomp filter;
 * this process looks CMD up, drops root's capabilities, sets no_new_privs,
 * restricts itself with both, sets the limits and becomes CMD. agentbox
 * itself is never restricted, and CMD is in a Landlock domain of its own. */

static u8 filter[64 << 10];

/* preloadpipe puts the preloaded log's pipe (fd) at PRELOAD_FD, not
 * closed on exec, for CMD and every program it starts
 * (plan.PreloadFD). Before the limits: a lower limit on open files keeps
 * the descriptor (only a new one must be below it); above the soft
 * limit, which the hard one allows, for the moment of the dup. A pipe
 * that cannot be put there costs the records only: said, and run. */
enum { PRELOAD_FD = 1021 };

static void preloadpipe(int fd)
{
	char eb[32];
	struct rlimit64 old, up;
	long r = sys4(NR_prlimit64, 0, RLIMIT_NOFILE, 0, &old);
	int raised = 0;
	if (r == 0 && old.cur < PRELOAD_FD + 1 && old.max >= PRELOAD_FD + 1) {
		up.cur = PRELOAD_FD + 1, up.max = old.max;
		raised = sys4(NR_prlimit64, 0, RLIMIT_NOFILE, &up, 0) == 0;
	}
	r = sys3(NR_dup3, fd, PRELOAD_FD, 0);
	if (raised) sys4(NR_prlimit64, 0, RLIMIT_NOFILE, &old, 0);
	if (r < 0) tell("agentbox: warning: ", "the filesystem log's pipe: ", errtext(-r, eb), "; this run's refusals are not recorded", 0);
	sys1(NR_close, fd);
}

static __attribute__((noreturn)) void landlock_exec(int argc, char **argv, char **envp)
{
	char eb[32];
	int rs = -1, sc = -1, logfd = -1, pipefd = -1, dropcaps = 0, i = 0;
	u64 flags = 0, n;
	for (; i < argc && !seq(argv[i], "--"); i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : 0;
		if (seq(argv[i], "--drop-caps")) {
			dropcaps = 1;
		} else if (v && seq(argv[i], "--ruleset-fd") && parseu(v, 1 << 30, &n) == 0) {
			rs = (int)n, i++;
		} else if (v && seq(argv[i], "--seccomp-fd") && parseu(v, 1 << 30, &n) == 0) {
			sc = (int)n, i++;
		} else if (v && seq(argv[i], "--log-fd") && parseu(v, 1 << 30, &n) == 0) {
			logfd = (int)n, i++;
		} else if (v && seq(argv[i], "--preload-fd") && parseu(v, 1 << 30, &n) == 0) {
			pipefd = (int)n, i++;
		} else if (v && seq(argv[i], "--restrict-flags") && parseu(v, 0xffffffffULL, &flags) == 0) {
			i++;
		} else if (v && seq(argv[i], "--rlimit")) {
			if (rlimit(v) < 0) {
				say("landlock: bad rlimit \"", v, "\"", 0);
				quit(EXIT_FAILURE_);
			}
			i++;
		} else {
			say("landlock: bad argument ", argv[i], 0, 0);
			quit(EXIT_FAILURE_);
		}
	}
	char **cmd = argv + (i < argc ? i + 1 : argc);
	if (rs < 0 || sc < 0 || !*cmd) {
		say("landlock: usage: __landlock --ruleset-fd N --seccomp-fd M -- CMD", 0, 0, 0);
		quit(EXIT_FAILURE_);
	}
	const char *path;
	int st = lookup(cmd[0], envp, &path);
	if (st) quit(st);
	long len = 0;
	for (;;) {
		long r = sys4(NR_pread64, sc, filter + len, sizeof filter - len, len);
		if (r == -EINTR) continue;
		if (r <= 0) break;
		len += r;
	}
	if (len <= 0 || len % 8 || len == (long)sizeof filter) {
		say("landlock: reading the seccomp filter failed", 0, 0, 0);
		quit(EXIT_FAILURE_);
	}
	if (dropcaps) {
		/* The bounding set first, so exec cannot hand root its
		 * capabilities back; without CAP_SETPCAP it cannot change and
		 * need not: no_new_privs below keeps exec within the emptied
		 * permitted set. */
		for (int c = 0; c < 64; c++) {
			long r = sys2(NR_prctl, PR_CAPBSET_DROP, c);
			if (r == -EPERM) break;
			if (r < 0 && r != -EINVAL) {
				say("landlock: dropping capabilities: ", errtext(-r, eb), 0, 0);
				quit(EXIT_FAILURE_);
			}
		}
		long r = sys2(NR_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL);
		if (r < 0 && r != -EINVAL) {
			say("landlock: clearing ambient capabilities: ", errtext(-r, eb), 0, 0);
			quit(EXIT_FAILURE_);
		}
		struct cap_header h = {CAP_V3, 0};
		struct cap_data d[2];
		memset(d, 0, sizeof d);
		r = sys2(NR_capset, &h, d);
		if (r < 0) {
			say("landlock: dropping capabilities: ", errtext(-r, eb), 0, 0);
			quit(EXIT_FAILURE_);
		}
	}
	long r = sys2(NR_prctl, PR_SET_NO_NEW_PRIVS, 1);
	if (r < 0) {
		say("landlock: setting no_new_privs: ", errtext(-r, eb), 0, 0);
		quit(EXIT_FAILURE_);
	}
	r = sys2(NR_landlock_restrict_self, rs, flags);
	if (r < 0) {
		say("landlock: landlock_restrict_self: ", errtext(-r, eb), 0, 0);
		quit(EXIT_FAILURE_);
	}
	struct sock_fprog_ prog = {(u16)(len / 8), filter};
	r = sys3(NR_prctl, PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
	if (r < 0) {
		say("landlock: installing the seccomp filter: ", errtext(-r, eb), 0, 0);
		quit(EXIT_FAILURE_);
	}
	if (logfd >= 0) armlog(logfd, "landlock: ", 0);
	if (pipefd >= 0) preloadpipe(pipefd);
	/* Last, as the Go child does. */
	for (int k = 0; k < nlims; k++) {
		struct rlimit64 rl = {lims[k].v, lims[k].v};
		r = sys4(NR_prlimit64, 0, lims[k].res, &rl, 0);
		if (r < 0) {
			say("landlock: setting limit ", lims[k].spec, ": ", errtext(-r, eb));
			quit(EXIT_FAILURE_);
		}
	}
	/* CMD inherits stdin, stdout and stderr only: not this program, the
	 * rule set or the filter. */
	r = closefds(3, pipefd >= 0 ? PRELOAD_FD : -1, -1, -1, -1);
	if (r < 0) {
		say("landlock: closing descriptors: ", errtext(-r, eb), 0, 0);
		quit(EXIT_FAILURE_);
	}
	r = sys3(NR_execve, path, cmd, envp);
	if (r == -ENOENT)
		say(cmd[0], ": cannot execute: its interpreter (#! line) or loader is missing", 0, 0);
	else
		say(cmd[0], ": cannot execute: ", errtext(-r, eb), 0);
	quit(EXIT_CANNOT_EXECUTE);
}

/* ---- --scope-abstract-unix: CMD and everything it starts may not connect
 * to an abstract unix socket made outside it (Landlock's scope, ABI 6). In
 * network mode "open" the box shares the host's network namespace, and with
 * it the host's abstract sockets (an X server, a session bus, containerd's
 * shims); the other modes have a namespace of their own. A domain that
 * handles no file or network right changes nothing else. bwrap has set
 * no_new_privs. */

struct landlock_attr_ {
	u64 handled_fs, handled_net, scoped;
};

static long scopeabstract(void)
{
	struct landlock_attr_ a = {0, 0, 1 /* LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET */};
	long rs = sys3(NR_landlock_create_ruleset, &a, sizeof a, 0);
	if (rs < 0) return rs;
	long r = sys2(NR_landlock_restrict_self, rs, 0);
	sys1(NR_close, rs);
	return r;
}

/* ---- the box's mounts made private, and every capability dropped ----
 *
 * bwrap makes the box's mount namespace a slave of the host's, so a mount
 * the host makes later under a path the box sees read-only (a USB disk, an
 * sshfs or FUSE mount, an automount the box itself triggers) would reach
 * the box writable: bwrap's read-only flags only cover the mounts it saw.
 * With --private-mounts (a run that is not root: bwrap creates a user
 * namespace and leaves CAP_SYS_ADMIN and CAP_SETPCAP of that namespace to
 * the init alone) the init first moves to a copy of the box's mount
 * namespace that its own user namespace owns and makes every mount there
 * private, so
 * nothing made on the host reaches it any more. Then, always, it drops
 * every capability (the bounding set, ambient, inheritable, permitted,
 * effective) and reads them back: CMD starts only with none left. A root
 * run's namespace is made private by agentbox before bwrap starts. */

static __attribute__((noreturn)) void capfail(const char *what, long e)
{
	char eb[32];
	say("init: ", what, e ? ": " : "", e ? errtext(e, eb) : "");
	quit(EXIT_FAILURE_);
}

static void privatize(int private_mounts, int checkfd)
{
	if (private_mounts) {
		/* bwrap's last step is a user namespace of its own for CMD's
		 * user, which does not own the box's mount namespace: a copy
		 * of it that this namespace owns, then every mount private. */
		long r = sys1(NR_unshare, CLONE_NEWNS);
		if (r < 0) capfail("a mount namespace of the box's own (so no host mount reaches the box)", -r);
		r = sys5(NR_mount, 0, (long)"/", 0, MS_REC | MS_PRIVATE, 0);
		if (r < 0) capfail("making the box's mounts private (so no host mount reaches the box)", -r);
	}
	/* The binds left to the init, with the capability to make them. */
	if (checkfd >= 0) makemounts(checkfd);
	for (int c = 0; c < 64; c++) {
		long r = sys2(NR_prctl, PR_CAPBSET_READ, c);
		if (r == -EINVAL) break;
		if (r < 0) capfail("reading the capability bounding set", -r);
		if (r == 1 && (r = sys2(NR_prctl, PR_CAPBSET_DROP, c)) < 0) capfail("dropping the capability bounding set", -r);
	}
	long r = sys5(NR_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (r < 0 && r != -EINVAL) capfail("clearing the ambient capabilities", -r);
	struct cap_header h = {CAP_V3, 0};
	struct cap_data d[2];
	memset(d, 0, sizeof d);
	r = sys2(NR_capset, &h, d);
	if (r < 0) capfail("dropping capabilities", -r);
	/* Read back: anything left and CMD does not start. */
	memset(d, 0xff, sizeof d);
	r = sys2(NR_capget, &h, d);
	if (r < 0) capfail("reading capabilities", -r);
	for (int k = 0; k < 2; k++)
		if (d[k].effective | d[k].permitted | d[k].inheritable) capfail("a capability is left after dropping them all", 0);
	for (int c = 0; c < 64; c++) {
		r = sys2(NR_prctl, PR_CAPBSET_READ, c);
		if (r == -EINVAL) break;
		if (r != 0) capfail("a capability is left in the bounding set", r < 0 ? -r : 0);
		r = sys5(NR_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c, 0, 0);
		if (r != 0 && r != -EINVAL) capfail("an ambient capability is left", r < 0 ? -r : 0);
	}
}

/* ---- main ---- */

__attribute__((used, noreturn)) void cmain(long *sp)
{
	int argc = (int)sp[0];
	char **argv = (char **)(sp + 1);
	char **envp = argv + argc + 1;
	int readyfd = -1, checkfd = -1, logfd = -1, pipefd = -1, fg = 0, netfd = -1, netport = 0, npub = 0, scope = 0, i = 1;
	const char *fwd[MAXFORWARD];
	int nfwd = 0;
	char eb[32];

	if (argc > 1 && seq(argv[1], "__landlock")) landlock_exec(argc - 2, argv + 2, envp);

	/* Before anything else: no host mount reaches the box from here on,
	 * and the init holds no capability. */
	int privmounts = 0, checkfd0 = -1;
	for (int k = 1; k < argc && !seq(argv[k], "--"); k++) {
		u64 n;
		if (seq(argv[k], "--private-mounts")) privmounts = 1;
		if (seq(argv[k], "--check-fd") && k + 1 < argc && parseu(argv[k + 1], 1 << 30, &n) == 0) checkfd0 = (int)n;
	}
	privatize(privmounts, checkfd0);

	/* No /proc/1/mem, /proc/1/fd or ptrace of the init for the box's
	 * processes: they could otherwise change what the init does (it holds
	 * no limits) or reach the descriptors it holds. */
	sys2(NR_prctl, PR_SET_DUMPABLE, 0);

	/* Block what is forwarded, SIGCHLD (read through the signalfd) and
	 * SIGTTOU/SIGTTIN (the child takes the terminal with them blocked)
	 * from the start, so nothing sent before CMD exists is lost. */
	u64 set = SIGBIT(SIGINT) | SIGBIT(SIGTERM) | SIGBIT(SIGHUP) | SIGBIT(SIGQUIT) | SIGBIT(SIGWINCH) |
		  SIGBIT(SIGUSR1) | SIGBIT(SIGUSR2) | SIGBIT(SIGCHLD) | SIGBIT(SIGTTOU) | SIGBIT(SIGTTIN);
	u64 old = 0;
	sys4(NR_rt_sigprocmask, SIG_BLOCK, &set, &old, 8);
	u64 fwdset = set & ~(SIGBIT(SIGTTOU) | SIGBIT(SIGTTIN));

	if (i < argc && seq(argv[i], "__init")) i++;
	for (; i < argc && !seq(argv[i], "--"); i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : 0;
		u64 n;
		if (seq(a, "--foreground")) {
			fg = 1;
		} else if (seq(a, "--scope-abstract-unix")) {
			scope = 1;
		} else if (seq(a, "--private-mounts")) {
			/* done above */
		} else if (v && seq(a, "--ready-fd")) {
			readyfd = parseu(v, 1 << 30, &n) < 0 ? -1 : (int)n;
			i++;
		} else if (v && seq(a, "--check-fd")) {
			checkfd = parseu(v, 1 << 30, &n) < 0 ? -1 : (int)n;
			i++;
		} else if (v && seq(a, "--log-fd")) {
			logfd = parseu(v, 1 << 30, &n) < 0 ? -1 : (int)n;
			i++;
		} else if (v && seq(a, "--preload-fd")) {
			pipefd = parseu(v, 1 << 30, &n) < 0 ? -1 : (int)n;
			i++;
		} else if (seq(a, "--log-reads")) {
			/* the filter offered on the log socket says it already */
		} else if (v && seq(a, "--net-fd")) {
			netfd = parseu(v, 1 << 30, &n) < 0 ? -1 : (int)n;
			i++;
		} else if (v && seq(a, "--net-port")) {
			netport = parseu(v, 65535, &n) < 0 ? 0 : (int)n;
			i++;
		} else if (v && seq(a, "--publish")) {
			/* the ports are agentbox's to connect to; the init only
			 * answers its questions for sockets when there are any */
			npub++;
			i++;
		} else if (v && seq(a, "--forward")) {
			if (nfwd == MAXFORWARD) {
				say("init: network: bad --forward \"", v, "\"", 0);
				quit(EXIT_FAILURE_);
			}
			fwd[nfwd++] = v;
			i++;
		} else if (v && seq(a, "--rlimit")) {
			if (rlimit(v) < 0) {
				say("init: bad rlimit \"", v, "\"", 0);
				quit(EXIT_FAILURE_);
			}
			i++;
		}
	}
	char **cmd = argv + (i < argc ? i + 1 : argc);

	/* Before the ready byte: a box that is not as planned failed to
	 * start. */
	if (checkfd >= 0) verifymounts(checkfd);

	/* Close everything inherited but the two descriptors still needed
	 * (bwrap's info pipe, agentbox's files, anything agentbox's caller
	 * leaked): nothing reaches CMD, nothing stays reachable in the init. */
	long cr = closefds(3, readyfd, netfd, logfd, pipefd);
	if (cr < 0) {
		say("init: closing inherited descriptors: ", errtext(-cr, eb), 0, 0);
		quit(EXIT_FAILURE_);
	}
	/* The preloaded log's pipe at PRELOAD_FD for CMD: a box whose connects
	 * agentbox judges may not make the datagram socket the library would
	 * send on otherwise. */
	if (pipefd >= 0) preloadpipe(pipefd);
	if (netfd >= 0) sys3(NR_fcntl, netfd, F_SETFD, FD_CLOEXEC);
	if (logfd >= 0) sys3(NR_fcntl, logfd, F_SETFD, FD_CLOEXEC);

	int sfd = (int)sys4(NR_signalfd4, -1, &fwdset, 8, O_CLOEXEC);
	if (sfd < 0) {
		say("init: signalfd: ", errtext(-sfd, eb), 0, 0);
		quit(EXIT_FAILURE_);
	}
	pfd[0].fd = sfd;
	pfd[0].events = POLLIN;
	npfd = 1;

	if (netfd >= 0) {
		/* Before the ready byte: a box whose network cannot be set up
		 * fails to start, as one whose mounts cannot. */
		int dom = 0, typ = 0, l = sizeof dom;
		long r1 = sys5(NR_getsockopt, netfd, SOL_SOCKET, SO_DOMAIN, &dom, &l);
		l = sizeof typ;
		long r2 = sys5(NR_getsockopt, netfd, SOL_SOCKET, SO_TYPE, &typ, &l);
		if (r1 < 0 || r2 < 0 || dom != AF_UNIX || typ != SOCK_SEQPACKET) {
			struct msg m = {.n = 0};
			add(&m, "agentbox: error: init: network: fd ");
			addnum(&m, netfd);
			add(&m, " is not the proxy's socket (want a unix packet socket)\n");
			sys3(NR_write, 2, m.b, m.n);
			quit(EXIT_FAILURE_);
		}
		netfd_ = netfd;
		long r = netport ? listen_on(AF_INET, netport, 0, 0) : 0;
		for (int k = 0; r == 0 && k < nfwd; k++) {
			int p = portof(fwd[k]);
			if (p < 0) {
				say("init: network: bad --forward \"", fwd[k], "\"", 0);
				quit(EXIT_FAILURE_);
			}
			r = listen_on(AF_INET, p, (u8)(k + 1), 0);
			/* localhost is also ::1, which programs may try first; the
			 * box's loopback may have no IPv6, so this one is optional */
			if (r == 0) r = listen_on(AF_INET6, p, (u8)(k + 1), 1);
		}
		if (r < 0) {
			say("init: network: listening in the box: ", errtext(-r, eb), 0, 0);
			quit(EXIT_FAILURE_);
		}
	}
	/* agentbox's questions for sockets (published ports) come on the pair */
	int qidx = -1;
	if (netfd >= 0 && npub > 0) {
		qidx = npfd++;
		pfd[qidx].fd = netfd;
		pfd[qidx].events = POLLIN;
	}
	if (readyfd >= 0) {
		sys3(NR_write, readyfd, "R", 1);
		sys1(NR_close, readyfd);
	}
	/* CMD inherits only stdin, stdout and stderr: every descriptor the
	 * init holds now is its own, close-on-exec. */
	if (!*cmd) {
		say("init: no command", 0, 0, 0);
		quit(EXIT_FAILURE_);
	}
	const char *path;
	int st = lookup(cmd[0], envp, &path);
	if (st) quit(st);

	long child = sys5(NR_clone, SIGCHLD, 0, 0, 0, 0);
	if (child == 0) {
		/* CMD: its own process group always, so the host can signal it
		 * alone; the terminal's foreground when agentbox had it (SIGTTOU
		 * is blocked here, so taking it cannot stop us; a terminal that
		 * refuses leaves CMD in the background, as the Go init does). */
		sys2(NR_setpgid, 0, 0);
		if (fg) {
			int me = (int)sys0(NR_getpid);
			sys3(NR_ioctl, 0, TIOCSPGRP, &me);
		}
		if (scope) {
			long r = scopeabstract();
			if (r < 0) {
				say("init: landlock: keeping the host's abstract unix sockets from the box: ", errtext(-r, eb), 0, 0);
				quit(EXIT_FAILURE_);
			}
		}
		/* The log's filter is CMD's and everything it starts (before
		 * the limits, which could leave no room for its listener). */
		if (logfd >= 0) armlog(logfd, "init: ", 1);
		/* The limits are CMD's and everything it starts, never the
		 * init's: set here, in the child, right before the exec. */
		for (int k = 0; k < nlims; k++) {
			struct rlimit64 rl = {lims[k].v, lims[k].v};
			long r = sys4(NR_prlimit64, 0, lims[k].res, &rl, 0);
			if (r < 0) {
				say("limits: ", lims[k].spec, ": ", errtext(-r, eb));
				quit(EXIT_FAILURE_);
			}
		}
		sys4(NR_rt_sigprocmask, SIG_SETMASK, &old, 0, 8);
		long r = sys3(NR_execve, path, cmd, envp);
		if (r == -ENOENT) {
			/* the file is there (the lookup found it): what is missing
			 * is its interpreter (#!) or its loader */
			say(cmd[0], ": cannot execute: its interpreter (#! line) or loader is missing", 0, 0);
		} else {
			say(cmd[0], ": cannot execute: ", errtext(-r, eb), 0);
		}
		quit(EXIT_CANNOT_EXECUTE);
	}
	if (child < 0) {
		say(cmd[0], ": cannot execute: ", errtext(-child, eb), 0);
		quit(EXIT_CANNOT_EXECUTE);
	}
	sys2(NR_setpgid, child, child); /* also here: no race with a signal to the group */
	if (logfd >= 0) sys1(NR_close, logfd); /* the child's alone */

	int backoff = 0, pending = -1;
	u8 ptag = 0;
	for (;;) {
		/* Signals always; then either the listeners, or, while a
		 * connection waits for room on the proxy's socket, that socket. */
		struct pollfd_ out[2] = {{sfd, POLLIN, 0}, {netfd, POLLOUT, 0}};
		struct pollfd_ *set = pfd;
		int n = npfd;
		if (pending >= 0) {
			set = out, n = 2;
		} else if (backoff) {
			n = 1;
		}
		struct { long s, ns; } ts = {0, 5000000};
		long r = sys5(NR_ppoll, set, n, backoff ? &ts : 0, 0, 8);
		backoff = 0;
		if (r < 0) continue; /* EINTR */
		if (set[0].revents) {
			struct signalfd_siginfo si;
			if (sys3(NR_read, sfd, &si, sizeof si) == sizeof si) {
				if (si.signo != SIGCHLD) {
					sys2(NR_kill, child, si.signo);
					continue;
				}
				/* Reap everything; CMD's end is the box's end. */
				for (;;) {
					int ws = 0;
					long pid = sys4(NR_wait4, -1, &ws, WNOHANG | WUNTRACED, 0);
					if (pid <= 0) break;
					if (pid != child) continue;
					if ((ws & 0xff) == 0x7f) {
						/* stopped: nothing outside the box can resume
						 * it, so a stop would hang the terminal */
						sys2(NR_kill, child, SIGCONT);
					} else if ((ws & 0x7f) == 0) {
						quit((ws >> 8) & 0xff);
					} else {
						quit(128 + (ws & 0x7f));
					}
				}
			}
		}
		if (pending >= 0) {
			if (out[1].revents && handoff(netfd, pending, ptag) == 0) pending = -1;
			continue;
		}
		if (qidx > 0 && pfd[qidx].revents) {
			u8 q[8];
			long n = sys4(NR_recvfrom, netfd, q, sizeof q, MSG_DONTWAIT);
			if (n == 1 && q[0] == 'S') {
				mint(netfd);
			} else if (n == 0 || (n < 0 && n != -EAGAIN && n != -EINTR)) {
				pfd[qidx].fd = -1; /* agentbox is gone: no more questions */
			}
		}
		for (int k = 1; k < npfd && pending < 0; k++) {
			if (k == qidx || !pfd[k].revents) continue;
			for (;;) {
				long c = sys4(NR_accept4, pfd[k].fd, 0, 0, SOCK_CLOEXEC);
				if (c >= 0) {
					if (handoff(netfd, (int)c, tags[k]) == -EAGAIN) {
						pending = (int)c, ptag = tags[k];
						break;
					}
					continue;
				}
				if (c == -EMFILE || c == -ENFILE || c == -ENOBUFS || c == -ENOMEM) backoff = 1;
				break;
			}
		}
	}
}
