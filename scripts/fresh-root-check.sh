#!/usr/bin/env bash
# Checks that the README's install steps and scripts/test.sh's can install
# what they name on a fresh Debian 12 and a fresh Ubuntu 24.04: in a
# minimal root of each made with debootstrap (minbase), apt-get simulates
# installing, together, the README's packages, the list
# scripts/test-packages.sh computes in that root (the list test.sh
# installs; it picks each distribution's names), and what
# scripts/test-windows.sh installs. It fails when apt-get cannot, or would
# remove a package to make room (two packages that conflict), so a
# conflict fails here before a user meets it.
#
#   scripts/fresh-root-check.sh               as root, with debootstrap installed
#   scripts/fresh-root-check.sh debian-12     one of them (or ubuntu-24.04)
#
# Each root is made once and kept in /var/cache/agentbox-fresh-root (a run
# after that takes seconds: apt-get update in the root and the
# simulation); FRESH_ROOT_REBUILD=1 makes them again. Debian's mirror is the
# one apt uses here (FRESH_ROOT_MIRROR to choose another), Ubuntu's
# http://archive.ubuntu.com/ubuntu (FRESH_ROOT_UBUNTU_MIRROR). Ubuntu's
# archive key comes from /usr/share/keyrings/ubuntu-archive-keyring.gpg
# (package ubuntu-keyring) or, where apt here has no such package (Debian
# 12), from Debian 13's ubuntu-keyring, which apt fetches and checks
# against Debian's own archive keys into the cache. A mirror that cannot be
# reached is said in one line; the distribution is then not checked, which
# fails the check under AGENTBOX_MUST_WORK=1 (exit 1) and is a warning
# otherwise (exit 3; 0 when every root was checked).
# Every step has a time limit.
set -euo pipefail
cd "$(dirname "$0")/.."
# say and warn print a message folded to 100 columns (continuations
# indented), on stdout and stderr.
say() { printf '%s\n' "$*" | fold -s -w 98 | sed -e 's/ *$//' -e '2,$s/^/  /'; }
warn() { say "$@" >&2; }
[ "$(id -u)" = 0 ] || { warn "fresh-root-check: needs root (debootstrap and chroot)"; exit 2; }
command -v debootstrap >/dev/null 2>&1 || { warn "fresh-root-check: needs debootstrap (apt-get install debootstrap)"; exit 2; }

cache=/var/cache/agentbox-fresh-root
# The README's install command's packages (README.md: the opening command;
# curl for "Install"'s Go download).
readme_pkgs=(bubblewrap make ca-certificates curl)
# scripts/test-windows.sh's.
windows_pkgs=(wine64 gcc-mingw-w64-x86-64)

