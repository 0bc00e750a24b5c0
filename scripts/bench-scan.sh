#!/usr/bin/env bash
# What the search of the writable roots for what host programs run costs
# (package hostexec), on generated trees it makes and removes (never
# commits): one of 100,000 files and one of 1,000,000 files in about
# 68,000 folders (node_modules-like: random depth up to 12, with 20 nested
# repositories).
#
#   scripts/bench-scan.sh [rounds]     (default 10)
#   BENCH_SCAN_TREES=DIR               keep the trees in DIR between runs
#                                      (made once: the 1M tree takes a
#                                      minute to generate)
#
# Each round runs every command once, in a new random order, so that load
# on a shared machine moves both sides of a pair together; a ratio is the
# median of the rounds' ratios. The goals, PASS or MISS:
#
#   1M files, first run in the tree (no index yet)  <= 1.2 s
#   1M files, a later run in the unchanged tree      <= 0.4 s
#   1M files, peak RSS (largest process, median of 3) <= 32 MiB
#   100k files: a later run vs a run in an empty project  <= 2x
#   an empty project: agentbox run -- /bin/true vs raw bwrap  <= 1.5x
#
# and, for information: what giving files with more than one link a copy
# of their own costs (the 100k tree's files, each hard-linked to a copy of
# the tree outside the project, as pnpm links a project to its store: the
# first run copies every one, the next finds none), and the walk alone (go
# test -bench BenchmarkWalk): listing every folder, checking each against
# an earlier tree, the same with the look at every file's link count, and
# the tree's file form. A report, not a test: it exits 0 whatever the
# figures.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
rounds=${1:-10}
command -v bwrap >/dev/null || { echo "bench-scan: bwrap is not installed; nothing measured" >&2; exit 0; }
work=$(mktemp -d /var/tmp/agentbox-scan-XXXXXX)
trap 'rm -rf "$work"' EXIT
trees=${BENCH_SCAN_TREES:-$work/trees}
mkdir -p "$trees"
gen() { # gen DIR FILES FOLDER-PROBABILITY
	[ -d "$1" ] && return
	python3 - "$1.tmp" "$2" "$3" <<'PY'
import os, random, sys
random.seed(1)
root, total, p = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
dirs, n = [root], 0
os.makedirs(root)
while n < total:
    d = random.choice(dirs)
    if random.random() < p and d.count('/') < root.count('/') + 12:
        nd = os.path.join(d, "d%d" % len(dirs)); os.makedirs(nd); dirs.append(nd)
    else:
        open(os.path.join(d, "f%d.js" % n), "w").close(); n += 1
for i in range(20):
    os.makedirs(os.path.join(random.choice(dirs), ".git", "hooks"), exist_ok=True)
print("tree %s: %d files in %d folders" % (os.path.basename(root)[:-4], n, len(dirs)))
PY
	mv "$1.tmp" "$1"
}
gen "$trees/100k" 100000 0.09
gen "$trees/1m" 1000000 0.074
mkdir -p "$work/empty"
CGO_ENABLED=0 go build -tags urfave_cli_no_docs -trimpath -o "$work/agentbox" .
ab="$work/agentbox"
mkdir -p "$work/home"
export HOME="$work/home"
unset XDG_CONFIG_HOME XDG_CACHE_HOME XDG_DATA_HOME
export XDG_STATE_HOME="$work/home/.local/state"
index="$XDG_STATE_HOME/agentbox/index"
# Each tree's index, once.
for d in "$trees/100k" "$trees/1m" "$work/empty"; do (cd "$d" && "$ab" run -- /bin/true) >/dev/null 2>&1 || true; done
if ! (cd "$trees/1m" && "$ab" run -- /bin/true); then
	echo "bench-scan: agentbox refused to run in the 1M tree (above)"
fi
rss=""
if [ -x /usr/bin/time ]; then
	rss=$(for _ in 1 2 3; do (cd "$trees/1m" && /usr/bin/time -f %M "$ab" run -- /bin/true 2>&1 >/dev/null | tail -1); done | sort -n | sed -n 2p)
fi
folders=$(find "$trees/1m" -type d | wc -l)

python3 - "$rounds" "$ab" "$trees" "$work" "$index" "$rss" "$folders" <<'PY'
import os, random, shutil, statistics, sys, time
rounds, ab, trees, work, index = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
rss = int(sys.argv[6]) if sys.argv[6].isdigit() else 0
folders = sys.argv[7]
raw = [shutil.which("bwrap"), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
       "--unshare-pid", "--die-with-parent", "--cap-drop", "ALL", "/bin/true"]
