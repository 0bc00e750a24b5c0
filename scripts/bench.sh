#!/usr/bin/env bash
# Launch speed of agentbox against what it wraps: one line per goal, each
# a pair measured side by side in one run.
#
#   scripts/bench.sh [rounds]        (default 40; BENCH_ROUNDS too)
#
# BENCH_BUDGET=SECONDS stops starting rounds once that much time has gone
# by (after 5 rounds at least): scripts/test.sh uses it to bound the
# report's time on a loaded machine.
#
# Every round runs every command once, in a new random order, each started
# directly (fork and exec from a small Python harness, no shell) with
# stdin, stdout and stderr on /dev/null; a goal's ratio is the median over
# rounds of that round's ratio, so load that comes and goes on a shared
# machine moves both sides of a pair together. The times printed are the
# medians of each side. The goals:
#
#   agentbox run -- /bin/true (bwrap)   <= 2.0 x raw bwrap with the same
#                                          namespaces (RAW below), and its
#                                          CPU (user+sys, agentbox and all
#                                          it waits for) <= 4 x RAW's
#   the same with [limits] (rlimits)    <= 1.05 x without (no extra cost
#                                          beyond noise)
#   --backend landlock                  <= 1.5 x RAW
#   git status, 5,000 files in 50 folders, boxed  <= 2.0 x bare
#   python3 -c 'import json', boxed     <= 1.25 x bare
#   --network allowlist                 <= 1.1 x open
#   peak RSS                            <= 8 MiB (the largest process of a
#                                          run: agentbox, bwrap or the
#                                          init; /usr/bin/time -f %M,
#                                          median of 5)
#
# and, for information: agentbox with its Go init and Go Landlock child
# (AGENTBOX_INIT=go) against the default C ones; an empty Go program
# against raw bwrap, and the floor it sets for each goal; agentbox against
# raw bwrap given agentbox's exact argv (`agentbox plan --argv`: its init,
# the seccomp filter, every mount); a run with a home folder like a
# developer's (ten credential stores, each hidden: a mount of the box)
# against raw bwrap and against the run with the empty home the goals use.
#
# Last, the phases of a run (AGENTBOX_TRACE, docs/speed.md): the median
# wall, CPU and children's CPU of each phase over BENCH_TRACE_RUNS runs
# (default 20) of `agentbox run -- /bin/true` under each backend, so that a
# ratio that moved names the phase that moved it.
#
# A report, not a test: it exits 0 whatever the figures (a command that
# fails is reported as such). It runs agentbox with a HOME of its own, so
# the caller's policies, trust store and caches play no part. Works as root
# and as an ordinary user (bwrap needs user namespaces then).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
rounds=${1:-${BENCH_ROUNDS:-40}}
for c in bwrap git python3; do
	command -v "$c" >/dev/null || { echo "bench: $c is not installed; nothing measured" >&2; exit 0; }
done

