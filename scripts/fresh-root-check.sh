#!/usr/bin/env bash
# Checks that the README's install steps and scripts/test.sh's can install
# what they name on a fresh Debian 12: a minimal Debian 12 root made with
# debootstrap (minbase), where apt-get simulates installing, together, the
# README's packages, the list scripts/test-packages.sh computes in that root
# (the list test.sh installs), and what scripts/test-windows.sh installs. It
# fails when apt-get cannot, or would remove a package to make room (two
# packages that conflict), so a conflict fails here before a user meets it.
#
#   scripts/fresh-root-check.sh     as root, with debootstrap installed
#
# The root is made once and kept in /var/cache/agentbox-fresh-root (a run
# after that takes seconds: apt-get update in the root and the simulation);
# FRESH_ROOT_REBUILD=1 makes it again. The mirror is the one apt uses here
# (FRESH_ROOT_MIRROR to choose another). Every step has a time limit.
#
# Ubuntu 24.04 is not checked here: that needs an Ubuntu mirror and a
# debootstrap that knows noble.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "fresh-root-check: needs root (debootstrap and chroot)" >&2; exit 2; }
command -v debootstrap >/dev/null 2>&1 || { echo "fresh-root-check: needs debootstrap (apt-get install debootstrap)" >&2; exit 2; }

suite=bookworm
cache=/var/cache/agentbox-fresh-root
root=$cache/debian-12
# The README's install command's packages (README.md, "Install").
readme_pkgs=(bubblewrap make)
# scripts/test-windows.sh's.
windows_pkgs=(wine64 gcc-mingw-w64-x86-64)

# The Debian mirror apt uses here: the first deb.debian.org-style URI for
# the main archive in apt's sources (deb822 or one-line form).
mirror=${FRESH_ROOT_MIRROR:-}
if [ -z "$mirror" ]; then
	mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v "^ *#" |
		grep -oE 'https?://[^ ]+/debian/?( |$)' | head -n 1 | tr -d ' ' || true)
	mirror=${mirror:-http://deb.debian.org/debian}
fi
security=${mirror%/debian*}/debian-security

install -d -m 755 "$cache"
exec 9>"$cache/lock"
flock -w 900 9 || { echo "fresh-root-check: another check holds $cache/lock" >&2; exit 1; }

if [ -n "${FRESH_ROOT_REBUILD:-}" ] || [ ! -f "$root/.agentbox-complete" ]; then
	rm -rf "$root"
	echo "fresh-root-check: making a minimal Debian 12 root in $root from $mirror (a few minutes, once)"
	if ! timeout 900 debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$cache/debootstrap.log" 2>&1; then
		tail -n 20 "$cache/debootstrap.log" >&2
		echo "fresh-root-check: debootstrap failed (its output: $cache/debootstrap.log)" >&2
		rm -rf "$root"
		exit 1
	fi
	printf 'deb %s %s main\ndeb %s %s-updates main\ndeb %s %s-security main\n' \
		"$mirror" "$suite" "$mirror" "$suite" "$security" "$suite" >"$root/etc/apt/sources.list"
	touch "$root/.agentbox-complete"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"

# In the root: the package lists, then the list test.sh would install
# there, computed by the same script, then the simulation. The root has no
# /proc or /dev mounted: apt-get's simulation and the list need neither.
in_root() { timeout 600 chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C "$@"; }
if ! in_root apt-get update >"$cache/update.log" 2>&1; then
	tail -n 20 "$cache/update.log" >&2
	echo "fresh-root-check: apt-get update failed in the root" >&2
	exit 1
fi
list=$(in_root bash -s <scripts/test-packages.sh)
mapfile -t test_pkgs <<<"$list"
# FRESH_ROOT_EXTRA: more packages, space-separated (FRESH_ROOT_EXTRA=gcc-multilib
# shows what a conflict looks like).
read -r -a extra <<<"${FRESH_ROOT_EXTRA:-}"
all=("${readme_pkgs[@]}" "${test_pkgs[@]}" "${windows_pkgs[@]}" "${extra[@]}")
echo "fresh-root-check: apt-get install --simulate on a fresh Debian 12: ${all[*]}"
status=0
in_root apt-get install --simulate "${all[@]}" >"$cache/simulate.log" 2>&1 || status=$?
if [ $status -ne 0 ]; then
	grep -E '^(E:| |The following)' "$cache/simulate.log" | head -n 30 >&2 || true
	echo "fresh-root-check: apt-get cannot install them together on a fresh Debian 12 (its output: $cache/simulate.log)" >&2
	exit 1
fi
if grep '^Remv ' "$cache/simulate.log" >&2; then
	echo "fresh-root-check: installing them together removes the packages above: two of them conflict (apt-get's output: $cache/simulate.log)" >&2
	exit 1
fi
echo "fresh-root-check: they install together ($(grep -c '^Inst ' "$cache/simulate.log") packages, none removed)"
