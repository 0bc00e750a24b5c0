#!/usr/bin/env bash
# What the filesystem refusal log costs, measured side by side on this
# machine: one line per goal with PASS or MISS. The log is on by default
# (the preloaded library, [log] filesystem = true); each goal compares it
# with the same run without it ([log] filesystem = false):
#
#   launch    agentbox run -- /bin/true, under bwrap and under Landlock  <= 1.02
#   git       git status in a repository of 5,000 files, boxed             <= 1.02
#   compile   python3 -m compileall -f of 400 modules of Python's library  <= 1.02
#   npm       npm ci of a real lock file (express, lodash, axios,
#             typescript, eslint, prettier, webpack: about 280 packages,
#             7,700 files), from a warm npm cache                          <= 1.02
#   go        go build of a real module (go-containerregistry's crane) from
#             a build cache holding only the standard library              <= 1.02
#
# and for information: the complete mode ([log] filesystem = "complete",
# seccomp notification) against no log (launch, npm ci), and what 100,000
# refused calls, and 100,000 calls that succeed, cost a program with each.
#
#   scripts/bench-fslog.sh [rounds] [work-rounds]     (defaults 60 and 11)
#
# BENCH_GO=0 leaves the go build out (it takes minutes a round); work-rounds
# 0 leaves both builds out. CPU is the ratio of the CPU time agentbox and
# everything it started used (less moved by other load than wall time).
#
# Every round runs every command of its group once, in a new random order,
# each started directly (no shell) with its output on /dev/null; a goal's
# ratio is the median over rounds of that round's ratio (with the 10th and
# 90th percentiles), so load that comes and goes on a shared machine falls
# on both sides of a pair alike. "rounds" is for the quick goals (launch,
# git, compile), "work-rounds" for the builds (npm, go), which take
# seconds to minutes each. The npm registry and the Go module proxy must be
# reachable once, to set up the projects; they are kept in BENCH_DIR
# (default /var/tmp/agentbox-bench-fslog) for the next run. A report, not a
# test: it exits 0 whatever the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
rounds=${1:-60}
work_rounds=${2:-11}
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
for tool in bwrap git npm go gcc; do
	command -v "$tool" >/dev/null || { echo "bench-fslog: $tool is needed; nothing measured" >&2; exit 0; }
done

work=${BENCH_DIR:-/var/tmp/agentbox-bench-fslog}
mkdir -p "$work"
CGO_ENABLED=0 go build -tags urfave_cli_no_docs -trimpath -o "$work/agentbox" .
ab="$work/agentbox"
mkdir -p "$work/home"
export HOME="$work/home"
unset XDG_CONFIG_HOME XDG_STATE_HOME XDG_CACHE_HOME XDG_DATA_HOME
printf 'version = 1\n[log]\nfilesystem = false\n' >"$work/nolog.toml"
printf 'version = 1\n[log]\nfilesystem = "complete"\n' >"$work/complete.toml"

# A git repository of 5,000 files in 50 folders.
if [ ! -d "$work/repo/.git" ]; then
	rm -rf "$work/repo"
	"$py" - "$work/repo" <<'PY'
import os, sys
root = sys.argv[1]
for d in range(50):
    os.makedirs(f"{root}/d{d:02}")
    for f in range(100):
        with open(f"{root}/d{d:02}/f{f:03}.txt", "w") as fh:
            fh.write(f"{d} {f}\n")
PY
	(cd "$work/repo" && git init -q && git add -A && git -c user.name=b -c user.email=b@example.invalid commit -qm init)
fi

# 400 modules of Python's own library, compiled again each time (-f).
if [ ! -d "$work/pylib" ]; then
	lib=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
	mkdir -p "$work/pylib"
	(cd "$lib" && find . -name '*.py' -not -path '*/test*' -not -path '*/site-packages/*' | sort | head -400 |
		while read -r f; do mkdir -p "$work/pylib/$(dirname "$f")" && cp "$f" "$work/pylib/$f"; done)
fi

# The npm project: a lock file and a warm npm cache, once.
if [ ! -f "$work/npm/package-lock.json" ]; then
	mkdir -p "$work/npm"
	cat >"$work/npm/package.json" <<'JSON'
{
  "name": "bench-project", "version": "1.0.0", "private": true,
  "dependencies": {"express": "4.19.2", "lodash": "4.17.21", "axios": "1.7.2"},
  "devDependencies": {"typescript": "5.5.3", "eslint": "8.57.0", "prettier": "3.3.2", "webpack": "5.92.1", "webpack-cli": "5.1.4"}
}
JSON
	(cd "$work/npm" && npm install --no-audit --no-fund --cache "$work/npm-cache" >/dev/null)
fi

