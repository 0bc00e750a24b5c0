#!/usr/bin/env bash
# What the search of the writable roots for repositories and control files
# costs (package hostexec), on a generated tree of 100,000 files in about
# 7,000 folders (node_modules-like, with 20 nested repositories):
#
#   scripts/bench-scan.sh [runs]
#
# It reports the search before a run, the same walk by os.ReadDir, and the
# search after a run with the index of the one before; then `agentbox run --
# /bin/true` in that tree and in an empty project.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
runs=${1:-20}
work=$(mktemp -d /var/tmp/agentbox-scan-XXXXXX)
trap 'rm -rf "$work"' EXIT
python3 - "$work/tree" <<'PY'
import os, random, sys
random.seed(1)
root = sys.argv[1]
dirs, n = [root], 0
os.makedirs(root)
while n < 100000:
    d = random.choice(dirs)
    if random.random() < 0.09 and d.count('/') < root.count('/') + 12:
        nd = os.path.join(d, "d%d" % len(dirs)); os.makedirs(nd); dirs.append(nd)
    else:
        open(os.path.join(d, "f%d.js" % n), "w").close(); n += 1
for i in range(20):
    os.makedirs(os.path.join(random.choice(dirs), ".git", "hooks"), exist_ok=True)
print("tree: %d files in %d folders" % (n, len(dirs)))
PY
AGENTBOX_BENCH_TREE="$work/tree" go test ./hostexec -run XXX -bench BenchmarkWalk -benchtime 5x -count 5 |
	awk '/^Benchmark/ { ms = $3 / 1e6; k = $1; if (!(k in m) || ms < m[k]) m[k] = ms }
	     END { for (k in m) printf "%-36s %8.1f ms (best of 5)\n", k, m[k] }' | sort
CGO_ENABLED=0 go build -tags urfave_cli_no_docs -o "$work/agentbox" .
mkdir -p "$work/empty" "$work/state"
export XDG_STATE_HOME="$work/state"
(cd "$work/tree" && "$work/agentbox" run -- /bin/true)
(cd "$work/empty" && "$work/agentbox" run -- /bin/true)
if command -v hyperfine >/dev/null; then
	# First: no index of an earlier search (the first run in a project);
	# then: with the index the run before left.
	hyperfine --warmup 2 --runs "$runs" \
		--prepare "rm -rf $work/state/agentbox/index" --prepare true --prepare true \
		-n "run in the 100k tree, first run" "cd $work/tree && $work/agentbox run -- /bin/true" \
		-n "run in the 100k tree, next runs" "cd $work/tree && $work/agentbox run -- /bin/true" \
		-n "run in an empty project" "cd $work/empty && $work/agentbox run -- /bin/true"
fi