work=$(mktemp -d /var/tmp/agentbox-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
CGO_ENABLED=0 go build -tags urfave_cli_no_docs -trimpath -o "$work/agentbox" .
ab="$work/agentbox"
# The least any Go program costs: start, run nothing, exit. agentbox's
# supervisor is one (and under Landlock the whole of agentbox's share), so
# this bounds what any launch can reach (the "floor" lines below).
mkdir -p "$work/empty"
printf 'package main\n\nfunc main() {}\n' >"$work/empty/main.go"
(cd "$work/empty" && printf 'module empty\n\ngo 1.21\n' >go.mod && CGO_ENABLED=0 go build -trimpath -o "$work/go-empty" .)
mkdir -p "$work/home"
export HOME="$work/home"
unset XDG_CONFIG_HOME XDG_STATE_HOME XDG_CACHE_HOME XDG_DATA_HOME

# A project that is a git repository of 5,000 files in 50 folders.
repo="$work/repo"
python3 - "$repo" <<'PY'
import os, sys
root = sys.argv[1]
for d in range(50):
    os.makedirs(f"{root}/d{d:02}")
    for f in range(100):
        with open(f"{root}/d{d:02}/f{f:03}.txt", "w") as fh:
            fh.write(f"{d} {f}\n")
PY
(
	cd "$repo"
	git init -q
	git add -A
	git -c user.name=bench -c user.email=bench@example.invalid commit -qm init
)
printf '[limits]\nopen_files = 4096\ncpu_time = "1h"\nfile_size = "10GiB"\n' >"$work/limits.toml"
cd "$repo"
# A home folder like a developer's, for information: the credential
# stores agentbox hides by default (four folders, six files), each a
# mount of the box.
dev="$work/devhome"
mkdir -p "$dev/.aws" "$dev/.gnupg" "$dev/.config/gcloud" "$dev/.kube" "$dev/.docker" "$dev/.ssh"
touch "$dev/.aws/credentials" "$dev/.kube/config" "$dev/.docker/config.json" "$dev/.npmrc" "$dev/.netrc" \
	"$dev/.git-credentials" "$dev/.ssh/id_ed25519" "$dev/.ssh/id_rsa"
chmod 700 "$dev/.gnupg" "$dev/.ssh"
# agentbox's own folders, the probe cache and the search index, once.
"$ab" run -- /bin/true >/dev/null 2>&1 || true
HOME="$dev" "$ab" run -- /bin/true >/dev/null 2>&1 || true
"$ab" run --backend landlock -- /bin/true >/dev/null 2>&1 || true
# Raw bwrap with agentbox's exact argv: the printed argv reads the filter
# through a process substitution; give it the same bytes from a file.
"$ab" __seccomp >"$work/seccomp.bpf" 2>/dev/null || true
argv=$("$ab" plan --argv --wide -- /bin/true 2>/dev/null || true)
same=$(printf '%s' "$argv" | sed -E "s#6< <\([^)]*\)#6<$work/seccomp.bpf#")
printf '%s\n' "$same" >"$work/same.sh"
# Peak RSS through /usr/bin/time (a small C parent: a child of the Python
# harness would start with the harness's own high-water mark).
rss=""
if [ -x /usr/bin/time ]; then
	rss=$(for _ in 1 2 3 4 5; do /usr/bin/time -f %M "$ab" run -- /bin/true 2>&1 >/dev/null | tail -1; done | sort -n | sed -n 3p)
fi

python3 - "$rounds" "$ab" "$work" "$(command -v python3)" "$rss" "${BENCH_BUDGET:-0}" <<'PY'
import ctypes, os, random, resource, shlex, shutil, statistics, sys, time

rounds, ab, work, py = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
budget = float(sys.argv[6] or 0)
rss = int(sys.argv[5]) if sys.argv[5].isdigit() else 0
raw = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
       "--unshare-pid", "--die-with-parent", "--cap-drop", "ALL", "/bin/true"]
cmds = {
    "raw": raw,
    "run": [ab, "run", "--", "/bin/true"],
    "limits": [ab, "run", "--policy", f"{work}/limits.toml", "--", "/bin/true"],
    "landlock": [ab, "run", "--backend", "landlock", "--", "/bin/true"],
    "git": ["git", "status"],
    "git-box": [ab, "run", "--", "git", "status"],
    "py": [py, "-c", "import json"],
    "py-box": [ab, "run", "--", py, "-c", "import json"],
    "allowlist": [ab, "run", "--network", "allowlist", "--allow", "example.invalid", "--", "/bin/true"],
    # The exact argv runs through bash for its descriptor redirections.
    "same": ["bash", f"{work}/same.sh"],
    "bash": ["bash", "-c", "exit 0"],
    "go-empty": [f"{work}/go-empty"],
    # The same runs with agentbox's Go init and Go Landlock child instead
    # of the C ones (AGENTBOX_INIT=go): what the C init saves.
    "run-goinit": [ab, "run", "--", "/bin/true"],
    "limits-goinit": [ab, "run", "--policy", f"{work}/limits.toml", "--", "/bin/true"],
    "landlock-goinit": [ab, "run", "--backend", "landlock", "--", "/bin/true"],
    # The run with a developer's home folder (HOME below).
    "run-devhome": [ab, "run", "--", "/bin/true"],
}
goenv = dict(os.environ, AGENTBOX_INIT="go")
envs = {n: goenv for n in cmds if n.endswith("-goinit")}
envs["run-devhome"] = dict(os.environ, HOME=f"{work}/devhome")
# goal, command, its baseline, target ratio
goals = [
    ("agentbox run -- /bin/true (bwrap) vs raw bwrap", "run", "raw", 2.0),
    ("with [limits] (rlimits) vs without", "limits", "run", 1.05),
    ("--backend landlock vs raw bwrap", "landlock", "raw", 1.5),
    ("git status, 5k files in 50 folders: boxed vs bare", "git-box", "git", 2.0),
    ("python3 -c 'import json': boxed vs bare", "py-box", "py", 1.25),
    ("--network allowlist vs open", "allowlist", "run", 1.1),
]
for c in cmds.values():
    if "/" not in c[0]:
        c[0] = shutil.which(c[0]) or c[0]