# The Go module: its dependencies from the proxy once, a build cache with
# the standard library only.
export GOMODCACHE="$work/gomod" GOFLAGS=-mod=mod
if [ ! -d "$work/crane" ]; then
	GOPROXY=${GOPROXY:-https://proxy.golang.org} go mod download github.com/google/go-containerregistry@v0.21.7 >/dev/null 2>&1
	cp -r "$GOMODCACHE/github.com/google/go-containerregistry@v0.21.7" "$work/crane"
	chmod -R u+w "$work/crane"
	(cd "$work/crane" && go mod download)
fi
if [ ! -d "$work/gocache-std" ]; then
	GOCACHE="$work/gocache-std" go build std
fi

# A flood: 100,000 refused creates of distinct files, or (with a second
# argument) 100,000 opens for writing of one file that succeed (for
# information: what each call costs with each mode).
cat >"$work/flood.c" <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
	char p[4096];
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < 100000; i++) {
		if (argc > 2)
			snprintf(p, sizeof p, "%s/ok", argv[1]);
		else
			snprintf(p, sizeof p, "%s/f%d", argv[1], i);
		int fd = open(p, O_WRONLY | O_CREAT, 0644);
		if (fd >= 0) close(fd);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%ld\n", (b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000);
	return 0;
}
C
gcc -O2 -o "$work/repo/flood" "$work/flood.c"
mkdir -p "$work/home/ro"

cd "$work/repo"
# agentbox's own folders, the probe cache and the search index, once.
"$ab" run -- /bin/true >/dev/null 2>&1 || true
"$ab" run --backend landlock -- /bin/true >/dev/null 2>&1 || true

"$py" - "$rounds" "$work_rounds" "$ab" "$work" "$py" <<'PY'
import os, random, resource, shutil, statistics, subprocess, sys, time

rounds, work_rounds, ab, work, py = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
nolog, complete = ["--policy", f"{work}/nolog.toml"], ["--policy", f"{work}/complete.toml"]
devnull = os.open(os.devnull, os.O_RDWR)

def once(argv, cwd, before=None):
    """Runs argv in cwd; returns (wall s, CPU s of it and its children, exit status)."""
    if before:
        before()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.Popen(argv, cwd=cwd, stdin=devnull, stdout=devnull, stderr=devnull)
    code = p.wait()
    dt = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return dt, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), code

def measure(cmds, n, warm):
    """Every round runs every command once, in random order."""
    times = {k: [] for k in cmds}
    cpu = {k: [] for k in cmds}
    failed = {}
    names = list(cmds)
    for r in range(n + warm):
        random.shuffle(names)
        for k in names:
            argv, cwd, before = cmds[k]
            dt, c, code = once(argv, cwd, before)
            if code != 0:
                failed.setdefault(k, code)
            if r >= warm:
                times[k].append(dt)
                cpu[k].append(c)
    return times, cpu, failed

