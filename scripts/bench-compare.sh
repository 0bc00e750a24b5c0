#!/usr/bin/env bash
# Launch time of agentbox at another revision against this checkout, side by
# side in one hyperfine run (the ratio is what counts on a shared machine):
#
#   scripts/bench-compare.sh REV [runs]
#
# It builds REV in a temporary worktree, then times `agentbox run -- /bin/true`
# under bwrap and Landlock for both binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
rev=${1:?usage: scripts/bench-compare.sh REV [runs]}
runs=${2:-200}
command -v hyperfine >/dev/null || { echo "install hyperfine (apt-get install hyperfine)" >&2; exit 1; }
work=$(mktemp -d /var/tmp/agentbox-cmp-XXXXXX)
trap 'git worktree remove --force "$work/old-src" >/dev/null 2>&1; rm -rf "$work"' EXIT
git worktree add -q --detach "$work/old-src" "$rev"
(cd "$work/old-src" && CGO_ENABLED=0 go build -tags urfave_cli_no_docs -trimpath -ldflags=-s -o "$work/old" .)
CGO_ENABLED=0 go build -tags urfave_cli_no_docs -trimpath -ldflags=-s -o "$work/new" .
mkdir -p "$work/proj" && cd "$work/proj"
"$work/old" run -- /bin/true && "$work/new" run -- /bin/true
hyperfine -N --warmup 20 --runs "$runs" --export-json "$work/h.json" \
	-n old "$work/old run -- /bin/true" \
	-n new "$work/new run -- /bin/true" \
	-n old-landlock "$work/old run --backend landlock -- /bin/true" \
	-n new-landlock "$work/new run --backend landlock -- /bin/true" >/dev/null
python3 - "$work/h.json" "$rev" <<'PY'
import json, sys
res = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
med = lambda n: res[n]["median"] * 1000
print(f"{'command':<14} {'median ms':>10} {'stddev':>7}")
for n in ("old", "new", "old-landlock", "new-landlock"):
    print(f"{n:<14} {med(n):10.2f} {res[n]['stddev']*1000:7.2f}")
print(f"bwrap:    new/old = {med('new')/med('old'):.3f}  ({sys.argv[2]} is old)")
print(f"landlock: new/old = {med('new-landlock')/med('old-landlock'):.3f}")
PY
