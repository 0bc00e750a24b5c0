#!/usr/bin/env bash
# Two agentbox binaries side by side, with the trace's phases of each: for
# a change's effect on a shared machine, where only figures taken in the
# same run compare (load moves both sides of a pair together).
#
#   scripts/bench-pair.sh OLD NEW [rounds]     (default 40 rounds)
#   BENCH_PAIR_CREDENTIALS=1                  each HOME holds the credential
#                                              stores a developer's does
#
# Every round runs raw bwrap and `agentbox run -- /bin/true` under bwrap and
# Landlock with each binary, once each in a new random order, in a git
# repository of one commit, each binary with a HOME of its own. A ratio is the median
# of the per-round ratios. A report, not a test: it exits 0.
set -euo pipefail
old=$(realpath "${1:?usage: scripts/bench-pair.sh OLD NEW [rounds]}")
new=$(realpath "${2:?usage: scripts/bench-pair.sh OLD NEW [rounds]}")
rounds=${3:-40}
command -v bwrap >/dev/null || { echo "bench-pair: bwrap is not installed; nothing measured" >&2; exit 0; }
work=$(mktemp -d /var/tmp/agentbox-bench-pair-XXXXXX)
trap 'rm -rf "$work"' EXIT
# A HOME of each binary's own: the state folder and the bwrap probe's
# cache are not shared (two builds whose probe cache keys differ would
# each make the other probe again at every run).
mkdir -p "$work/home-old" "$work/home-new" "$work/repo"
if [ -n "${BENCH_PAIR_CREDENTIALS:-}" ]; then
	# A home folder like a developer's: the credential stores agentbox
	# hides by default (four folders, six files), each hidden in the box.
	for h in "$work/home-old" "$work/home-new"; do
		mkdir -p "$h/.aws" "$h/.gnupg" "$h/.config/gcloud" "$h/.kube" "$h/.docker" "$h/.ssh"
		touch "$h/.aws/credentials" "$h/.kube/config" "$h/.docker/config.json" "$h/.npmrc" "$h/.netrc" \
			"$h/.git-credentials" "$h/.ssh/id_ed25519" "$h/.ssh/id_rsa"
		chmod 700 "$h/.gnupg" "$h/.ssh"
	done
fi
export HOME="$work/home-old"
unset XDG_CONFIG_HOME XDG_STATE_HOME XDG_CACHE_HOME XDG_DATA_HOME
cd "$work/repo"
git init -q && echo a >a && git add a && git -c user.name=bench -c user.email=bench@example.invalid commit -qm init
for side in old new; do
	b=$old
	[ "$side" = new ] && b=$new
	HOME="$work/home-$side" "$b" run -- /bin/true >/dev/null 2>&1 || true
	HOME="$work/home-$side" "$b" run --backend landlock -- /bin/true >/dev/null 2>&1 || true
done
python3 - "$rounds" "$old" "$new" "$work" <<'PY'
import os, random, statistics, sys, time
rounds, old, new, work = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
raw = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
       "--unshare-pid", "--die-with-parent", "--cap-drop", "ALL", "/bin/true"]
cmds = {"raw": raw,
        "old": [old, "run", "--", "/bin/true"], "new": [new, "run", "--", "/bin/true"],
        "old landlock": [old, "run", "--backend", "landlock", "--", "/bin/true"],
        "new landlock": [new, "run", "--backend", "landlock", "--", "/bin/true"]}
trace = {n: os.path.join(work, "trace." + n.replace(" ", "-")) for n in cmds if n != "raw"}
devnull = os.open(os.devnull, os.O_RDWR)
def once(n):
    env = dict(os.environ)
    if n in trace:
        env["AGENTBOX_TRACE"] = trace[n]
        env["HOME"] = os.path.join(work, "home-" + n.split()[0])
    t = time.perf_counter()
    pid = os.posix_spawnp(cmds[n][0], cmds[n], env, file_actions=[(os.POSIX_SPAWN_DUP2, devnull, i) for i in (0, 1, 2)])
    _, st, ru = os.wait4(pid, 0)
    return (time.perf_counter() - t) * 1000, (ru.ru_utime + ru.ru_stime) * 1000, os.waitstatus_to_exitcode(st)
wall = {n: [] for n in cmds}; cpu = {n: [] for n in cmds}; failed = {}
names = list(cmds)
for r in range(rounds + 3):
    random.shuffle(names)
    for n in names:
        if r == 3 and n in trace and os.path.exists(trace[n]):
            os.remove(trace[n])  # the warm-up rounds' phases
        w, c, code = once(n)
        if code:
            failed[n] = code
        if r >= 3:
            wall[n].append(w); cpu[n].append(c)
m = statistics.median
print(f"bench-pair: {rounds} rounds; medians (ms); ratios are medians of per-round ratios")
print(f"{'':14}{'wall':>8}{'cpu':>8}{'wall/raw':>10}{'cpu/raw':>9}")
for n in cmds:
    if n in failed:
        print(f"{n:14} failed (exit {failed[n]})"); continue
    print(f"{n:14}{m(wall[n]):8.2f}{m(cpu[n]):8.2f}{m([a / b for a, b in zip(wall[n], wall['raw'])]):10.2f}"
          f"{m([a / b for a, b in zip(cpu[n], cpu['raw']) if b > 0]):9.2f}")
for a, b in (("new", "old"), ("new landlock", "old landlock")):
    if a not in failed and b not in failed:
        print(f"{a + ' / ' + b:26} wall {m([x / y for x, y in zip(wall[a], wall[b])]):.3f}  cpu {m([x / y for x, y in zip(cpu[a], cpu[b])]):.3f}")
def phases(path):
    out = {}
    if os.path.exists(path):
        for line in open(path):
            f = [x.strip() for x in line.split(" | ")]
            if len(f) == 7:
                out.setdefault(f[3], []).append([float(x.split()[1]) for x in f[4:7]])
    return out
for be in ("", " landlock"):
    po, pn = phases(trace["old" + be]), phases(trace["new" + be])
    print(f"\nphases{be or ' bwrap'} (median ms: wall cpu children)   old | new")
    # A phase only one binary traces is shown with dashes on the other side.
    for k in list(po) + [k for k in pn if k not in po]:
        fo, fn = (" ".join(f"{m(x[i] for x in ph[k]):6.2f}" for i in range(3)) if k in ph else f"{'-':>6} {'-':>6} {'-':>6}" for ph in (po, pn))
        print(f"{k:14} {fo} | {fn}")
PY
exit 0