# The Debian mirror apt uses here: the first deb.debian.org-style URI for
# the main archive in apt's sources (deb822 or one-line form).
debian_mirror=${FRESH_ROOT_MIRROR:-}
if [ -z "$debian_mirror" ]; then
	debian_mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v "^ *#" |
		grep -oE 'https?://[^ ]+/debian/?( |$)' | head -n 1 | tr -d ' ' || true)
	debian_mirror=${debian_mirror:-http://deb.debian.org/debian}
fi
debian_mirror=${debian_mirror%/}
ubuntu_mirror=${FRESH_ROOT_UBUNTU_MIRROR:-http://archive.ubuntu.com/ubuntu}
ubuntu_mirror=${ubuntu_mirror%/}

install -d -m 755 "$cache"
exec 9>"$cache/lock"
flock -w 900 9 || { warn "fresh-root-check: another check holds $cache/lock"; exit 1; }

# reachable URL: whether URL answers within 20 seconds (curl, else wget,
# else bash's /dev/tcp to its host's port 80); sets why when not.
why=
reachable() {
	local url=$1 out
	if command -v curl >/dev/null 2>&1; then
		out=$(curl -fsS -o /dev/null --max-time 20 "$url" 2>&1) && return 0
		out=${out#curl: ([0-9]*) }
	elif command -v wget >/dev/null 2>&1; then
		out=$(timeout 20 wget -q -O /dev/null "$url" 2>&1) && return 0
	else
		local hostport=${url#*://}
		hostport=${hostport%%/*}
		out=$(timeout 20 bash -c "exec 3<>/dev/tcp/${hostport%%:*}/80" 2>&1) && return 0
	fi
	why=${out:-no answer in 20 seconds}
	return 1
}

# ubuntu_keyring: the path of Ubuntu's archive keyring, fetched into the
# cache when this machine has none (see above).
ubuntu_keyring() {
	local k=/usr/share/keyrings/ubuntu-archive-keyring.gpg
	if [ -f "$k" ]; then
		echo "$k"
		return
	fi
	k=$cache/ubuntu-keyring/usr/share/keyrings/ubuntu-archive-keyring.gpg
	if [ -f "$k" ]; then
		echo "$k"
		return
	fi
	local d=$cache/ubuntu-keyring.apt
	rm -rf "$d" && mkdir -p "$d/sources" "$d/lists/partial" "$d/get"
	printf 'Types: deb\nURIs: %s\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
		"$debian_mirror" >"$d/sources/trixie.sources"
	local opts=(-o "Dir::Etc::SourceList=$d/none.list" -o "Dir::Etc::SourceParts=$d/sources" -o "Dir::State::Lists=$d/lists"
		-o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= -o APT::Sandbox::User=root)
	if ! (timeout 300 apt-get "${opts[@]}" update && cd "$d/get" && timeout 300 apt-get "${opts[@]}" download ubuntu-keyring) >"$d.log" 2>&1; then
		tail -n 5 "$d.log" >&2
		warn "fresh-root-check: cannot fetch Debian 13's ubuntu-keyring (apt's output: $d.log); install ubuntu-keyring"
		return 1
	fi
	dpkg-deb -x "$d"/get/ubuntu-keyring_*.deb "$cache/ubuntu-keyring"
	rm -rf "$d"
	echo "$k"
}

# check NAME LABEL SUITE MIRROR: makes (once) the minimal root NAME of
# SUITE from MIRROR and simulates the install there. Returns 0 when they
# install together, 1 when not, 3 when the mirror cannot be reached.
check() {
	local name=$1 label=$2 suite=$3 mirror=$4
	local root=$cache/$name log=$cache/$name
	local started=$SECONDS
	if ! reachable "$mirror/dists/$suite/Release"; then
		warn "fresh-root-check: $label: NOT CHECKED: its mirror $mirror cannot be reached ($why)"
		return 3
	fi
	if [ -n "${FRESH_ROOT_REBUILD:-}" ] || [ ! -f "$root/.agentbox-complete" ]; then
		rm -rf "$root"
		local args=(--variant=minbase)
		local sources
		case $name in
		debian-*)
			sources=$(printf 'deb %s %s main\ndeb %s %s-updates main\ndeb %s %s-security main\n' \
				"$mirror" "$suite" "$mirror" "$suite" "${mirror%/debian*}/debian-security" "$suite")
			args+=("$suite" "$root" "$mirror")
			;;
		ubuntu-*)
			local keyring
			keyring=$(ubuntu_keyring) || return 1
			sources=$(printf 'deb %s %s main universe\ndeb %s %s-updates main universe\ndeb %s %s-security main universe\n' \
				"$mirror" "$suite" "$mirror" "$suite" "$mirror" "$suite")
			args+=("--keyring=$keyring" "$suite" "$root" "$mirror")
			# An older debootstrap (Debian 12's) has no script named
			# after this release; every Ubuntu release uses gutsy's.
			[ -e "/usr/share/debootstrap/scripts/$suite" ] || args+=(/usr/share/debootstrap/scripts/gutsy)
			;;
		esac
		say "fresh-root-check: making a minimal $label root in $root from $mirror (a minute or a few, once)"
		if ! timeout 900 debootstrap "${args[@]}" >"$log.debootstrap.log" 2>&1; then
			tail -n 20 "$log.debootstrap.log" >&2
			warn "fresh-root-check: $label: debootstrap failed (its output: $log.debootstrap.log)"
			rm -rf "$root"
			return 1
		fi
		printf '%s\n' "$sources" >"$root/etc/apt/sources.list"
		touch "$root/.agentbox-complete"
	fi
	cp /etc/resolv.conf "$root/etc/resolv.conf"

	# In the root: the package lists, then the list test.sh would install
	# there, computed by the same script, then the simulation. The root has
	# no /proc or /dev mounted: apt-get's simulation and the list need
	# neither.
	in_root() { timeout 600 chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C "$@"; }
	if ! in_root apt-get update >"$log.update.log" 2>&1; then
		tail -n 20 "$log.update.log" >&2
		warn "fresh-root-check: $label: apt-get update failed in the root (its output: $log.update.log)"
		return 1
	fi
	local list
	list=$(in_root bash -s <scripts/test-packages.sh) || {
		warn "fresh-root-check: $label: scripts/test-packages.sh failed in the root"
		return 1
	}
	local test_pkgs=()
	[ -z "$list" ] || mapfile -t test_pkgs <<<"$list"
	# FRESH_ROOT_EXTRA: more packages, space-separated (FRESH_ROOT_EXTRA=gcc-multilib
	# shows what a conflict looks like).
	local extra=()
	read -r -a extra <<<"${FRESH_ROOT_EXTRA:-}"
	local all=("${readme_pkgs[@]}" "${test_pkgs[@]}" "${windows_pkgs[@]}" "${extra[@]}")
	say "fresh-root-check: $label: apt-get install --simulate ${all[*]}"
	local status=0
	in_root apt-get install --simulate "${all[@]}" >"$log.simulate.log" 2>&1 || status=$?
	if [ $status -ne 0 ]; then
		grep -E '^(E:| |The following)' "$log.simulate.log" | head -n 30 >&2 || true
		warn "fresh-root-check: $label: apt-get cannot install them together (its output: $log.simulate.log)"
		return 1
	fi
	if grep '^Remv ' "$log.simulate.log" >&2; then
		warn "fresh-root-check: $label: installing them together removes the packages above: two of them conflict (apt-get's output: $log.simulate.log)"
		return 1
	fi
	say "fresh-root-check: $label: they install together ($(grep -c '^Inst ' "$log.simulate.log") packages, none removed; $((SECONDS - started)) s)"
}

want=("$@")
[ ${#want[@]} -gt 0 ] || want=(debian-12 ubuntu-24.04)
failed=() unchecked=()
for name in "${want[@]}"; do
	status=0
	case $name in
	debian-12) check debian-12 "Debian 12" bookworm "$debian_mirror" || status=$? ;;
	ubuntu-24.04) check ubuntu-24.04 "Ubuntu 24.04" noble "$ubuntu_mirror" || status=$? ;;
	*)
		warn "fresh-root-check: $name: not a root this script makes (debian-12, ubuntu-24.04)"
		exit 2
		;;
	esac
	case $status in
	0) ;;
	3) unchecked+=("$name") ;;
	*) failed+=("$name") ;;
	esac
done
if [ ${#failed[@]} -gt 0 ]; then
	warn "fresh-root-check: FAILED on ${failed[*]}"
	exit 1
fi
if [ ${#unchecked[@]} -gt 0 ]; then
	if [ "${AGENTBOX_MUST_WORK:-}" = 1 ]; then
		warn "fresh-root-check: FAILED: ${unchecked[*]} not checked (its mirror cannot be reached) and AGENTBOX_MUST_WORK=1"
		exit 1
	fi
	warn "fresh-root-check: warning: ${unchecked[*]} not checked (its mirror cannot be reached)"
	exit 3
fi
