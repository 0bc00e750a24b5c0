#!/usr/bin/env bash
# What the filesystem log costs, measured side by side on this machine:
#
#   launch   agentbox run -- /bin/true, with the log as it is by default
#            (the calls that may write), with reads too ([log]
#            filesystem_reads = true) and without it ([log] filesystem =
#            false), under bwrap and Landlock, in rounds
#   go       go build of a mid-size module (go-containerregistry's crane,
#            from a build cache holding only the standard library)
#   npm      npm ci of a real project (express, lodash, axios, typescript,
#            eslint, prettier, webpack: about 280 packages, 7,700 files)
#
# The builds run confined, rotating the three, so that
# the load of a shared machine falls on both alike; the medians of the
# wall time and of the CPU time (user + system, the box's and agentbox's)
# are compared. The Go proxy and the npm registry must be reachable to set
# up the projects once.
#
#   scripts/bench-fslog.sh [launch-runs] [build-pairs]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
runs=${1:-300}
pairs=${2:-5}
for tool in npm go python3; do
	command -v "$tool" >/dev/null || { echo "bench-fslog: $tool is needed" >&2; exit 1; }
done
[ -x /usr/bin/time ] || { echo "bench-fslog: /usr/bin/time is needed (apt-get install time)" >&2; exit 1; }

work=${BENCH_DIR:-/var/tmp/agentbox-bench-fslog}
mkdir -p "$work"
CGO_ENABLED=0 go build -tags urfave_cli_no_docs -trimpath -ldflags=-s -o "$work/agentbox" .
ab="$work/agentbox"
printf 'version = 1\n[log]\nfilesystem = false\n' > "$work/nolog.toml"
printf 'version = 1\n[log]\nfilesystem = true\nfilesystem_reads = true\n' > "$work/reads.toml"

# Launch: rounds run back to back, in rotating order, so that a shared
# machine's changing load falls on all alike; the cost is the median of
# the differences within rounds.
mkdir -p "$work/launch" && cd "$work/launch"
"$ab" run -- /bin/true
python3 - "$ab" "$work/nolog.toml" "$work/reads.toml" "$runs" > "$work/launch.txt" <<'PY'
import statistics, subprocess, sys, time
ab, nolog, reads, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def once(args):
    t = time.perf_counter()
    subprocess.run(args, check=True, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - t) * 1000
for backend in ("bwrap", "landlock"):
    base = [ab, "run", "--backend", backend]
    modes = {"log": base, "reads": base + ["--policy", reads], "nolog": base + ["--policy", nolog]}
    got = {m: [] for m in modes}
    order = list(modes)
    for i in range(runs + 20):
        t = {m: once(modes[m] + ["--", "/bin/true"]) for m in order[i % 3:] + order[:i % 3]}
        if i >= 20:  # warm-up
            for m in modes:
                got[m].append(t[m])
    med = {m: statistics.median(v) for m, v in got.items()}
    diff = {m: statistics.median(a - b for a, b in zip(got[m], got["nolog"])) for m in ("log", "reads")}
    print(f"{backend} {med['log']:.3f} {med['reads']:.3f} {med['nolog']:.3f} {diff['log']:.3f} {diff['reads']:.3f}")
PY

