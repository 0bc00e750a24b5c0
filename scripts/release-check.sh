#!/usr/bin/env bash
# The release configuration checked the way a release uses it: `goreleaser
# check`, then a snapshot build into ./dist (archives, .deb and .rpm with the
# man page and completions, checksums.txt), and a look inside what it made.
# Nothing is published. scripts/test.sh runs this, so CI does.
#
# GoReleaser is pinned and installed with `go install` from the Go module
# proxy when this exact version is missing (a few minutes the first time).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
version=v2.17.0
gopath=$(go env GOPATH)
gr="$gopath/bin/goreleaser"
if ! "$gr" --version 2>/dev/null | grep -Eq "^GitVersion: +$version\$"; then
	echo "installing goreleaser $version (go install; this takes a few minutes the first time)"
	GOFLAGS= go install "github.com/goreleaser/goreleaser/v2@$version"
fi

echo "goreleaser check"
"$gr" check

echo "goreleaser snapshot build (into ./dist)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "$gr" release --snapshot --clean >"$log" 2>&1; then
	cat "$log" >&2
	echo "goreleaser snapshot build failed" >&2
	exit 1
fi

echo "checking what the snapshot made"
(cd dist && sha256sum --quiet -c checksums.txt)
deb=$(ls dist/agentbox_*_linux_amd64.deb)
contents=$(dpkg-deb -c "$deb")
for f in ./usr/bin/agentbox ./usr/share/man/man1/agentbox.1 \
	./usr/share/bash-completion/completions/agentbox \
	./usr/share/zsh/vendor-completions/_agentbox \
	./usr/share/fish/vendor_completions.d/agentbox.fish; do
	grep -q " $f\$" <<<"$contents" || { echo "$deb lacks $f" >&2; exit 1; }
done
ls dist/agentbox_*_linux_amd64.rpm dist/agentbox_*_linux_arm64.deb dist/agentbox_*_windows_amd64.zip >/dev/null
bin=dist/agentbox_linux_amd64_v1/agentbox
"$bin" --version | head -1 | grep -q '^agentbox [0-9].*-snapshot$' || { echo "$bin --version: $("$bin" --version)" >&2; exit 1; }
echo "release check passed: $(ls dist | grep -c '\.\(deb\|rpm\|tar\.gz\|zip\)$') packages and archives"
