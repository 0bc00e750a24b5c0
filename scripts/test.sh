#!/usr/bin/env bash
# The whole test suite, as the README says: checks, unit tests, and the
# integration tests that run the real agentbox under real bubblewrap, once as
# root and once as an unprivileged user (root and user namespaces behave
# differently; both are real deployments).
#
#   scripts/test.sh            everything (installs what it needs when root)
#   AGENTBOX_MUST_WORK=1 ...   a test that would skip for a missing
#                              capability fails instead (CI sets this)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
root=$(pwd)

say() { printf '\n== %s\n' "$*"; }

# What the tests need. As root, install what is missing; otherwise say what.
missing=()
for tool in bwrap:bubblewrap tmux:tmux gcc:gcc git:git setpriv:util-linux python3:python3 curl:curl npm:npm; do
	command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool##*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ]; then
		say "installing ${missing[*]}"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
	else
		echo "missing: ${missing[*]} (install them, or run this script as root)" >&2
		exit 1
	fi
fi

# The real agent CLIs the provider tests run (the versions verified in
# provider/VERIFIED.md).
if ! command -v claude >/dev/null 2>&1 || ! command -v codex >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ]; then
		say "installing the agent CLIs from npm"
		npm install -g --no-fund --no-audit @anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0 >/dev/null
	fi
fi

say "static checks"
bad=$(gofmt -l . | grep -v '^vendor/' || true)
if [ -n "$bad" ]; then echo "gofmt would change: $bad" >&2; exit 1; fi
go vet ./...
GOOS=windows go vet ./...
GOOS=windows go build -o /dev/null ./...
GOOS=darwin go build -o /dev/null ./...

# Binaries and test binaries live outside /tmp (the box replaces /tmp) in a
# folder every user can read.
work=$(mktemp -d /var/tmp/agentbox-test-XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
CGO_ENABLED=0 go build -tags urfave_cli_no_docs -o "$work/agentbox" .
export AGENTBOX_BIN="$work/agentbox"

say "tests as $(id -un)"
go test -count=1 ./...

if [ "$(id -u)" = 0 ]; then
	user=agentbox-test
	id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
	uhome=$(getent passwd "$user" | cut -d: -f6)
	say "tests as the unprivileged user $user"
	# The network tests reach their test names through /etc/hosts, where the
	# proxy resolves any name on the host. As root they add the names
	# themselves; for this run add them here (the list in
	# integration/network_test.go's testNames) and put the file back after.
	cp /etc/hosts "$work/hosts"
	trap 'cat "$work/hosts" > /etc/hosts; rm -rf "$work"' EXIT
	[ -z "$(tail -c1 /etc/hosts)" ] || echo >> /etc/hosts
	echo "127.0.0.1 example.test other.test wild.test api.wild.test evil.wild.test # agentbox network tests" >> /etc/hosts
	# A copy of the tree the user can read (the checkout may be under /root).
	cp -a "$root" "$work/src"
	chmod -R a+rX "$work"
	pkgs=$(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./...)
	status=0
	for pkg in $pkgs; do
		rel=${pkg#$(go list -m)}
		rel=${rel#/}
		name=$(echo "${rel:-root}" | tr / _)
		go test -c -o "$work/$name.test" "$pkg"
		[ -f "$work/$name.test" ] || continue
		chmod 755 "$work/$name.test"
		echo "--- $pkg"
		if ! (cd "$work/src/$rel" && setpriv --reuid="$user" --regid="$user" --init-groups \
			env -i PATH="/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin" HOME="$uhome" \
			AGENTBOX_BIN="$AGENTBOX_BIN" AGENTBOX_MUST_WORK="${AGENTBOX_MUST_WORK:-}" GOFLAGS=-mod=mod \
			GOCACHE="$uhome/.cache/go-build" GOPATH="$uhome/go" \
			"$work/$name.test" -test.count=1); then
			status=1
		fi
	done
	cat "$work/hosts" > /etc/hosts
	[ $status = 0 ] || { echo "tests failed as $user" >&2; exit 1; }
fi

if [ -x scripts/test-windows.sh ]; then
	say "windows"
	scripts/test-windows.sh
fi
say "all tests passed"
