#!/bin/sh
# Builds agentbox's in-box init: a freestanding static binary (no libc, no
# kernel headers), so the output depends only on the compiler and linker.
#   cinit/build.sh [amd64|arm64] OUT
# Pinned: Debian 12's gcc 12.2.0 and binutils 2.40 (gcc-aarch64-linux-gnu
# for arm64). A different compiler may produce different bytes: CI compares.
set -eu
arch=${1:?arch}; out=${2:?out}
case $out in /*) ;; *) out=$PWD/$out ;; esac
cd "$(dirname "$0")"
case $arch in
amd64) cc=${CC:-gcc}; archflags="-fcf-protection=none" ;;
arm64) cc=${CC:-aarch64-linux-gnu-gcc}; archflags="-mbranch-protection=none" ;;
*) echo "unknown arch $arch" >&2; exit 2 ;;
esac
want="12.2.0"
got=$($cc -dumpfullversion)
[ "$got" = "$want" ] || { echo "cinit: want gcc $want, have $got ($cc): the bytes may differ" >&2; [ -n "${CINIT_ANY_GCC:-}" ] || exit 1; }
# Flags: -nostdinc/-nostdlib/-ffreestanding: nothing from the system but the
# compiler; -fno-ident: no compiler banner (its Debian revision); no build id,
# no unwind tables, no stack protector or CET notes; sections garbage collected;
# -ffile-prefix-map: no build folder in the output; LC_ALL/SOURCE_DATE_EPOCH
# for tools that look at them.
LC_ALL=C SOURCE_DATE_EPOCH=0 $cc -std=c11 -Os -static -nostdlib -nostdinc -ffreestanding -fno-builtin \
	-fno-stack-protector -fno-pie -no-pie -fno-asynchronous-unwind-tables -fno-unwind-tables \
	-fno-ident -ffunction-sections -fdata-sections -ffile-prefix-map="$PWD"=. $archflags \
	-Wall -Wextra -Werror \
	-Wl,--build-id=none -Wl,-z,noexecstack -Wl,-z,norelro -Wl,--gc-sections -Wl,-z,noseparate-code -s \
	-o "$out" init.c
