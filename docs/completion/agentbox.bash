# bash completion for agentbox, generated from its commands: agentbox completion bash
# Load it with: source <(agentbox completion bash)

_agentbox() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    # bash splits --flag=value at '=' (COMP_WORDBREAKS).
    if [[ $cur == = ]]; then cur=; elif [[ $prev == = ]]; then prev=${COMP_WORDS[COMP_CWORD-2]}; fi
    local i word cmd= cmdpos=0 first=0
    for ((i = 1; i < COMP_CWORD; i++)); do
        [[ ${COMP_WORDS[i]} == -* ]] || { cmd=${COMP_WORDS[i]}; cmdpos=$i; break; }
    done
    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "--version --help" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "run plan learn verify log init doctor trust status caches providers shell-init completion setup version help" -- "$cur"))
        fi
        return
    fi
    # The first argument after the flags, or after --.
    for ((i = cmdpos + 1; i < COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        case $word in
        --) first=$((i + 1)); break ;;
        --policy|--writable|--read-only|--deny|--network|--allow|--publish|--workspace|--workspace-root|--task|--tmp|--env-mode|--pass-env|--deny-env|--provider|--backend|--net-log|--target|--output|--project|--run|-n)
            ((i++))
            [[ ${COMP_WORDS[i]} == = ]] && ((i++)) ;;
        -* | =) ;;
        *) first=$i; break ;;
        esac
    done
    if ((first == 0)); then
        case $prev in
        --policy) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --writable) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --read-only) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --deny) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --network) COMPREPLY=($(compgen -W "open none allowlist" -- "$cur")); return ;;
        --allow) COMPREPLY=(); return ;;
        --publish) COMPREPLY=(); return ;;
        --workspace) COMPREPLY=(); return ;;
        --workspace-root) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$cur")); return ;;
        --task) COMPREPLY=(); return ;;
        --tmp) COMPREPLY=($(compgen -W "workspace private host" -- "$cur")); return ;;
        --env-mode) COMPREPLY=($(compgen -W "inherit clean" -- "$cur")); return ;;
        --pass-env) COMPREPLY=(); return ;;
        --deny-env) COMPREPLY=(); return ;;
        --provider) COMPREPLY=($(compgen -W "auto none claude codex hermes kimi mimo opencode pi" -- "$cur")); return ;;
        --backend) COMPREPLY=($(compgen -W "auto bwrap landlock windows seatbelt" -- "$cur")); return ;;
        --net-log) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --target) COMPREPLY=(); return ;;
        --output) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --project) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$cur")); return ;;
        --run) COMPREPLY=(); return ;;
        -n) COMPREPLY=(); return ;;
        esac
        if [[ $cur == -* ]]; then
            case $cmd in
            run) COMPREPLY=($(compgen -W "--policy --writable --read-only --deny --network --allow --publish --workspace --workspace-root --task --tmp --env-mode --pass-env --deny-env --provider --backend --best-effort --require --allow-broad-writable --quiet --net-log --verify --help" -- "$cur")) ;;
            plan) COMPREPLY=($(compgen -W "--policy --writable --read-only --deny --network --allow --publish --workspace --workspace-root --task --tmp --env-mode --pass-env --deny-env --provider --backend --best-effort --require --allow-broad-writable --quiet --json --argv --profile --target --wide --help" -- "$cur")) ;;
            learn) COMPREPLY=($(compgen -W "--policy --writable --read-only --deny --network --allow --publish --workspace --workspace-root --task --tmp --env-mode --pass-env --deny-env --provider --backend --best-effort --require --allow-broad-writable --quiet --output --help" -- "$cur")) ;;
            verify) COMPREPLY=($(compgen -W "--policy --writable --read-only --deny --network --allow --publish --workspace --workspace-root --task --tmp --env-mode --pass-env --deny-env --provider --backend --best-effort --require --allow-broad-writable --quiet --json --wide --help" -- "$cur")) ;;
            log) COMPREPLY=($(compgen -W "--json --follow --project --workspace --denials --run -n --wide --help" -- "$cur")) ;;
            init) COMPREPLY=($(compgen -W "--force --help" -- "$cur")) ;;
            doctor) COMPREPLY=($(compgen -W "--json --wide --help" -- "$cur")) ;;
            trust) COMPREPLY=($(compgen -W "--revoke --proposal --help" -- "$cur")) ;;
            status) COMPREPLY=($(compgen -W "--policy --writable --read-only --deny --network --allow --publish --workspace --workspace-root --task --tmp --env-mode --pass-env --deny-env --provider --backend --best-effort --require --allow-broad-writable --quiet --json --prompt --help" -- "$cur")) ;;
            caches) COMPREPLY=($(compgen -W "--policy --writable --read-only --deny --network --allow --publish --workspace --workspace-root --task --tmp --env-mode --pass-env --deny-env --provider --backend --best-effort --require --allow-broad-writable --quiet --clear --all --json --help" -- "$cur")) ;;
            providers) COMPREPLY=($(compgen -W "--json --help" -- "$cur")) ;;
            shell-init) COMPREPLY=($(compgen -W "--help" -- "$cur")) ;;
            completion) COMPREPLY=($(compgen -W "--help" -- "$cur")) ;;
            setup) COMPREPLY=($(compgen -W "--check --uninstall --no-elevate --help" -- "$cur")) ;;
            version) COMPREPLY=($(compgen -W "--json --help" -- "$cur")) ;;
            help) COMPREPLY=($(compgen -W "--help" -- "$cur")) ;;
            esac
            return
        fi
        first=$COMP_CWORD
    fi
    case $cmd in
    run)
        if ((COMP_CWORD == first)); then
            COMPREPLY=($(compgen -c -- "$cur"))
        elif declare -F _command_offset >/dev/null; then
            _command_offset "$first"
        else
            compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur"))
        fi ;;
    plan)
        if ((COMP_CWORD == first)); then
            COMPREPLY=($(compgen -c -- "$cur"))
        elif declare -F _command_offset >/dev/null; then
            _command_offset "$first"
        else
            compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur"))
        fi ;;
    learn)
        if ((COMP_CWORD == first)); then
            COMPREPLY=($(compgen -c -- "$cur"))
        elif declare -F _command_offset >/dev/null; then
            _command_offset "$first"
        else
            compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur"))
        fi ;;
    verify)
        if ((COMP_CWORD == first)); then
            COMPREPLY=($(compgen -c -- "$cur"))
        elif declare -F _command_offset >/dev/null; then
            _command_offset "$first"
        else
            compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur"))
        fi ;;
    trust) ((COMP_CWORD == first)) && { compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")); } ;;
    status)
        if ((COMP_CWORD == first)); then
            COMPREPLY=($(compgen -c -- "$cur"))
        elif declare -F _command_offset >/dev/null; then
            _command_offset "$first"
        else
            compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur"))
        fi ;;
    shell-init) ((COMP_CWORD == first)) && COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur")) ;;
    completion) ((COMP_CWORD == first)) && COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur")) ;;
    help) ((COMP_CWORD == first)) && COMPREPLY=($(compgen -W "run plan learn verify log init doctor trust status caches providers shell-init completion setup version" -- "$cur")) ;;
    esac
}
complete -F _agentbox agentbox
