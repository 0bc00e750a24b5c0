#!/bin/sh
# CI: rebuilds the C init for every architecture with the pinned compilers
# and fails if a byte differs from the checked-in binaries (which
# cinit/embed_linux_*.go embed). Needs Debian 12's gcc 12.2.0-14 and binutils 2.40-2
# (gcc, binutils, gcc-aarch64-linux-gnu, binutils-aarch64-linux-gnu).
set -eu
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for arch in amd64 arm64; do
	./build.sh "$arch" "$tmp/init-linux-$arch"
	if cmp -s "$tmp/init-linux-$arch" "init-linux-$arch"; then
		echo "cinit: init-linux-$arch is reproducible ($(sha256sum < "init-linux-$arch" | cut -c1-16))"
	else
		echo "cinit: init-linux-$arch differs from what init.c builds to: run cinit/c/build.sh $arch cinit/c/init-linux-$arch and commit it" >&2
		status=1
	fi
done
exit $status