# The Go module: its dependencies from the proxy once, a build cache with
# the standard library only.
export GOMODCACHE="$work/gomod" GOFLAGS=-mod=mod
if [ ! -d "$work/crane" ]; then
	GOPROXY=${GOPROXY:-https://proxy.golang.org} go mod download -x github.com/google/go-containerregistry@v0.21.7 >/dev/null 2>&1
	cp -r "$GOMODCACHE/github.com/google/go-containerregistry@v0.21.7" "$work/crane"
	chmod -R u+w "$work/crane"
	(cd "$work/crane" && go mod download)
fi
if [ ! -d "$work/gocache-std" ]; then
	GOCACHE="$work/gocache-std" go build std
fi

# The npm project: a lock file and a warm npm cache once.
if [ ! -f "$work/npm/package-lock.json" ]; then
	mkdir -p "$work/npm"
	cat > "$work/npm/package.json" <<'JSON'
{
  "name": "bench-project", "version": "1.0.0", "private": true,
  "dependencies": {"express": "4.19.2", "lodash": "4.17.21", "axios": "1.7.2"},
  "devDependencies": {"typescript": "5.5.3", "eslint": "8.57.0", "prettier": "3.3.2", "webpack": "5.92.1", "webpack-cli": "5.1.4"}
}
JSON
	(cd "$work/npm" && npm install --no-audit --no-fund --cache "$work/npm-cache" >/dev/null)
fi

# time prints "wall user+sys" of one confined command.
measure() {
	local dir=$1; shift
	(cd "$dir" && /usr/bin/time -f "%e %U %S" "$@" >/dev/null 2>"$work/err") || { cat "$work/err" >&2; exit 1; }
	tail -1 "$work/err" | awk '{printf "%s %.2f\n", $1, $2 + $3}'
}
gobuild() { # $1: extra agentbox flags
	rm -rf "$work/gocache" && cp -r "$work/gocache-std" "$work/gocache"
	measure "$work/crane" "$ab" run $1 --writable "$work/gocache" -- \
		env GOCACHE="$work/gocache" GOMODCACHE="$GOMODCACHE" GOFLAGS=-mod=mod GOPROXY=off go build -o /dev/null ./cmd/crane
}
npmci() {
	measure "$work/npm" "$ab" run $1 --writable "$work/npm-cache" -- \
		npm ci --no-audit --no-fund --prefer-offline --cache "$work/npm-cache"
}
: > "$work/builds.txt"
modes="log reads nolog"
for i in $(seq "$pairs"); do
	# Rotate which goes first.
	case $((i % 3)) in 1) order="log reads nolog" ;; 2) order="reads nolog log" ;; *) order="nolog log reads" ;; esac
	for mode in $order; do
		flags=""
		[ "$mode" = nolog ] && flags="--policy $work/nolog.toml"
		[ "$mode" = reads ] && flags="--policy $work/reads.toml"
		echo "go $mode $(gobuild "$flags")" >> "$work/builds.txt"
		echo "npm $mode $(npmci "$flags")" >> "$work/builds.txt"
	done
done

python3 - "$work/launch.txt" "$work/builds.txt" "$runs" <<'PY'
import statistics, sys
print("launch (agentbox run -- /bin/true), %s rounds; the log as by default (writes), with reads, without:" % sys.argv[3])
for line in open(sys.argv[1]):
    b, on, rd, off, d, dr = line.split()
    print(f"  {b:<9} median {float(on):7.2f} ms writes, {float(rd):7.2f} ms with reads, {float(off):7.2f} ms without;"
          f" median difference within rounds {float(d):+.3f} ms (writes), {float(dr):+.3f} ms (reads)")
rows = [l.split() for l in open(sys.argv[2]) if l.strip()]
print("builds, confined under bwrap, median of %d rounds run in rotation:" % (len(rows) // 6))
for w in ("go", "npm"):
    def m(mode, k):
        return statistics.median(float(r[2 + k]) for r in rows if r[0] == w and r[1] == mode)
    off_w, off_c = m("nolog", 0), m("nolog", 1)
    for mode, name in (("log", "writes"), ("reads", "with reads")):
        on_w, on_c = m(mode, 0), m(mode, 1)
        print(f"  {w:<4} {name:<10} wall {on_w:7.2f} s vs {off_w:7.2f} s without ({(on_w / off_w - 1) * 100:+.1f}%);"
              f"  CPU {on_c:7.2f} s vs {off_c:7.2f} s ({(on_c / off_c - 1) * 100:+.1f}%)")
PY
