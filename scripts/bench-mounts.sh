#!/usr/bin/env bash
# What each kind of mount costs a bubblewrap launch: raw bwrap (the
# baseline of scripts/bench.sh) against the same with N more mounts of one
# kind, side by side in one run (every command once per round, in a new
# random order; a figure is the median over rounds). Both wall time and
# CPU (user + system of bwrap and all it waited for) are shown, with the
# cost of one more mount of the kind: (variant - raw) / N.
#
#   scripts/bench-mounts.sh [rounds] [N]      (default 30 rounds, N = 20)
#
# A report, not a test: it exits 0 whatever the figures.
set -euo pipefail
rounds=${1:-30}
n=${2:-20}
command -v bwrap >/dev/null || { echo "bench-mounts: bwrap is not installed; nothing measured" >&2; exit 0; }
work=$(mktemp -d /var/tmp/agentbox-bench-mounts-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/d"
for i in $(seq "$n"); do
	mkdir -p "$work/d/dir$i"
	: >"$work/d/file$i"
done
python3 - "$rounds" "$n" "$work" <<'PY'
import ctypes, os, random, resource, statistics, sys, time
rounds, n, work = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
base = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
        "--unshare-pid", "--die-with-parent", "--cap-drop", "ALL"]
def extra(kind):
    out = []
    for i in range(1, n + 1):
        d, f = f"{work}/d/dir{i}", f"{work}/d/file{i}"
        out += {
            "ro-bind (folder)": ["--ro-bind", d, d],
            "ro-bind (file)": ["--ro-bind", f, f],
            "bind (folder)": ["--bind", d, d],
            "tmpfs": ["--tmpfs", d],
            "tmpfs + remount-ro": ["--tmpfs", d, "--remount-ro", d],
            "ro-bind-data (file)": ["--ro-bind-data", "0", f],
        }[kind]
    return out
kinds = ["ro-bind (folder)", "ro-bind (file)", "bind (folder)", "tmpfs", "tmpfs + remount-ro"]
cmds = {"raw": base + ["/bin/true"]}
for k in kinds:
    cmds[k] = base + extra(k) + ["/bin/true"]
cmds["dev-bind /dev/null"] = base + sum((["--dev-bind", "/dev/null", f"{work}/d/file{i}"] for i in range(1, n + 1)), []) + ["/bin/true"]
cmds["+ --unshare-net"] = base + ["--unshare-net", "/bin/true"]
cmds["+ --unshare-user (as root)"] = base + ["--unshare-user", "/bin/true"]
devnull = os.open(os.devnull, os.O_RDWR)
# A child subreaper: bwrap's parent exits without waiting for the process
# that builds the box (and makes its mounts), which then comes to the
# harness and is reaped here, so that its CPU is counted.
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
def once(argv):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)])
    _, st, _ = os.wait4(pid, 0)
    dt = (time.perf_counter() - t) * 1000
    while True:
        try:
            os.wait4(-1, 0)
        except ChildProcessError:
            break
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return dt, (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000, os.waitstatus_to_exitcode(st)
wall = {k: [] for k in cmds}; cpu = {k: [] for k in cmds}; failed = {}
names = list(cmds)
for r in range(rounds + 2):
    random.shuffle(names)
    for k in names:
        w, c, code = once(cmds[k])
        if code:
            failed[k] = code
        if r >= 2:
            wall[k].append(w); cpu[k].append(c)
m = statistics.median
print(f"bwrap mounts: {rounds} rounds, {n} mounts of each kind; medians (ms)")
print(f"{'variant':<30}{'wall':>8}{'cpu':>8}{'wall/mount':>12}{'cpu/mount':>11}")
for k in cmds:
    if k in failed:
        print(f"{k:<30} failed (exit {failed[k]})"); continue
    per = k not in ("raw",) and not k.startswith("+")
    dw = (m(wall[k]) - m(wall["raw"])) / n if per else m(wall[k]) - m(wall["raw"])
    dc = (m(cpu[k]) - m(cpu["raw"])) / n if per else m(cpu[k]) - m(cpu["raw"])
    extra_s = "" if k == "raw" else f"{dw:12.3f}{dc:11.3f}"
    print(f"{k:<30}{m(wall[k]):8.2f}{m(cpu[k]):8.2f}{extra_s}")
PY
