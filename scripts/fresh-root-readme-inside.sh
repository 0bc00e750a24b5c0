#!/bin/bash
# Run by scripts/fresh-root-readme.sh as root inside a copy of a fresh root
# (it is that root's /): does what the README says, as root and then as a
# new ordinary user. The README's commands come in /agentbox-readme (each
# with its line in README.md); the checkout is /root/agentbox. Prints one
# line a step; each step's whole output goes to /agentbox-readme/log. Exit
# 0 when every step did what the README says, 1 when one did not, 3 when
# the distribution's mirror cannot be reached.
set -u
D=/agentbox-readme
log=$D/log
: >"$log"
user=readme
failed=0
say() { printf '%s\n' "$*" | fold -s -w 98 | sed -e 's/ *$//' -e '2,$s/^/  /'; }

# step AS DIR LINE WANT PATTERN CMD: runs CMD with bash as AS (root, or the
# user through a login shell, su -, as one who logs in would) in DIR. WANT
# is an extended regexp the exit status must match, PATTERN regexps (one a
# line) the output must each match (empty: any). LINE names the README's line ("setup" for this
# script's own).
step() {
	local as=$1 dir=$2 line=$3 want=$4 pat=$5 cmd=$6 out status=0 t0=$SECONDS
	printf '\n### as %s in %s, %s\n$ %s\n' "$as" "$dir" "$line" "$cmd" >>"$log"
	if [ "$as" = root ]; then
		out=$(cd "$dir" && timeout -k 5 900 bash -c "$cmd" </dev/null 2>&1) || status=$?
	else
		out=$(timeout -k 5 900 su - "$as" -c "cd $dir && $cmd" </dev/null 2>&1) || status=$?
	fi
	printf '%s\n[exit %d, %d s]\n' "$out" "$status" $((SECONDS - t0)) >>"$log"
	local what="$line: ${cmd//$'\n'/; }"
	[ ${#what} -le 60 ] || what="${what:0:57}..."
	if ! [[ $status =~ ^($want)$ ]]; then
		say "  FAILED as $as: $what: exit $status, not $want; its last line: $(tail -n 1 <<<"$out")"
		failed=1
		return 1
	fi
	local p
	while IFS= read -r p; do
		if [ -n "$p" ] && ! grep -qE -- "$p" <<<"$out"; then
			say "  FAILED as $as: $what: its output does not match /$p/; its last line: $(tail -n 1 <<<"$out")"
			failed=1
			return 1
		fi
	done <<<"$pat"
	local wide
	# Characters, not bytes (— and … are three bytes each).
	wide=$(LC_ALL=C.UTF-8 grep -c -E '^.{101}' <<<"$out" || true)
	if [ "$wide" -gt 0 ]; then
		say "  ok  as $as: $what ($((SECONDS - t0)) s; $wide lines wider than 100 columns)"
	else
		say "  ok  as $as: $what ($((SECONDS - t0)) s)"
	fi
}
# ref PATTERN: "README.md:N" for the first line of README.md matching PATTERN (fixed).
ref() { echo "README.md:$(grep -n -F -m1 -- "$1" /root/agentbox/README.md | cut -d: -f1)"; }

# The mirror first: a mirror out of reach is "not checked here", not a failure.
if ! timeout 300 apt-get update -qq >>"$log" 2>&1; then
	say "  the distribution's mirror cannot be reached: $(tail -n 1 "$log")"
	exit 3
fi

# The ordinary user, with a checkout of their own (a copy of root's, made
# before root builds in it).
useradd -m -s /bin/bash "$user"
cp -a /root/agentbox "/home/$user/agentbox"
chown -R "$user:$user" "/home/$user/agentbox"

IFS=$'\t' read -r n first <"$D/first"
# As root: the README's opening command, as written (the root has no sudo:
# S is empty for root). It installs bubblewrap and make, builds, installs
# and runs a command confined, which bubblewrap keeps from writing /usr.
# What the README says it prints where bubblewrap runs: the version, touch's
# refusal, and the box's /tmp, the checkout's caches and the checkout.
step root /root/agentbox "README.md:$n" 0 \
	$'^agentbox \nRead-only file system\n^writable: /tmp,/root/.local/state/agentbox/caches/[^,]+,/root/agentbox$' "$first" ||
	{ say "  the README's opening command failed: the rest needs agentbox installed"; exit 1; }
step root /root "$(ref 'agentbox doctor')" 0 'bubblewrap' 'agentbox doctor'
step root /root/agentbox "$(ref 'log --denials')" 0 '/usr/x' 'agentbox log --denials'

# Projects of this script's own to run the "Using it" commands in: git
# (not the README's: the user has it for the checkout) and a Makefile.
step root / setup 0 '' 'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq git'
mkproject() { # AS DIR
	step "$1" / setup 0 '' "mkdir -p $2 ~/.ssh && cd $2 && git init -q && printf 'all:\n\t@echo built\ntest:\n\t@echo tested > tested.txt\n' >Makefile && echo key >~/.ssh/id_test"
}

# using AS DIR RUNFLAGS: the "Using it" commands; RUNFLAGS go after "run"
# and "plan" (--backend landlock). An agent CLI not installed here is
# replaced by a small command; the README's flags are kept.
using() {
	local as=$1 dir=$2 flags=$3 n cmd prefix rest pat
	step "$as" "$dir" "$(ref 'agentbox run -- sh')" 0 '' "agentbox run $flags -- true"
	step "$as" "$dir" setup 0 '' "rm -f f; agentbox run $flags -- sh -c 'echo hi > f' && grep -qx hi f"
	while IFS=$'\t' read -r n cmd; do
		cmd=$(sed 's/[[:space:]]\+#.*$//' <<<"$cmd")
		[ -n "$cmd" ] || continue
		pat=
		prefix=${cmd%% -- *}
		rest=
		[ "$prefix" = "$cmd" ] || rest=${cmd#* -- }
		case $prefix in
		"agentbox run"*)
			case $rest in
			claude | codex)
				rest="sh -c 'cat ~/.ssh/id_test 2>&1; echo ran'"
				pat='^ran$'
				case $prefix in
				*"--deny ~/.ssh"*) pat='(No such file|Permission denied)' ;;
				*--workspace*--task*)
					rest="sh -c pwd"
					pat=$(sed -E 's/.*--workspace ([^ ]+) --task ([^ ]+).*/agent-work\/\1\/\2$/' <<<"$prefix")
					;;
				esac
				;;
			"make test") pat='' ;;
			make) pat='^built$' ;;
			esac
			prefix="agentbox run $flags${prefix#agentbox run}"
			;;
		"agentbox plan --argv"*)
			# The bwrap command line: for bubblewrap only, as the README says.
			[ -z "$flags" ] || continue
			;;
		"agentbox plan"*) prefix="agentbox plan $flags${prefix#agentbox plan}" ;;
		"agentbox status") prefix="agentbox run $flags -- agentbox status" ;;
		esac
		step "$as" "$dir" "README.md:$n" 0 "$pat" "$prefix${rest:+ -- $rest}"
	done <"$D/using"
	step "$as" "$dir" setup 0 '' 'test -f tested.txt'
}

