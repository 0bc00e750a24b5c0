#!/bin/sh
# Builds agentbox's preloaded refusal log for one platform: a freestanding
# shared library (no libc at link time, no kernel headers, no DT_NEEDED), so
# the output depends only on the compiler and linker.
#   preload/build.sh x86_64|i686|aarch64 OUT
# Pinned: Debian 12's gcc 12.2.0 and binutils 2.40 (gcc -m32 for i686, which
# needs no 32-bit C library since nothing is linked; gcc-aarch64-linux-gnu
# for aarch64). A different compiler may produce different bytes: CI compares.
set -eu
platform=${1:?platform}; out=${2:?out}
case $out in /*) ;; *) out=$PWD/$out ;; esac
cd "$(dirname "$0")"
case $platform in
x86_64) cc=${CC:-gcc}; nm=nm; archflags="-m64 -fcf-protection=none" ;;
i686) cc=${CC:-gcc}; nm=nm; archflags="-m32 -march=i686 -fcf-protection=none" ;;
# -mno-outline-atomics: the atomics inline, not calls into libgcc
aarch64) cc=${CC_AARCH64:-aarch64-linux-gnu-gcc}; nm=aarch64-linux-gnu-nm; archflags="-mbranch-protection=none -mno-outline-atomics -Wl,-z,common-page-size=4096" ;;
*) echo "unknown platform $platform" >&2; exit 2 ;;
esac
want="12.2.0"
got=$($cc -dumpfullversion)
[ "$got" = "$want" ] || { echo "preload: want gcc $want, have $got ($cc): the bytes may differ" >&2; [ -n "${CINIT_ANY_GCC:-}" ] || exit 1; }
# Flags: -nostdinc/-nostdlib/-ffreestanding: nothing from the system but the
# compiler; -fvisibility=hidden: only the wrapped functions are exported;
# -fno-ident: no compiler banner; no build id, no unwind tables, no stack
# protector or CET notes; sections garbage collected; -ffile-prefix-map: no
# build folder in the output; LC_ALL/SOURCE_DATE_EPOCH for tools that look
# at them. --hash-style=both: a dynamic linker finds the exports either way.
LC_ALL=C SOURCE_DATE_EPOCH=0 $cc -std=gnu11 -Os -fPIC -shared -nostdlib -nostdinc -ffreestanding -fno-builtin \
	-fvisibility=hidden -fno-stack-protector -fno-asynchronous-unwind-tables -fno-unwind-tables -fno-plt \
	-fno-ident -ffunction-sections -fdata-sections -ffile-prefix-map="$PWD"=. $archflags \
	-Wall -Wextra -Werror \
	-Wl,--build-id=none -Wl,-z,noexecstack -Wl,-z,norelro -Wl,--gc-sections -Wl,--hash-style=both -Wl,-soname,agentbox-fslog.so -s \
	-o "$out" preload.c
# It may need nothing from outside but the weak references it checks for.
undefined=$($nm -D --undefined-only "$out" | awk '$1 != "w" {print $2}')
[ -z "$undefined" ] || { echo "preload: $out needs $undefined from elsewhere" >&2; rm -f "$out"; exit 1; }
