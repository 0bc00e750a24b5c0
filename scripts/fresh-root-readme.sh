#!/usr/bin/env bash
# Does what the README says, on a fresh Debian 12 (and Ubuntu 24.04) root,
# as root and as a new ordinary user: the opening command (apt-get install
# of its packages, make, make install, a confined run), the "Install"
# section's per-user install, the "Using it" commands, the sample policy
# of "A policy" (refused until trusted, then run) and shell-init; as the
# user under both Linux backends (bubblewrap, and --backend landlock).
#
#   scripts/fresh-root-readme.sh                 as root: debian-12 and ubuntu-24.04
#   scripts/fresh-root-readme.sh debian-12       one of them
#
# The fresh roots are the ones scripts/fresh-root-check.sh makes with
# debootstrap (minbase) and keeps in /var/cache/agentbox-fresh-root; this
# script never changes them: it copies one into a folder of its own under
# /var/tmp (removed at the end, however it ends), binds /dev and /sys and
# mounts a /proc there, and enters it as the real root of a new mount
# namespace (pivot_root, not a plain chroot: the kernel refuses user
# namespaces to a chrooted process, so bubblewrap could not run for the
# user and the check would mean nothing). The root shares this machine's
# kernel and network: what the kernel decides (Ubuntu 24.04's AppArmor
# restriction of user namespaces, say) is this machine's, not the
# distribution's; the root checks the distribution's packages and files.
#
# Every command run is read from README.md (the log names its line); a
# command whose agent CLI is not installed in the fresh root (claude,
# codex) runs a small shell command in its place, with the README's flags.
# Two steps stand in for the README's: Go comes from this machine's
# /usr/local/go instead of the README's curl from go.dev (the same
# release, go.mod's; this machine may reach only package registries), and
# the checkout is this working tree's tracked files committed into a new
# git repository instead of a clone. make fetches the modules from the Go
# proxy this machine uses (its GOPROXY and GOSUMDB go into the copied Go's
# go.env). The root has no sudo: the README's `S=...` runs apt-get and
# make install directly as root, as it says.
#
# Each step's whole output goes to /var/tmp/agentbox-fresh-readme-NAME.log
# (kept); a failing step is one line here. Exit 0 when every step did what
# the README says, 1 when one did not, 3 when a root could not be checked
# here (not made yet: run scripts/fresh-root-check.sh; or its mirror
# cannot be reached), which is a failure (1) under AGENTBOX_MUST_WORK=1.
# Every step has a time limit.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf '%s\n' "$*" | fold -s -w 98 | sed -e 's/ *$//' -e '2,$s/^/  /'; }
warn() { say "$@" >&2; }
[ "$(id -u)" = 0 ] || { warn "fresh-root-readme: needs root (mount namespaces, pivot_root)"; exit 2; }
for c in unshare pivot_root git; do
	command -v $c >/dev/null 2>&1 || { warn "fresh-root-readme: needs $c"; exit 2; }
done
[ -x /usr/local/go/bin/go ] || { warn "fresh-root-readme: needs Go in /usr/local/go (the README's)"; exit 2; }

cache=${FRESH_ROOT_CACHE:-/var/cache/agentbox-fresh-root}
repo=$(pwd)

# The README's commands, each with its line number (LINE<TAB>COMMAND).
# block HEADING LANG: the first ```LANG block after the line HEADING.
block() {
	awk -v h="$1" -v l="$2" '
		$0 == h { inh = 1; next }
		inh && !inb && $0 == "```" l { inb = 1; next }
		inb && $0 == "```" { exit }
		inb { printf "%d\t%s\n", NR, $0 }' README.md
}
# The opening block's install-and-run line (it starts S=$(...)).
first=$(block "# agentbox" sh | grep -m1 -P '^\d+\tS=\$\(' || true)
install_lines=$(block "## Install" sh | grep -v -P '^\d+\trm -rf /usr/local/go' || true)
using_lines=$(block "## Using it" sh || true)
policy=$(block "## A policy" toml | cut -f2- || true)
shellinit=$(grep -n -o -m1 'eval "$(agentbox shell-init bash)"' README.md | sed 's/:/\t/' || true)
backend_plan=$(grep -n -o -m1 'agentbox plan --backend landlock' README.md | sed 's/:/\t/' || true)
for v in first install_lines using_lines policy shellinit backend_plan; do
	[ -n "${!v}" ] || { warn "fresh-root-readme: cannot find $v in README.md (this script reads it)"; exit 1; }