def ratio(a, b):
    rs = sorted(x / y for x, y in zip(a, b))
    return statistics.median(rs), rs[len(rs) // 10], rs[(len(rs) * 9) // 10]

def line(what, t, k, base, target, failed, cpu=None, unit=1000, u="ms"):
    if k in failed or base in failed:
        bad = k if k in failed else base
        print(f"{what:<52} MISS (exited {failed[bad]})")
        return
    r, p10, p90 = ratio(t[k], t[base])
    verdict = "" if target is None else ("PASS" if r <= target else "MISS")
    tgt = "" if target is None else f"<={target}"
    extra = ""
    if cpu is not None:
        cr, _, _ = ratio(cpu[k], cpu[base])
        extra = f"  CPU {cr:5.3f}"
    print(f"{what:<52} {statistics.median(t[k]) * unit:8.1f} {statistics.median(t[base]) * unit:8.1f} {u:<2} "
          f"{r:6.3f} {p10:5.3f}-{p90:<5.3f} {tgt:>6} {verdict}{extra}")

repo, pylib = f"{work}/repo", f"{work}/pylib"
# The quick goals.
quick = {
    "run": ([ab, "run", "--", "/bin/true"], repo, None),
    "run-off": ([ab, "run", *nolog, "--", "/bin/true"], repo, None),
    "run-complete": ([ab, "run", *complete, "--", "/bin/true"], repo, None),
    "ll": ([ab, "run", "--backend", "landlock", "--", "/bin/true"], repo, None),
    "ll-off": ([ab, "run", "--backend", "landlock", *nolog, "--", "/bin/true"], repo, None),
    "ll-complete": ([ab, "run", "--backend", "landlock", *complete, "--", "/bin/true"], repo, None),
    "git": ([ab, "run", "--", "git", "status"], repo, None),
    "git-off": ([ab, "run", *nolog, "--", "git", "status"], repo, None),
    "compile": ([ab, "run", "--", py, "-m", "compileall", "-q", "-f", "."], pylib, None),
    "compile-off": ([ab, "run", *nolog, "--", py, "-m", "compileall", "-q", "-f", "."], pylib, None),
}
start = time.monotonic()
t, cpu, failed = measure(quick, rounds, 3)
print(f"the filesystem log's cost: {rounds} rounds of the quick goals, {time.monotonic() - start:.0f} s; "
      f"ratio = median of per-round ratios (p10-p90), with the log / without")
print(f"{'goal':<52} {'with':>8} {'without':>8}    {'ratio':>6} {'p10-p90':>11} {'target':>6}")
line("launch: agentbox run -- /bin/true (bwrap)", t, "run", "run-off", 1.02, failed, cpu)
line("launch: agentbox run -- /bin/true (landlock)", t, "ll", "ll-off", 1.02, failed, cpu)
line("git status, 5,000 files, boxed (bwrap)", t, "git", "git-off", 1.02, failed, cpu)
line("python3 -m compileall -f, 400 modules (bwrap)", t, "compile", "compile-off", 1.02, failed, cpu)
line("(info) complete mode: launch (bwrap)", t, "run-complete", "run-off", None, failed, cpu)
line("(info) complete mode: launch (landlock)", t, "ll-complete", "ll-off", None, failed, cpu)

# The builds.
npm = f"{work}/npm"
def fresh_gocache():
    shutil.rmtree(f"{work}/gocache", ignore_errors=True)
    shutil.copytree(f"{work}/gocache-std", f"{work}/gocache")
gobuild = ["--writable", f"{work}/gocache", "--", "env", f"GOCACHE={work}/gocache", f"GOMODCACHE={work}/gomod",
           "GOFLAGS=-mod=mod", "GOPROXY=off", "go", "build", "-o", "/dev/null", "./cmd/crane"]
npmci = ["--writable", f"{work}/npm-cache", "--", "npm", "ci", "--no-audit", "--no-fund", "--prefer-offline",
         "--cache", f"{work}/npm-cache"]
builds = {
    "npm": ([ab, "run", *npmci], npm, None),
    "npm-off": ([ab, "run", *nolog, *npmci], npm, None),
    "npm-complete": ([ab, "run", *complete, *npmci], npm, None),
}
if os.environ.get("BENCH_GO", "1") != "0":
    builds["go"] = ([ab, "run", *gobuild], f"{work}/crane", fresh_gocache)
    builds["go-off"] = ([ab, "run", *nolog, *gobuild], f"{work}/crane", fresh_gocache)
start = time.monotonic()
t, cpu, failed = measure(builds, work_rounds, 1) if work_rounds else ({}, {}, {})
print(f"builds: {work_rounds} rounds, {time.monotonic() - start:.0f} s")
if not work_rounds:
    print(f"{'npm ci and go build (bwrap)':<52} not measured (work-rounds 0)")
else:
    line("npm ci, 280 packages (bwrap)", t, "npm", "npm-off", 1.02, failed, cpu, 1, "s")
    if "go" in builds:
        line("go build ./cmd/crane, std-only cache (bwrap)", t, "go", "go-off", 1.02, failed, cpu, 1, "s")
    else:
        print(f"{'go build ./cmd/crane, std-only cache (bwrap)':<52} not measured (BENCH_GO=0)")
    line("(info) complete mode: npm ci (bwrap)", t, "npm-complete", "npm-off", None, failed, cpu, 1, "s")

# A flood of refusals (for information): what each refused call costs a
# program, with the preloaded log (rate-limited), the complete mode, none.
for what, target in (("refused creates", [f"{work}/home/ro"]), ("opens for writing that succeed", [repo, "ok"])):
    flood = {}
    for name, extra in (("preload", []), ("complete", complete), ("off", nolog)):
        flood[name] = []
    for _ in range(5):
        for name, extra in random.sample([("preload", []), ("complete", complete), ("off", nolog)], 3):
            out = subprocess.run([ab, "run", *extra, "--", f"{repo}/flood", *target], cwd=repo,
                                 capture_output=True, text=True)
            flood[name].append(int(out.stdout.strip() or 0))
    m = {k: statistics.median(v) for k, v in flood.items()}
    print(f"(info) 100,000 {what} in one program: {m['preload'] / 1e6:.2f} s with the preloaded log, "
          f"{m['complete'] / 1e6:.2f} s complete mode, {m['off'] / 1e6:.2f} s without "
          f"({(m['preload'] - m['off']) / 1e5:+.2f} µs and {(m['complete'] - m['off']) / 1e5:+.2f} µs a call)")
PY
