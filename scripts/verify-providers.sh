#!/usr/bin/env bash
# verify-providers.sh re-runs the confirming checks behind provider/registry.go
# (see provider/VERIFIED.md): each real agent CLI runs a fixed list of steps
# that need no API key and no internet, first unconfined and then under
# bubblewrap with everything read-only except the workspace, a private /tmp
# and the provider's declared writable paths. It fails when a confined step
# exits differently, prints EROFS/EACCES/"read-only", loses a state write, or
# anything outside the allowed paths changed on the host.
#
# Usage: scripts/verify-providers.sh [--users "root abtest"] [--clis "claude codex"] [--keep]
# Needs: root (to switch users with setpriv), bwrap, script, timeout, npm.
# It will be replaced by an agentbox-based integration test (issue 3).
set -u

# The declared writable paths, relative to HOME. registry_test.go checks that
# these lines agree with provider/registry.go.
CLAUDE_WRITABLE="~/.claude"
CODEX_WRITABLE="~/.codex"
# Environment set inside the box, as agentbox must set it (see VERIFIED.md).
CLAUDE_ENV="CLAUDE_CONFIG_DIR=~/.claude"
CODEX_ENV=""

users="root abtest"
clis="claude codex"
keep=0
self=$(readlink -f "$0")

# tty N CMD...: run CMD on a pseudo-terminal. For N>0 press Enter after N
# seconds (claude doctor waits for it); for N=0 press Ctrl-C twice after 8
# seconds (leaves an interactive TUI). Exits with CMD's status.
if [ "${1:-}" = --tty ]; then
	shift
	n=$1
	shift
	if [ "$n" -gt 0 ]; then
		(sleep "$n"; printf '\r'; sleep 3) | timeout 40 script -qec "$*" /dev/null
	else
		(sleep 8; printf '\003'; sleep 1; printf '\003'; sleep 5) | timeout 40 script -qec "$*" /dev/null
	fi
	exit
fi

while [ $# -gt 0 ]; do
	case $1 in
	--users) users=$2; shift 2 ;;
	--clis) clis=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	*) echo "usage: $0 [--users LIST] [--clis LIST] [--keep]" >&2; exit 2 ;;
	esac
done