done
# The per-user install line: "make install PREFIX=$HOME/.local".
user_install=$(grep -m1 -P '^\d+\tmake install PREFIX=' <<<"$install_lines" | sed 's/[[:space:]]\+#.*$//')
[ -n "$user_install" ] || { warn "fresh-root-readme: README.md's Install names no make install PREFIX=..."; exit 1; }

tmp=
cleanup() {
	[ -n "$tmp" ] || return 0
	# What this script started ends first: the time limit, then every
	# process in the root's mount namespace (named in $tmp/ns by its first
	# process), by id.
	if [ -n "$tpid" ]; then
		kill -9 "$tpid" 2>/dev/null || true
		wait "$tpid" 2>/dev/null || true
		tpid=
	fi
	local ns p
	ns=$(cat "$tmp/ns" 2>/dev/null || true)
	if [ -n "$ns" ]; then
		for p in /proc/[0-9]*; do
			[ "$(readlink "$p/ns/mnt" 2>/dev/null)" != "$ns" ] || kill -9 "${p#/proc/}" 2>/dev/null || true
		done
	fi
	# The mounts are in that namespace only; --one-file-system keeps rm on
	# the copy whatever happens.
	rm -rf --one-file-system "$tmp" || warn "fresh-root-readme: could not remove $tmp"
	tmp=
}
tpid=
trap cleanup EXIT
trap 'exit 130' INT TERM

