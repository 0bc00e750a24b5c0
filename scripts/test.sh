#!/usr/bin/env bash
# The whole test suite, as the README says: checks, unit tests, and the
# integration tests that run the real agentbox under real bubblewrap, once as
# root and once as an unprivileged user (root and user namespaces behave
# differently; both are real deployments); then the release check
# (goreleaser check and a snapshot build), the Windows code under Wine, and
# every fuzz target briefly (FUZZTIME, default 10s each).
#
#   scripts/test.sh            everything (installs what it needs when root)
#   AGENTBOX_MUST_WORK=1 ...   a test that would skip for a missing
#                              capability fails instead (CI sets this)
#
# Run as root it creates the user agentbox-test for the unprivileged pass
# and removes it again when it ends, however it ends. It edits no shared
# file: the network tests' names resolve through a private /etc/hosts in a
# mount namespace of the tests' own. Two runs at once would share that
# user: run it under flock /var/tmp/agentbox-fullsuite.lock when others may.
#
# Both passes always run, the second even when the first failed, and the
# end says how each went (and which packages failed); the exit status is
# 1 when anything failed. Every test binary has a time limit, and the tests
# give what they start the default signal dispositions, so the suite also
# finishes under nohup or started with & (SIGHUP, SIGINT ignored).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
# cargo through rustup, which the registry's tests run, lives in the
# user's own folder.
[ -d "$HOME/.cargo/bin" ] && export PATH="$PATH:$HOME/.cargo/bin"
root=$(pwd)
start=$SECONDS

say() { printf '\n== [%dm%02ds] %s\n' $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)) "$*"; }

# What the tests need (scripts/test-packages.sh, the list that
# scripts/fresh-root-check.sh also checks installs on fresh Debian and Ubuntu roots).
# As root, install what is missing; otherwise say what. apt-get's own
# output goes to a file, shown only when it fails.
list=$(scripts/test-packages.sh)
missing=()
[ -z "$list" ] || mapfile -t missing <<<"$list"
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ]; then
		say "installing ${missing[*]} with apt-get (a minute or two)"
		aptlog=$(mktemp /var/tmp/agentbox-apt-XXXXXX.log)
		# Nothing installed here is removed to make room: apt-get -y
		# would, silently (gcc-multilib removes the aarch64 compiler).
		if apt-get update >"$aptlog" 2>&1 && apt-get install --simulate "${missing[@]}" >>"$aptlog" 2>&1 &&
			grep '^Remv ' "$aptlog" >&2; then
			echo "installing ${missing[*]} would remove the packages above: install them by hand (apt-get's output: $aptlog)" >&2
			exit 1
		fi
		if ! DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >>"$aptlog" 2>&1; then
			tail -n 40 "$aptlog" >&2
			echo "apt-get could not install ${missing[*]} (its whole output: $aptlog)" >&2
			exit 1
		fi
		rm -f "$aptlog"
	else
		echo "missing: ${missing[*]} (install them, or run this script as root)" >&2
		exit 1
	fi
fi

# The install steps on a fresh Debian 12 and Ubuntu 24.04
# (scripts/fresh-root-check.sh: debootstrap roots kept in /var/cache,
# where apt-get simulates installing the README's packages and this
# script's together): a conflict between
# them fails the suite here, not on a user's machine. As root only.
fresh_status="not run (only as root: it makes a root with debootstrap)"
if [ "$(id -u)" = 0 ]; then
	say "install steps on fresh Debian 12 and Ubuntu 24.04 roots (scripts/fresh-root-check.sh)"
	fresh=0
	scripts/fresh-root-check.sh || fresh=$?
	case $fresh in
	0) fresh_status="passed" ;;
	3) fresh_status="passed where checked: a mirror cannot be reached (above)" ;;
	*) fresh_status="FAILED (above)" ;;
	esac
