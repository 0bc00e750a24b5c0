#!/bin/sh
# CI: rebuilds the preloaded refusal log for every platform with the pinned
# compilers and fails if a byte differs from the checked-in libraries (which
# fslog/preload_linux_*.go embed). Needs Debian 12's gcc 12.2.0-14 and
# binutils 2.40-2 (gcc, binutils, gcc-aarch64-linux-gnu,
# binutils-aarch64-linux-gnu).
set -eu
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for platform in x86_64 i686 aarch64; do
	lib=agentbox-fslog-$platform.so
	./build.sh "$platform" "$tmp/$lib"
	if cmp -s "$tmp/$lib" "$lib"; then
		echo "preload: $lib is reproducible ($(sha256sum < "$lib" | cut -c1-16))"
	else
		echo "preload: $lib differs from what preload.c builds to: run fslog/preload/build.sh $platform fslog/preload/$lib and commit it" >&2
		status=1
	fi
done
exit $status