# check NAME LABEL: does it in a copy of the cached root NAME. Returns 0,
# 1 (a step failed) or 3 (not checked here).
check() {
	local name=$1 label=$2 started=$SECONDS
	local log=/var/tmp/agentbox-fresh-readme-$name.log
	if [ ! -f "$cache/$name/.agentbox-complete" ]; then
		warn "fresh-root-readme: $label: NOT CHECKED: no fresh root in $cache/$name (scripts/fresh-root-check.sh makes it)"
		return 3
	fi
	tmp=$(mktemp -d /var/tmp/agentbox-fresh-readme-XXXXXX)
	local r=$tmp/root
	# fresh-root-check.sh holds the lock while it (re)makes a root.
	(
		flock -w 900 9 || { warn "fresh-root-readme: another check holds $cache/lock"; exit 1; }
		timeout 600 cp -a "$cache/$name" "$r"
	) 9>"$cache/lock" || { warn "fresh-root-readme: $label: could not copy $cache/$name"; return 1; }
	cp /etc/resolv.conf "$r/etc/resolv.conf"
	# The certificate authorities this machine adds to the system's (a
	# TLS-inspecting egress proxy's, say): the root reaches the network
	# through this machine's, so it trusts what this machine does. They take
	# effect only once ca-certificates is installed, as on such a machine.
	mkdir -p "$r/usr/local/share/ca-certificates"
	cp -a /usr/local/share/ca-certificates/. "$r/usr/local/share/ca-certificates/" 2>/dev/null || true
	# Stands in for the README's "curl -fsSL https://go.dev/dl/go1.26.x... | tar -C
	# /usr/local -xz": the same release, from this machine (go.dev cannot be
	# reached here). Its go.env gets this machine's proxy settings.
	timeout 300 cp -a /usr/local/go "$r/usr/local/go"
	printf 'GOPROXY=%s\nGOSUMDB=%s\n' "$(/usr/local/go/bin/go env GOPROXY)" "$(/usr/local/go/bin/go env GOSUMDB)" >>"$r/usr/local/go/go.env"
	# Stands in for the clone: this working tree's tracked files, committed.
	mkdir -p "$r/root/agentbox"
	git ls-files -z | (cd "$repo" && xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh) |
		tar -C "$repo" --null -T - -cf - | tar -C "$r/root/agentbox" -xf -
	git -C "$r/root/agentbox" init -q
	git -C "$r/root/agentbox" add -A
	git -C "$r/root/agentbox" -c user.name=readme -c user.email=readme@example.invalid commit -q -m "checkout"
	local d=$r/agentbox-readme
	mkdir -p "$d"
	printf '%s\n' "$first" >"$d/first"
	printf '%s\n' "$user_install" >"$d/user-install"
	printf '%s\n' "$using_lines" >"$d/using"
	printf '%s\n' "$policy" >"$d/policy.toml"
	printf '%s\n' "$shellinit" >"$d/shell-init"
	printf '%s\n' "$backend_plan" >"$d/backend-plan"
	cp scripts/fresh-root-readme-inside.sh "$d/inside.sh"
	say "fresh-root-readme: $label: doing what the README says in a copy of $cache/$name (log: $log)"
	local status=0
	# The root's own mount namespace: / is the copy (pivot_root), with /proc
	# mounted and /dev, /sys bound from this machine.
	# In the background, so that a signal to this script is handled at once.
	timeout -k 10 2400 unshare --mount --propagation private -- bash -c '
		set -e
		r=$1
		readlink /proc/self/ns/mnt >"$2"
		mount --bind "$r" "$r"
		mount -t proc proc "$r/proc"
		mount --rbind /dev "$r/dev"
		mount --rbind /sys "$r/sys"
		mkdir -p "$r/.oldroot"
		cd "$r"
		pivot_root . .oldroot
		umount -l /.oldroot
		rmdir /.oldroot
		exec chroot . /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			HOME=/root LANG=C.UTF-8 /bin/bash /agentbox-readme/inside.sh' sh "$r" "$tmp/ns" &
	tpid=$!
	wait "$tpid" || status=$?
	tpid=
	cp "$d/log" "$log" 2>/dev/null || true
	cleanup
	case $status in
	0) say "fresh-root-readme: $label: the README's commands ran as it says, as root and as a user ($((SECONDS - started)) s)" ;;
	124 | 137) warn "fresh-root-readme: $label: FAILED: no end in 40 minutes (log: $log)" ;;
	3) warn "fresh-root-readme: $label: NOT CHECKED: see above (log: $log)" ;;
	*) warn "fresh-root-readme: $label: FAILED: the README's commands did not all do what it says (above; log: $log)" ;;
	esac
	case $status in 0 | 3) return "$status" ;; *) return 1 ;; esac
}

want=("$@")
[ ${#want[@]} -gt 0 ] || want=(debian-12 ubuntu-24.04)
failed=() unchecked=()
for name in "${want[@]}"; do
	status=0
	case $name in
	debian-12) check debian-12 "Debian 12" || status=$? ;;
	ubuntu-24.04) check ubuntu-24.04 "Ubuntu 24.04" || status=$? ;;
	*)
		warn "fresh-root-readme: $name: not a root this script knows (debian-12, ubuntu-24.04)"
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
	warn "fresh-root-readme: FAILED on ${failed[*]}"
	exit 1
fi
if [ ${#unchecked[@]} -gt 0 ]; then
	if [ "${AGENTBOX_MUST_WORK:-}" = 1 ]; then
		warn "fresh-root-readme: FAILED: ${unchecked[*]} not checked and AGENTBOX_MUST_WORK=1"
		exit 1
	fi
	warn "fresh-root-readme: warning: ${unchecked[*]} not checked (above)"
	exit 3
fi