fi
# The README's commands and sample policy, run as written on a copy of the
# fresh Debian 12 and Ubuntu 24.04 roots, as root and as a new user, under
# both Linux backends (scripts/fresh-root-readme.sh; a few minutes each).
readme_status="not run (only as root: it enters a copy of the fresh roots)"
if [ "$(id -u)" = 0 ]; then
	say "the README's commands on fresh Debian 12 and Ubuntu 24.04 roots (scripts/fresh-root-readme.sh)"
	readme=0
	scripts/fresh-root-readme.sh || readme=$?
	case $readme in
	0) readme_status="passed" ;;
	3) readme_status="passed where checked: a root could not be checked here (above)" ;;
	*) readme_status="FAILED (above)" ;;
	esac
fi

# The host programs the registry's tests run after a box (Yarn 1,
# lefthook and pnpm from npm), installed from an empty folder: lefthook's install
# script sets up hooks in the git repository it is run from.
if ! command -v yarn >/dev/null 2>&1 || ! command -v lefthook >/dev/null 2>&1 || ! command -v pnpm >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ]; then
		say "installing yarn, lefthook and pnpm from npm"
		(cd "$(mktemp -d)" && npm install -g --no-fund --no-audit yarn@1.22.22 lefthook@1.11.3 pnpm@12.26.0 >/dev/null)
	fi
fi

# The real agent CLIs the provider tests run (the versions verified in
# provider/VERIFIED.md).
if ! command -v claude >/dev/null 2>&1 || ! command -v codex >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ]; then
		say "installing the agent CLIs claude and codex from npm (a minute or two)"
		npm install -g --no-fund --no-audit @anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0 >/dev/null
	fi
fi

say "static checks: gofmt, go vet (linux, windows), builds for windows and darwin"
bad=$(gofmt -l . | grep -v '^vendor/' || true)
if [ -n "$bad" ]; then echo "gofmt would change: $bad" >&2; exit 1; fi
go vet ./...
GOOS=windows go vet ./...
GOOS=windows go build -o /dev/null ./...
GOOS=darwin go build -o /dev/null ./...

# The C init embedded in agentbox (cinit/c): rebuilt from its source
# with the pinned compilers, byte for byte the checked-in binaries.
say "C init: rebuilding cinit/c for amd64 and arm64 and comparing the bytes"
cinit/c/check.sh
# The preloaded filesystem log embedded in agentbox (fslog/preload), likewise.
say "preloaded log: rebuilding fslog/preload for x86_64, i686 and aarch64 and comparing the bytes"
fslog/preload/check.sh