run = [ab, "run", "--", "/bin/true"]
cmds = {
    "raw": (raw, work + "/empty"),
    "empty": (run, work + "/empty"),
    "100k": (run, trees + "/100k"),
    "1m-first": (run, trees + "/1m"),
    "1m-next": (run, trees + "/1m"),
}
devnull = os.open(os.devnull, os.O_RDWR)
def once(name):
    argv, cwd = cmds[name]
    if name == "1m-first":
        shutil.rmtree(index, ignore_errors=True)
    t = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.chdir(cwd)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.execv(argv[0], argv)
    _, status, _ = os.wait4(pid, 0)
    return time.perf_counter() - t, os.waitstatus_to_exitcode(status)
times = {n: [] for n in cmds}
failed = {}
names = [n for n in cmds if n != "1m-next"]
for r in range(rounds + 1):
    random.shuffle(names)
    for n in names:
        dt, code = once(n)
        if code:
            failed.setdefault(n, code)
        if r:
            times[n].append(dt)
        if n == "1m-first":
            # The next run in the same tree: with the index the first left.
            dt, code = once("1m-next")
            if code:
                failed.setdefault("1m-next", code)
            if r:
                times["1m-next"].append(dt)
med = lambda n: statistics.median(times[n])
print(f"search of the writable roots: {rounds} rounds, every command once per round in random order; "
      f"the 1M tree has {folders} folders")
print(f"{'goal':<58} {'value':>10} {'base':>9} {'ratio':>6} {'target':>8}")
def line(what, value, target, base=None, ratio=None, unit="s", fail=None):
    if fail:
        print(f"{what:<58} {'':>10} {'':>9} {'':>6} {target:>8} MISS ({fail})")
        return
    ok = (ratio if ratio is not None else value) <= float(target.strip("<=x s MiB"))
    b = f"{base:8.3f}s" if base is not None else ""
    r = f"{ratio:6.2f}" if ratio is not None else ""
    print(f"{what:<58} {value:9.3f}{unit} {b:>9} {r:>6} {target:>8} {'PASS' if ok else 'MISS'}")
def fails(*ns):
    bad = [n for n in ns if n in failed]
    return f"{bad[0]} exited {failed[bad[0]]}" if bad else None
line("1M files: first run in the tree (no index yet)", med("1m-first"), "<=1.2s", fail=fails("1m-first"))
line("1M files: a later run in the unchanged tree", med("1m-next"), "<=0.4s", fail=fails("1m-next"))
if rss:
    line("1M files: peak RSS (largest process, median of 3)", rss / 1024, "<=32MiB", unit="MiB")
else:
    print("1M files: peak RSS not measured (no /usr/bin/time)")
ratio = statistics.median(a / b for a, b in zip(times["100k"], times["empty"]))
line("100k files: a later run vs a run in an empty project", med("100k"), "<=2x", base=med("empty"), ratio=ratio, fail=fails("100k", "empty"))
ratio = statistics.median(a / b for a, b in zip(times["empty"], times["raw"]))
line("an empty project: agentbox run vs raw bwrap", med("empty"), "<=1.5x", base=med("raw"), ratio=ratio, fail=fails("empty", "raw"))
PY
echo
echo "hard links: the 100k tree's files linked from outside the project (cp -al), 3 rounds:"
cp -a "$trees/100k" "$work/store"
for r in 1 2 3; do
	rm -rf "$work/linked"
	cp -al "$work/store" "$work/linked"
	rm -rf "$index"
	t0=$(date +%s.%N)
	(cd "$work/linked" && "$ab" run -- /bin/true) >/dev/null 2>&1 || echo "  the run in the linked tree failed"
	t1=$(date +%s.%N)
	(cd "$work/linked" && "$ab" run -- /bin/true) >/dev/null 2>&1 || true
	t2=$(date +%s.%N)
	left=$(find "$work/linked" -type f -links +1 | wc -l)
	printf "  round %d: first run (copies every file) %6.2f s; the next run %6.3f s; files still linked: %d\n" \
		"$r" "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)" "$left"
done
rm -rf "$work/linked" "$work/store"
echo
echo "the walk alone, 1M tree (go test -bench BenchmarkWalk, best of 3):"
AGENTBOX_BENCH_TREE="$trees/1m" go test ./hostexec -run XXX -bench 'BenchmarkWalk$' -benchtime 3x -count 3 |
	awk '/^BenchmarkWalk\// { ms = $3 / 1e6; k = $1; if (!(k in m) || ms < m[k]) m[k] = ms }
	     END { for (k in m) printf "  %-40s %8.1f ms\n", k, m[k] }' | sort
exit 0