devnull = os.open(os.devnull, os.O_RDWR)

# The harness is a child subreaper: a process a command leaves behind
# (raw bwrap does not wait for the process that built its box and ran the
# command: its parent exits on a message from it) comes to the harness,
# which reaps it, so that its CPU is counted as agentbox's is (agentbox
# reaps every process of its run). Without it raw bwrap's CPU left out the
# box's mounts: 1.4 ms here against 3.6 ms by perf's task-clock.
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER

def once(argv, env):
    """Runs argv; returns (seconds, CPU seconds, exit status). The time
    is until argv exits; the CPU is that of argv and of every process it
    started, reaped by it or by the harness."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, env,
                         file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 0),
                                       (os.POSIX_SPAWN_DUP2, devnull, 1),
                                       (os.POSIX_SPAWN_DUP2, devnull, 2)])
    _, status, _ = os.wait4(pid, 0)
    dt = time.perf_counter() - t
    while True:
        try:
            os.wait4(-1, 0)
        except ChildProcessError:
            break
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return dt, cpu, os.waitstatus_to_exitcode(status)

times = {n: [] for n in cmds}
cpus = {n: [] for n in cmds}
failed = {}
names = list(cmds)
start = time.monotonic()
done = 0
for r in range(rounds + 3):
    if budget and done >= 5 and time.monotonic() - start > budget:
        break
    random.shuffle(names)
    for n in names:
        dt, cpu, code = once(cmds[n], envs.get(n, os.environ))
        if code != 0:
            failed.setdefault(n, code)
        if r < 3:
            continue  # warm-up rounds
        times[n].append(dt * 1000)
        cpus[n].append(cpu * 1000)
    if r >= 3:
        done += 1
took = time.monotonic() - start

def med(n):
    return statistics.median(times[n])

print(f"agentbox launch speed: {done} rounds, every command once per round in random order, "
      f"{took:.0f} s; ratio = median of per-round ratios (p10-p90)")
print(f"{'goal':<52} {'ms':>7} {'base ms':>8} {'ratio':>6} {'p10-p90':>11} {'target':>7}")
for what, n, base, target in goals:
    if n in failed or base in failed:
        bad = n if n in failed else base
        print(f"{what:<52} {'':>7} {'':>8} {'':>6} {'':>11} {'<=' + str(target):>7} MISS ({shlex.join(cmds[bad])} exited {failed[bad]})")
        continue
    ratios = sorted(a / b for a, b in zip(times[n], times[base]))
    ratio = statistics.median(ratios)
    p10, p90 = ratios[len(ratios) // 10], ratios[(len(ratios) * 9) // 10]
    verdict = "PASS" if ratio <= target else "MISS"
    print(f"{what:<52} {med(n):7.2f} {med(base):8.2f} {ratio:6.2f} {p10:5.2f}-{p90:<5.2f} {'<=' + str(target):>7} {verdict}")
# CPU: the same pairing over CPU time (user + system of the command and
# all it waited for), which load on a shared machine moves far less.
for what, n, base, target in (("CPU: agentbox run (bwrap) vs raw bwrap", "run", "raw", 4.0),
                              ("CPU: --backend landlock vs raw bwrap", "landlock", "raw", 4.0)):
    if n in failed or base in failed:
        continue
    ratios = sorted(a / b for a, b in zip(cpus[n], cpus[base]) if b > 0)
    if not ratios:
        continue
    ratio = statistics.median(ratios)
    p10, p90 = ratios[len(ratios) // 10], ratios[(len(ratios) * 9) // 10]
    verdict = "PASS" if ratio <= target else "MISS"
    print(f"{what:<52} {statistics.median(cpus[n]):7.2f} {statistics.median(cpus[base]):8.2f} {ratio:6.2f} "
          f"{p10:5.2f}-{p90:<5.2f} {'<=' + str(target):>7} {verdict}")
if rss:
    mib = rss / 1024
    print(f"{'peak RSS of a run (largest process, /usr/bin/time)':<52} {mib:7.2f} MiB{'':>21} {'<=8':>7} {'PASS' if mib <= 8 else 'MISS'}")
else:
    print(f"{'peak RSS of a run':<52} not measured (no /usr/bin/time)")
def info(what, n, base, ratios):
    ratios = sorted(ratios)
    if ratios:
        print(f"{'(info) ' + what:<52} {med(n):7.2f} {med(base):8.2f} {statistics.median(ratios):6.2f}")

# The floor: what a launch would cost if agentbox's supervisor did nothing
# but start and exit as a Go program does, around the raw bwrap box.
if "go-empty" not in failed and "raw" not in failed:
    info("an empty Go program vs raw bwrap", "go-empty", "raw", [g / r for g, r in zip(times["go-empty"], times["raw"])])
    info("floor of run: raw bwrap + empty Go, vs raw bwrap", "go-empty", "raw",
         [(g + r) / r for g, r in zip(times["go-empty"], times["raw"])])
    if "git" not in failed:
        info("floor of git: bare git + raw bwrap, vs bare git", "raw", "git",
             [(g + r) / g for g, r in zip(times["git"], times["raw"])])
if "run-devhome" not in failed and "raw" not in failed and "run" not in failed:
    info("run, 10 credential stores hidden, vs raw bwrap", "run-devhome", "raw",
         [a / r for a, r in zip(times["run-devhome"], times["raw"])])
    info("run, 10 stores hidden, vs an empty home", "run-devhome", "run",
         [a / b for a, b in zip(times["run-devhome"], times["run"])])
for n, base in (("run-goinit", "run"), ("limits-goinit", "limits"), ("landlock-goinit", "landlock")):
    if n not in failed and base not in failed:
        info(f"{base}: Go init/child vs C (AGENTBOX_INIT=go)", n, base, [a / b for a, b in zip(times[n], times[base])])
if "same" not in failed and "bash" not in failed and "run-goinit" not in failed:
    # bash's own start is taken off the exact-argv figure. plan --argv
    # passes agentbox itself as the init (a shell cannot hand bwrap the C
    # init's memory file), so it is compared with the Go-init run.
    same = [s - b for s, b in zip(times["same"], times["bash"])]
    ratios = sorted(a / s for a, s in zip(times["run-goinit"], same) if s > 0)
    if ratios:
        print(f"{'(info) run (Go init) vs raw bwrap, its exact argv':<52} {med('run-goinit'):7.2f} {statistics.median(same):8.2f} "
              f"{statistics.median(ratios):6.2f}")
PY

# The phases of a run, from agentbox's own trace.
trace_runs=${BENCH_TRACE_RUNS:-20}
for backend in bwrap landlock; do
	rm -f "$work/trace.$backend"
	for _ in $(seq "$trace_runs"); do
		AGENTBOX_TRACE="$work/trace.$backend" "$ab" run --backend "$backend" -- /bin/true >/dev/null 2>&1 || true
	done
done
python3 - "$work/trace.bwrap" "$work/trace.landlock" <<'PY'
import os, statistics, sys
print()
print("phases of agentbox run -- /bin/true (AGENTBOX_TRACE; median ms over the runs; plan.* are within plan, box.* within box)")
tables = {}
for path in sys.argv[1:]:
    phases = {}
    if os.path.exists(path):
        for line in open(path):
            f = [x.strip() for x in line.split(" | ")]
            if len(f) != 7:
                continue
            vals = [float(x.split()[1]) for x in f[4:7]]
            phases.setdefault(f[3], []).append(vals)
    tables[os.path.basename(path).split(".", 1)[1]] = phases
order = []
for phases in tables.values():
    for n in phases:
        if n not in order:
            order.append(n)
print(f"{'phase':<16}" + "".join(f"{b + ' wall':>15}{'cpu':>8}{'children':>10}" for b in tables))
for n in order:
    row = f"{n:<16}"
    for phases in tables.values():
        v = phases.get(n)
        if not v:
            row += f"{'-':>15}{'-':>8}{'-':>10}"
            continue
        row += "".join(f"{statistics.median(x[i] for x in v):{w}.2f}" for i, w in ((0, 15), (1, 8), (2, 10)))
    print(row)
PY
exit 0
