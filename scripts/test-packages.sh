#!/usr/bin/env bash
# The Debian packages scripts/test.sh installs for what its tests need and
# this machine lacks, one a line (nothing when nothing is missing). The one
# list both test.sh (which installs it) and scripts/fresh-root-check.sh
# (which simulates installing it on a fresh Debian root, so that a conflict
# between packages fails there before a user meets it) compute.
#
# Every package here must co-install with every other on Debian 12 and
# Ubuntu 24.04: gcc-multilib, for one, removes gcc-aarch64-linux-gnu, so the
# 32-bit test programs are built with the i686 cross compiler instead.
set -euo pipefail
missing=()
for tool in bwrap:bubblewrap tmux:tmux gcc:gcc git:git setpriv:util-linux unshare:util-linux prlimit:util-linux \
	script:bsdutils python3:python3 curl:curl make:make zsh:zsh fish:fish man:man-db dpkg-deb:dpkg \
	direnv:direnv pre-commit:pre-commit strace:strace hg:mercurial brz:brz \
	aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu qemu-aarch64-static:qemu-user-static; do
	command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool##*:}")
done
# scripts/fresh-root-check.sh's (in /usr/sbin, not on an ordinary user's PATH).
command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || missing+=(debootstrap)
# scripts/fresh-root-check.sh makes a Debian and an Ubuntu root: each needs
# the other distribution's archive keys. Debian 12 has no package of
# Ubuntu's (fresh-root-check.sh fetches Debian 13's ubuntu-keyring itself).
os_id= os_version=
if [ -r /etc/os-release ]; then
	os_id=$(. /etc/os-release && echo "${ID:-}")
	os_version=$(. /etc/os-release && echo "${VERSION_ID:-}")
fi
case $os_id in
ubuntu) [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] || missing+=(debian-archive-keyring) ;;
debian)
	if [ ! -f /usr/share/keyrings/ubuntu-archive-keyring.gpg ] && { [ -z "$os_version" ] || [ "${os_version%%.*}" -ge 13 ]; }; then
		missing+=(ubuntu-keyring)
	fi
	;;
esac
# npm (the registry's tests, and the agent CLIs' install): Debian's npm
# brings Debian's nodejs, and conflicts with a nodejs from elsewhere
# (NodeSource's includes npm), so it is asked for only when there is no
# node at all, or Debian's node without npm.
if ! command -v npm >/dev/null 2>&1; then
	if ! command -v node >/dev/null 2>&1 || dpkg-query -W -f '${Version}\n' nodejs 2>/dev/null | grep -qv nodesource; then
		missing+=(npm)
	else
		echo "test-packages: node is installed without npm (not Debian's): install npm the way node was installed" >&2
		exit 1
	fi
fi
# The completion tests load bash's completion the way a login shell does.
[ -f /usr/share/bash-completion/bash_completion ] || missing+=(bash-completion)
# The pip tests make a virtual environment (Debian splits venv out).
command -v python3 >/dev/null 2>&1 && python3 -m venv --help >/dev/null 2>&1 || missing+=(python3-venv)
# The filesystem log's tests run a dynamically linked 32-bit program (under
# qemu-user: the box's seccomp filter kills native i386 system calls), built
# with the i686 cross compiler, whose C library lives under
# /usr/i686-linux-gnu (gcc-multilib's would remove the aarch64 compiler).
[ "$(uname -m)" != x86_64 ] || command -v i686-linux-gnu-gcc >/dev/null 2>&1 || missing+=(gcc-i686-linux-gnu)
# Each once, in the order first named.
declare -A seen=()
for p in "${missing[@]}"; do
	[ -n "${seen[$p]:-}" ] && continue
	seen[$p]=1
	echo "$p"
done