# policy AS DIR RUNFLAGS: the README's sample policy in a project: refused
# until trusted, then in force (build made, GITHUB_TOKEN hidden).
policy() {
	local as=$1 dir=$2 flags=$3 want=${4:-0}
	step "$as" / setup 0 '' "rm -rf $dir && mkdir -p $dir && cd $dir && git init -q && cp $D/policy.toml .agentbox.toml"
	step "$as" "$dir" "$(ref 'refused until you trust it')" 125 'trust' "agentbox run $flags -- true"
	step "$as" "$dir" "$(ref 'agentbox trust')" 0 '' "agentbox trust"
	step "$as" "$dir" "$(ref 'writable  = ["build"]')" "$want" '' \
		"GITHUB_TOKEN=t agentbox run $flags -- sh -c 'echo \"[\${GITHUB_TOKEN-unset}]\"; echo x > build/y' && grep -qx x build/y"
}

mkproject root /root/proj
using root /root/proj ""
policy root /root/pol ""
# shellinit AS BINDIR PROJECT: the README's shell-init line in a shell where
# an agent CLI is installed (a stand-in claude that tries to write /usr):
# claude then runs confined, in the project.
IFS=$'\t' read -r nsi si <"$D/shell-init"
shellinit() {
	step "$1" "$2" setup 0 '' "mkdir -p $2 && printf '#!/bin/sh\ntouch /usr/claude-was-here; echo ran\n' >$2/claude && chmod +x $2/claude"
	step "$1" "$3" "README.md:$nsi" 0 $'Read-only file system\n^ran$' "shopt -s expand_aliases
$si
claude"
	step "$1" / setup 0 '' "rm $2/claude && test ! -e /usr/claude-was-here"
}
shellinit root /usr/local/bin /root/proj
IFS=$'\t' read -r nbp bp <"$D/backend-plan"
step root /root/proj "README.md:$nbp" 0 'landlock' "$bp -- true"
# Landlock, where the README says (--backend landlock), as root: touch is
# refused, and the writable folders are the host's /dev/shm, the checkout's
# temporary folder and caches, the checkout.
step root /root/agentbox "README.md:$(cut -f1 "$D/first")" 0 \
	$'Permission denied\n^writable: /dev/shm,/root/.local/state/agentbox/tmp/[^,]+,/root/.local/state/agentbox/caches/[^,]+,/root/agentbox(,|$)' \
	"agentbox run --backend landlock -- ${first##*agentbox run -- }"
using root /root/proj "--backend landlock"

# As the user: the README's per-user install, then a new login shell
# (Debian's ~/.profile puts ~/.local/bin on PATH once it exists).
IFS=$'\t' read -r n ui <"$D/user-install"
step "$user" '~/agentbox' "README.md:$n" 0 '' "$ui"
step "$user" '~' "README.md:$n" 0 '^agentbox' 'command -v agentbox && agentbox --version'
step "$user" '~/agentbox' "README.md:$(cut -f1 "$D/first")" 0 'Read-only file system' "${first##*&& }"
step "$user" '~' "$(ref 'agentbox doctor')" 0 'bubblewrap' 'agentbox doctor'
mkproject "$user" '~/proj'
using "$user" '~/proj' ""
policy "$user" '~/pol' ""
shellinit "$user" '~/.local/bin' '~/proj'
step "$user" '~/agentbox' "README.md:$(cut -f1 "$D/first")" 0 'Permission denied' \
	"agentbox run --backend landlock -- ${first##*agentbox run -- }"
using "$user" '~/proj' "--backend landlock"
# Under Landlock the policy runs, with the rules Landlock enforces weaker
# said in one notice (require refuses only what is not enforced at all).
policy "$user" '~/pol2' "--backend landlock"
step "$user" '~/proj' "README.md:$nbp" 0 'landlock' "$bp -- true"
exit $failed
