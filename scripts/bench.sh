#!/usr/bin/env bash
# Launch overhead of agentbox against raw bubblewrap, measured side by side
# in one hyperfine run on this machine:
#
#   raw-min     bwrap with the stage-1 mounts only (no init, no filter)
#   raw-same    bwrap with the identical argv `agentbox plan --argv` prints
#               (agentbox's init inside, the seccomp filter, every mount)
#   agentbox    agentbox run -- /bin/true
#   agentbox-landlock   the same with --backend landlock (no namespaces)
#
# and agentbox's peak RSS. Ratios are medians. Usage: scripts/bench.sh [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
runs=${1:-200}
command -v hyperfine >/dev/null || { echo "install hyperfine (apt-get install hyperfine)" >&2; exit 1; }
command -v bwrap >/dev/null || { echo "install bubblewrap" >&2; exit 1; }

work=$(mktemp -d /var/tmp/agentbox-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
CGO_ENABLED=0 go build -tags urfave_cli_no_docs -trimpath -ldflags=-s -o "$work/agentbox" .
ab="$work/agentbox"
proj="$work/proj"
mkdir -p "$proj"
cd "$proj"

"$ab" run -- /bin/true # prepares agentbox's own folders once
argv=$("$ab" plan --argv -- /bin/true)
"$ab" __seccomp > "$work/seccomp.bpf"
# The printed argv reads the filter through bash process substitution; give
# raw bwrap the same bytes from a file so it does not pay for a second
# agentbox process.
same=$(printf '%s' "$argv" | sed -E "s#6< <\([^)]*\)#6<$work/seccomp.bpf#")
min="bwrap --ro-bind / / --dev /dev --proc /proc --unshare-pid --die-with-parent /bin/true"

# All three through the same shell; hyperfine measures and subtracts the
# shell's own start-up.
hyperfine --warmup 20 --runs "$runs" --export-json "$work/h.json" \
	-n raw-min "$min" \
	-n raw-same "$same" \
	-n agentbox "$ab run -- /bin/true" \
	-n agentbox-landlock "$ab run --backend landlock -- /bin/true"

python3 - "$work/h.json" <<'PY'
import json, sys
res = {}
for f in sys.argv[1:]:
    for r in json.load(open(f))["results"]:
        res[r["command"]] = r
def med(n): return res[n]["median"] * 1000
print(f"{'command':<10} {'median ms':>10} {'mean ms':>9} {'stddev':>7}")
for n in ("raw-min", "raw-same", "agentbox", "agentbox-landlock"):
    r = res[n]
    print(f"{n:<10} {r['median']*1000:10.2f} {r['mean']*1000:9.2f} {r['stddev']*1000:7.2f}")
print(f"agentbox / raw-same = {med('agentbox')/med('raw-same'):.2f}x   (target <= 1.15x)")
print(f"agentbox / raw-min  = {med('agentbox')/med('raw-min'):.2f}x")
print(f"agentbox --backend landlock / raw-min = {med('agentbox-landlock')/med('raw-min'):.2f}x   (target <= 1.0x)")
PY
if [ -x /usr/bin/time ]; then
	rss=$(/usr/bin/time -f %M "$ab" run -- /bin/true 2>&1 >/dev/null | tail -1)
	echo "peak RSS of the largest process in the run (agentbox, bwrap or the init): $((rss / 1024)).$(( (rss % 1024) * 10 / 1024 )) MiB (target <= 8 MiB)"
fi
