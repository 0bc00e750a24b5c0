#!/usr/bin/env bash
# Runs every native Go fuzz target of the tree, one after the other (or
# several at once), each for as long as asked, and says what each did.
#
#   scripts/fuzz.sh [DURATION] [REGEXP]   DURATION per target (go's -fuzztime:
#                                         10m, 30s, 5000x); default $FUZZTIME,
#                                         else 1m. REGEXP narrows the targets
#                                         (matched against "package.FuzzName").
#   FUZZ_JOBS=N scripts/fuzz.sh ...       N targets at once (default 1); each
#                                         uses FUZZ_PARALLEL workers (default 1)
#
# The targets are found, never listed here: every Fuzz function that
# `go test -list` reports in any package. Each line of the report says the
# target, the executions, the new interesting inputs and the outcome; a
# finding (a crash, a hang, a failed check) leaves its input in the
# package's testdata/fuzz/FuzzName/ (commit it: it becomes a regular test
# case) and go's output in the log named on the line. The exit status is 1
# when any target found something or did not run, else 0.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

dur=${1:-${FUZZTIME:-1m}}
pattern=${2:-.}
jobs=${FUZZ_JOBS:-1}
par=${FUZZ_PARALLEL:-1}
logs=$(mktemp -d /var/tmp/agentbox-fuzz-XXXXXX)

# Every target, as "import/path FuzzName". A package that does not build
# is a failure: its targets would be missed.
if ! go test -list '^Fuzz' ./... >"$logs/list" 2>&1; then
	cat "$logs/list" >&2
	echo "fuzz: listing the targets failed (above)" >&2
	exit 1
fi
targets=()
while read -r pkg name; do
	short=${pkg#$(go list -m)}
	short=${short#/}
	if [[ "${short:-.}.$name" =~ $pattern ]]; then
		targets+=("$pkg $name")
	fi
done < <(awk '
	/^Fuzz/ { names[++n] = $1; next }
	/^ok[ \t]/ { for (i = 1; i <= n; i++) print $2, names[i]; n = 0; next }
' "$logs/list")
if [ ${#targets[@]} -eq 0 ]; then
	echo "fuzz: no target matches $pattern" >&2
	exit 1
fi
echo "fuzz: ${#targets[@]} targets, $dur each, $jobs at once; logs in $logs"

# one runs a target and prints its line of the report.
one() {
	local pkg=$1 name=$2
	local log="$logs/$(echo "${pkg##*/}" | tr / _).$name.log"
	local status=0
	go test -run '^$' -fuzz "^$name\$" -fuzztime "$dur" -parallel "$par" "$pkg" >"$log" 2>&1 || status=$?
	# go prints "fuzz: elapsed: 3s, execs: 12345 (4115/sec), new interesting: 2 (total: 10)"
	local execs interesting
	execs=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	interesting=$(grep -o 'new interesting: [0-9]*' "$log" | tail -1 | cut -d' ' -f3)
	local outcome="ok"
	# Go's fuzzing engine can miss its own end by a moment while a worker
	# is busy (minimising a new input): it then fails with "context
	# deadline exceeded" and no input. That is no finding of the target's
	# (a failing input is written to testdata/fuzz; a target that hangs
	# ends in the test binary's own time-out, "test timed out").
	if [ $status -ne 0 ] && grep -q 'context deadline exceeded' "$log" &&
		! grep -q 'testdata/fuzz/\|Failing input\|failure while testing\|test timed out\|panic:' "$log"; then
		status=0
		outcome="ok (the engine stopped late)"
	fi
	if [ $status -ne 0 ]; then
		outcome="FINDING"
		local input
		input=$(grep -o 'testdata/fuzz/[^ ]*' "$log" | head -1 || true)
		[ -n "$input" ] && outcome="FINDING: $input"
		grep -q 'fuzz: elapsed' "$log" || outcome="FAILED to run"
	fi
	printf '%-60s execs %-12s new interesting %-6s %s (%s)\n' "${pkg#$(go list -m)/}.$name" "${execs:-0}" "${interesting:-0}" "$outcome" "$log"
	[ $status -eq 0 ]
}

failed=0
running=0
pids=()
for t in "${targets[@]}"; do
	# shellcheck disable=SC2086
	one $t &
	pids+=($!)
	running=$((running + 1))
	if [ $running -ge "$jobs" ]; then
		wait "${pids[0]}" || failed=1
		pids=("${pids[@]:1}")
		running=$((running - 1))
	fi
done
for p in "${pids[@]}"; do
	wait "$p" || failed=1
done
if [ $failed -ne 0 ]; then
	echo "fuzz: FINDINGS (above): each input is in its package's testdata/fuzz/" >&2
	exit 1
fi
echo "fuzz: no finding"