# Binaries and test binaries live outside /tmp (the box replaces /tmp) in a
# folder every user can read.
work=$(mktemp -d /var/tmp/agentbox-test-XXXXXX)
user=agentbox-test
made_user=
cleanup() {
	rm -rf "$work"
	if [ -n "$made_user" ] && id "$user" >/dev/null 2>&1; then
		# Its home goes with it; a process a test left running would stop
		# a plain userdel.
		userdel --remove "$user" 2>/dev/null || userdel --force --remove "$user" 2>/dev/null ||
			echo "warning: could not remove the user $user" >&2
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP
chmod 755 "$work"

if [ "$(id -u)" = 0 ]; then
	# A user of our own for this run, made before the root pass (whose
	# tests drop to it where they need an ordinary user) and used by the
	# unprivileged pass; a user left by a run that was killed is reused,
	# and removed at the end.
	id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
	made_user=1
	export AGENTBOX_TEST_USER=$user
fi

say "building agentbox"
CGO_ENABLED=0 go build -tags urfave_cli_no_docs -o "$work/agentbox" .
export AGENTBOX_BIN="$work/agentbox"

# Each pass's outcome, for the summary at the end; a failure does not stop
# the other pass.
first=$(id -un)
first_status="passed"
second_status="not run (only as root: it needs a user of its own)"
failed_pkgs=()

say "tests as $first: every package (the integration tests run the real binary)"
if ! go test -count=1 -timeout 40m ./...; then
	first_status="FAILED (the failures are above)"
fi

if [ "$(id -u)" = 0 ]; then
	uhome=$(getent passwd "$user" | cut -d: -f6)
	# Go's build and module caches outlive the user, so that each run does
	# not rebuild the standard library and download modules again.
	cache=/var/cache/agentbox-test
	install -d -m 755 "$cache"
	chown -R "$user:" "$cache"
	# The network tests need names (integration/network_test.go's
	# testNames) that resolve to 127.0.0.1 on the host, where the proxy
	# resolves them through /etc/hosts. They get a copy of /etc/hosts with
	# the names, bound over it in a mount namespace of their own, so the
	# shared file is never touched.
	hosts="$work/hosts"
	{ cat /etc/hosts; echo; echo "127.0.0.1 example.test other.test wild.test api.wild.test evil.wild.test"; } > "$hosts"
	chmod 644 "$hosts"
	# A copy of the tree the user can read (the checkout may be under /root).
	say "copying the tree for $user"
	cp -a "$root" "$work/src"
	rm -rf "$work/src/dist"
	chmod -R a+rX "$work"
	pkgs=$(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./...)
	say "tests as the unprivileged user $user: each package's test binary"
	second_status="passed"
	for pkg in $pkgs; do
		rel=${pkg#$(go list -m)}
		rel=${rel#/}
		name=$(echo "${rel:-root}" | tr / _)
		if ! go test -c -o "$work/$name.test" "$pkg"; then
			failed_pkgs+=("$pkg (does not build)")
			continue
		fi
		[ -f "$work/$name.test" ] || continue
		chmod 755 "$work/$name.test"
		echo "--- $pkg"
		# The same time limit as go test gives the first pass.
		if ! (cd "$work/src/$rel" && unshare --mount --propagation private -- \
			sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$hosts" \
			setpriv --reuid="$user" --regid="$user" --init-groups \
			env -i PATH="/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin" HOME="$uhome" \
			AGENTBOX_BIN="$AGENTBOX_BIN" AGENTBOX_MUST_WORK="${AGENTBOX_MUST_WORK:-}" AGENTBOX_TEST_USER="$user" GOFLAGS=-mod=mod \
			GOCACHE="$cache/go-build" GOMODCACHE="$cache/mod" GOPATH="$uhome/go" \
			"$work/$name.test" -test.count=1 -test.timeout=40m); then
			failed_pkgs+=("$pkg")
		fi
	done
	if [ ${#failed_pkgs[@]} -gt 0 ]; then
		second_status="FAILED: ${failed_pkgs[*]}"
	fi
fi

release_status="passed"
say "release: goreleaser check and a snapshot build (scripts/release-check.sh)"
scripts/release-check.sh || release_status="FAILED (above)"

windows_status="not run (no scripts/test-windows.sh)"
if [ -x scripts/test-windows.sh ]; then
	say "windows: the Windows code paths under Wine (scripts/test-windows.sh)"
	windows_status="passed"
	scripts/test-windows.sh || windows_status="FAILED (above)"
fi
# Every native Go fuzz target, briefly: what the box sends agentbox
# (scripts/fuzz.sh runs them for as long as asked).
fuzz_status="passed"
say "fuzz: every target for ${FUZZTIME:-10s} (scripts/fuzz.sh)"
scripts/fuzz.sh "${FUZZTIME:-10s}" || fuzz_status="FAILED (above)"
# A report, not a test: the launch-speed goals side by side (20 rounds,
# at most 40 s of measuring, about a minute in all); it never fails the
# suite.
say "speed report: scripts/bench.sh (not a test; figures vary with load)"
BENCH_ROUNDS=20 BENCH_BUDGET=40 scripts/bench.sh || true

say "summary"
printf '%-26s %s\n' "tests as $first:" "$first_status" "tests as $user:" "$second_status" \
	"release check:" "$release_status" "windows under Wine:" "$windows_status" "fuzz targets:" "$fuzz_status" \
	"fresh-root install:" "$fresh_status" "README on fresh roots:" "$readme_status"
case "$first_status $second_status $release_status $windows_status $fuzz_status $fresh_status $readme_status" in
*FAILED*)
	echo "some tests FAILED" >&2
	exit 1
	;;
esac
echo "all tests passed"