die() { echo "verify-providers: error: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "run as root (it switches to the test users with setpriv)"
for t in bwrap script timeout setpriv git find; do
	command -v "$t" >/dev/null || die "$t not found"
done
if ! command -v claude >/dev/null || ! command -v codex >/dev/null; then
	npm install -g @anthropic-ai/claude-code @openai/codex || die "npm install failed"
fi
echo "claude $(claude --version)"
echo "codex $(codex --version)"
echo "bwrap $(bwrap --version)"

# The steps. Each runs in the workspace (a git repository) with a clean
# environment; "tty" runs the rest on a pseudo-terminal.
claude_steps() {
	step version claude --version
	step help claude --help
	step auth claude auth status
	step mcplist claude mcp list
	step mcpadd claude mcp add -s user abv-probe -- true
	step mcpcheck claude mcp get abv-probe
	step mcprm claude mcp remove -s user abv-probe
	step plugins claude plugin list
	step print claude -p hi
	step doctor tty 10 claude doctor
	step tui tty 0 claude
	step print2 claude -p hi
}
codex_steps() {
	step version codex --version
	step help codex --help
	step login codex login status
	step features codex features list
	step mcplist codex mcp list
	step mcpadd codex mcp add abv-probe -- true
	step mcpcheck codex mcp get abv-probe
	step mcprm codex mcp remove abv-probe
	step doctor codex doctor --summary
	step exec timeout 15 codex exec hi
	step execnogit timeout 15 codex exec --skip-git-repo-check -C /tmp hi
	step execdfa timeout 15 codex -s danger-full-access exec hi
	step tui tty 0 codex
}

# run MODE USER CLI DIR OUT: run the steps of CLI as USER with HOME=DIR/home
# in the workspace DIR/ws; MODE is plain or box. Outputs and exit statuses
# (OUT/rc) go to OUT.
run() {
	local mode=$1 user=$2 cli=$3 dir=$4 out=$5
	local home=$dir/home ws=$dir/ws var
	local -a envs=(HOME="$home" USER="$user" LOGNAME="$user" PATH=/usr/local/bin:/usr/bin:/bin
		TERM=xterm-256color LANG=C.UTF-8 SHELL=/bin/bash)
	local -a box=()
	if [ "$mode" = box ]; then
		envs+=(TMPDIR=/tmp)
		var=${cli^^}_ENV
		for e in ${!var}; do envs+=("${e/\~/$home}"); done
		box=(bwrap --ro-bind / / --dev /dev --proc /proc --unshare-pid --die-with-parent
			--tmpfs /tmp --bind "$ws" "$ws")
		# As root, drop capabilities: root with CAP_SYS_ADMIN could remount / read-write.
		[ "$user" = root ] && box+=(--cap-drop ALL)
		var=${cli^^}_WRITABLE
		for w in ${!var}; do
			w=${w/\~/$home}
			box+=(--bind "$w" "$w")
		done
		box+=(--chdir "$ws" --)
	fi
	step() {
		local name=$1
		shift
		[ "$1" = tty ] && { shift; set -- "$self" --tty "$@"; }
		(cd "$ws" && setpriv --reuid="$user" --regid="$user" --init-groups \
			"${box[@]}" env -i "${envs[@]}" "$@" </dev/null >"$out/$name.out" 2>&1)
		echo "$name $?" >>"$out/rc"
	}
	mkdir -p "$out"
	: >"$out/rc"
	"${cli}_steps"
}

# fresh USER DIR: an empty home and a one-commit git workspace owned by USER.
fresh() {
	local user=$1 dir=$2
	mkdir -p "$dir/home" "$dir/ws"
	git -C "$dir/ws" init -q
	git -C "$dir/ws" -c user.name=verify -c user.email=verify@localhost commit -q --allow-empty -m init
	chown -R "$user:" "$dir"
}

# stop_under DIR: stop the processes whose executable lies under DIR.
stop_under() {
	local exe pid
	for exe in /proc/[0-9]*/exe; do
		pid=${exe#/proc/}
		pid=${pid%/exe}
		case $(readlink "$exe" 2>/dev/null) in "$1"/*)
			echo "stopping leftover process $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline")"
			kill "$pid" ;;
		esac
	done
}

scratch=$(mktemp -d /var/tmp/agentbox-verify.XXXXXX)
chmod 755 "$scratch"
fail=0
bad() { echo "FAIL $*"; fail=1; }

for user in $users; do
	id "$user" >/dev/null 2>&1 || die "no user $user"
	for cli in $clis; do
		base=$scratch/$user-$cli
		fresh "$user" "$base/plain"
		run plain "$user" "$cli" "$base/plain" "$base/out.plain"
		# Unconfined, the codex TUI leaves a background app server running from
		# a copy of itself under ~/.codex/packages; stop the ones this run started.
		stop_under "$base/plain/home"
		# Confined twice on one home: first as a new user, then with state.
		fresh "$user" "$base/box"
		var=${cli^^}_WRITABLE
		for w in ${!var}; do
			# Provider folders must exist before they can be bound; agentbox
			# creates them (0700) like its other own paths.
			w=${w/\~/$base/box/home}
			install -d -m 700 -o "$user" -g "$user" "$w"
		done
		for pass in 1 2; do
			sleep 1
			touch "$base/marker"
			sleep 1
			out=$base/out.box$pass
			run box "$user" "$cli" "$base/box" "$out"
			if ! diff -u "$base/out.plain/rc" "$out/rc"; then
				bad "$user $cli pass $pass: exit statuses differ from the unconfined run"
			fi
			if grep -l -i -E 'EROFS|EACCES|read-only file system|permission denied' "$out"/*.out; then
				bad "$user $cli pass $pass: EROFS/EACCES in the output above"
			fi
			if ! grep -q abv-probe "$out/mcpcheck.out"; then
				bad "$user $cli pass $pass: 'mcp add' did not persist"
			fi
			# Everything that changed on the host since the marker must lie in the
			# workspace or a declared path. Other processes on the machine can
			# write too: AGENTBOX_VERIFY_IGNORE lists extra prefixes to skip.
			allow=("$base/box/ws")
			for w in ${!var}; do allow+=("${w/\~/$base/box/home}"); done
			# Only the timestamps of the folders above them may change.
			exact=("$scratch" "$base" "$base/box" "$base/box/home")
			find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp \
				-o -path "$scratch/*/plain" -o -path "$scratch/*/out.*" \) -prune \
				-o -newer "$base/marker" -print 2>/dev/null |
				while read -r p; do
					ok=0
					for a in "${allow[@]}" ${AGENTBOX_VERIFY_IGNORE:-}; do
						case $p in "$a" | "$a"/*) ok=1 ;; esac
					done
					for a in "${exact[@]}"; do
						[ "$p" = "$a" ] && ok=1
					done
					[ $ok = 1 ] || echo "$p"
				done >"$out/outside"
			if [ -s "$out/outside" ]; then
				bad "$user $cli pass $pass: written outside the declared paths:"
				head -20 "$out/outside" | sed 's/^/  /'
				echo "  ($(wc -l <"$out/outside") paths in all: $out/outside)"
			fi
			echo "$user $cli pass $pass: $(tr '\n' ' ' <"$out/rc")"
		done
	done
done

if [ $keep = 1 ] || [ $fail = 1 ]; then
	echo "outputs kept in $scratch"
else
	rm -rf "$scratch"
fi
[ $fail = 0 ] && echo "verify-providers: ok"
exit $fail
