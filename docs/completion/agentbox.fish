# fish completion for agentbox, generated from its commands: agentbox completion fish
# Load it with: agentbox completion fish | source

# True once the command line has a `--`: what follows is the confined command.
function __agentbox_after_dashdash
    contains -- -- (commandline -opc)
end

# Completes the confined command line (after `--`) as that command does.
function __agentbox_command_line
    set -l words (commandline -opc)
    set -l i (contains -i -- -- $words)
    set -l rest
    test $i -lt (count $words); and set rest $words[(math $i + 1)..-1]
    set rest $rest (commandline -ct)
    if test (count $rest) -le 1
        __fish_complete_command
    else
        complete -C (string join -- ' ' (string escape -- $rest))
    end
end

complete -c agentbox -f
complete -c agentbox -n __fish_use_subcommand -l version -d 'print the version, commit and Go version'
complete -c agentbox -n __fish_use_subcommand -s h -l help -d 'show help'
complete -c agentbox -n __fish_use_subcommand -a 'run' -d 'run CMD confined by the policy; exit with its status'
complete -c agentbox -n __fish_use_subcommand -a 'plan' -d 'show the resolved plan: layers, every mount in order and why, network, env'
complete -c agentbox -n __fish_use_subcommand -a 'init' -d 'write a commented starter .agentbox.toml in the current folder'
complete -c agentbox -n __fish_use_subcommand -a 'doctor' -d 'what this machine can enforce (bwrap, user namespaces, AppArmor, Landlock, seccomp, cgroups) and what auto picks; exit 1 when nothing can confine'
complete -c agentbox -n __fish_use_subcommand -a 'trust' -d 'trust a project policy (its SHA-256 is pinned; any edit needs trusting again)'
complete -c agentbox -n __fish_use_subcommand -a 'status' -d 'inside a sandbox: is it active, which backend, what is writable and hidden, the network; exit 1 outside one'
complete -c agentbox -n __fish_use_subcommand -a 'providers' -d 'the agent CLIs agentbox knows, whether each is supported inside the sandbox, its writable paths'
complete -c agentbox -n __fish_use_subcommand -a 'shell-init' -d 'print aliases that run every installed, supported agent CLI through agentbox, and agentbox\'s completion'
complete -c agentbox -n __fish_use_subcommand -a 'completion' -d 'print the shell completion script (commands, flags and their values)'
complete -c agentbox -n __fish_use_subcommand -a 'setup' -d 'Windows: create the sandbox users, group and firewall rules (elevated, once; idempotent)'
complete -c agentbox -n __fish_use_subcommand -a 'version' -d 'print agentbox\'s version, the commit it was built from and the Go version'
complete -c agentbox -n __fish_use_subcommand -a 'help' -d 'show the commands, or one command\'s flags'
complete -c agentbox -n '__fish_seen_subcommand_from run; and not __agentbox_after_dashdash' -l policy -r -F -d 'an extra policy FILE (trusted as given; repeatable)'
complete -c agentbox -n '__fish_seen_subcommand_from run; and not __agentbox_after_dashdash' -l writable -r -F -d 'make PATH writable (absolute; repeatable)'
complete -c agentbox -n '__fish_seen_subcommand_from run; and not __agentbox_after_dashdash' -l read-only -r -F -d 'keep PATH read-only inside a writable root (repeatable)'
complete -c agentbox -n '__fish_seen_subcommand_from run; and not __agentbox_after_dashdash' -l deny -r -F -d 'hide PATH (repeatable)'
complete -c agentbox -n '__fish_seen_subcommand_from run; and not __agentbox_after_dashdash' -l network -x -a 'open none allowlist' -d 'network MODE: open, none or allowlist'
complete -c agentbox -n '__fish_seen_subcommand_from run; and not __agentbox_after_dashdash' -l allow -x -d 'allow HOST in allowlist mode: a name, *.domain, an address, with an optional :port (repeatable)'
complete -c agentbox -n '__fish_seen_subcommand_from run; and not __agentbox_after_dashdash' -l workspace -x -d 'workspace ID: hide every other workspace'
complete -c agentbox -n '__fish_seen_subcommand_from run; and not __agentbox_after_dashdash' -l workspace-root -r -F -d 'the work DIR holding all workspaces'
complete -c agentbox -n '__fish_seen_subcommand_from run; and not __agentbox_after_dashdash' -l task -x -d 'task ID: <root>/<workspace>/<task> becomes the working directory'
complete -c agentbox -n '__fish_seen_subcommand_from run; and not __agentbox_after_dashdash' -l tmp -x -a 'workspace private host' -d '/tmp MODE: workspace, private or host'
complete -c agentbox -n '__fish_seen_subcommand_from run; and not __agentbox_after_dashdash' -l env-mode -x -a 'inherit clean' -d 'environment MODE: inherit or clean'
complete -c agentbox -n '__fish_seen_subcommand_from run; and not __agentbox_after_dashdash' -l pass-env -x -d 'keep variable NAME in clean mode (glob; repeatable)'
complete -c agentbox -n '__fish_seen_subcommand_from run; and not __agentbox_after_dashdash' -l deny-env -x -d 'remove variable NAME (glob; repeatable)'
complete -c agentbox -n '__fish_seen_subcommand_from run; and not __agentbox_after_dashdash' -l provider -x -a 'auto none claude codex hermes kimi mimo opencode pi' -d 'the agent CLI\'s provider NAME: auto, none, claude, codex, hermes, kimi, mimo, opencode or pi'
complete -c agentbox -n '__fish_seen_subcommand_from run; and not __agentbox_after_dashdash' -l backend -x -a 'auto bwrap landlock windows' -d 'backend NAME: auto, bwrap, landlock or windows'
complete -c agentbox -n '__fish_seen_subcommand_from run; and not __agentbox_after_dashdash' -l best-effort -d 'if confinement is impossible, warn and run unconfined'
complete -c agentbox -n '__fish_seen_subcommand_from run; and not __agentbox_after_dashdash' -l require -d 'refuse to run unconfined (the default; overrides a policy\'s best-effort)'
complete -c agentbox -n '__fish_seen_subcommand_from run; and not __agentbox_after_dashdash' -l allow-broad-writable -d 'allow a writable root that is / or holds the home folder'
complete -c agentbox -n '__fish_seen_subcommand_from run; and not __agentbox_after_dashdash' -l net-log -r -F -d 'in allowlist mode, log every allowed and denied connection to FILE'
complete -c agentbox -n '__fish_seen_subcommand_from run; and not __agentbox_after_dashdash' -s h -l help -d 'show help'
complete -c agentbox -n '__fish_seen_subcommand_from run; and __agentbox_after_dashdash' -a '(__agentbox_command_line)'
complete -c agentbox -n '__fish_seen_subcommand_from plan; and not __agentbox_after_dashdash' -l policy -r -F -d 'an extra policy FILE (trusted as given; repeatable)'
complete -c agentbox -n '__fish_seen_subcommand_from plan; and not __agentbox_after_dashdash' -l writable -r -F -d 'make PATH writable (absolute; repeatable)'
complete -c agentbox -n '__fish_seen_subcommand_from plan; and not __agentbox_after_dashdash' -l read-only -r -F -d 'keep PATH read-only inside a writable root (repeatable)'
complete -c agentbox -n '__fish_seen_subcommand_from plan; and not __agentbox_after_dashdash' -l deny -r -F -d 'hide PATH (repeatable)'
complete -c agentbox -n '__fish_seen_subcommand_from plan; and not __agentbox_after_dashdash' -l network -x -a 'open none allowlist' -d 'network MODE: open, none or allowlist'
complete -c agentbox -n '__fish_seen_subcommand_from plan; and not __agentbox_after_dashdash' -l allow -x -d 'allow HOST in allowlist mode: a name, *.domain, an address, with an optional :port (repeatable)'
complete -c agentbox -n '__fish_seen_subcommand_from plan; and not __agentbox_after_dashdash' -l workspace -x -d 'workspace ID: hide every other workspace'
complete -c agentbox -n '__fish_seen_subcommand_from plan; and not __agentbox_after_dashdash' -l workspace-root -r -F -d 'the work DIR holding all workspaces'
complete -c agentbox -n '__fish_seen_subcommand_from plan; and not __agentbox_after_dashdash' -l task -x -d 'task ID: <root>/<workspace>/<task> becomes the working directory'
complete -c agentbox -n '__fish_seen_subcommand_from plan; and not __agentbox_after_dashdash' -l tmp -x -a 'workspace private host' -d '/tmp MODE: workspace, private or host'
complete -c agentbox -n '__fish_seen_subcommand_from plan; and not __agentbox_after_dashdash' -l env-mode -x -a 'inherit clean' -d 'environment MODE: inherit or clean'
complete -c agentbox -n '__fish_seen_subcommand_from plan; and not __agentbox_after_dashdash' -l pass-env -x -d 'keep variable NAME in clean mode (glob; repeatable)'
complete -c agentbox -n '__fish_seen_subcommand_from plan; and not __agentbox_after_dashdash' -l deny-env -x -d 'remove variable NAME (glob; repeatable)'
complete -c agentbox -n '__fish_seen_subcommand_from plan; and not __agentbox_after_dashdash' -l provider -x -a 'auto none claude codex hermes kimi mimo opencode pi' -d 'the agent CLI\'s provider NAME: auto, none, claude, codex, hermes, kimi, mimo, opencode or pi'
complete -c agentbox -n '__fish_seen_subcommand_from plan; and not __agentbox_after_dashdash' -l backend -x -a 'auto bwrap landlock windows' -d 'backend NAME: auto, bwrap, landlock or windows'
complete -c agentbox -n '__fish_seen_subcommand_from plan; and not __agentbox_after_dashdash' -l best-effort -d 'if confinement is impossible, warn and run unconfined'
complete -c agentbox -n '__fish_seen_subcommand_from plan; and not __agentbox_after_dashdash' -l require -d 'refuse to run unconfined (the default; overrides a policy\'s best-effort)'
complete -c agentbox -n '__fish_seen_subcommand_from plan; and not __agentbox_after_dashdash' -l allow-broad-writable -d 'allow a writable root that is / or holds the home folder'
complete -c agentbox -n '__fish_seen_subcommand_from plan; and not __agentbox_after_dashdash' -l json -d 'print the plan as JSON'
complete -c agentbox -n '__fish_seen_subcommand_from plan; and not __agentbox_after_dashdash' -l argv -d 'print the exact bwrap command line, shell-quoted'
complete -c agentbox -n '__fish_seen_subcommand_from plan; and not __agentbox_after_dashdash' -s h -l help -d 'show help'
complete -c agentbox -n '__fish_seen_subcommand_from plan; and __agentbox_after_dashdash' -a '(__agentbox_command_line)'
complete -c agentbox -n '__fish_seen_subcommand_from init' -l force -d 'overwrite an existing .agentbox.toml'
complete -c agentbox -n '__fish_seen_subcommand_from init' -s h -l help -d 'show help'
complete -c agentbox -n '__fish_seen_subcommand_from doctor' -l json -d 'print JSON'
complete -c agentbox -n '__fish_seen_subcommand_from doctor' -s h -l help -d 'show help'
complete -c agentbox -n '__fish_seen_subcommand_from trust' -l revoke -d 'forget the trust instead'
complete -c agentbox -n '__fish_seen_subcommand_from trust' -s h -l help -d 'show help'
complete -c agentbox -n '__fish_seen_subcommand_from trust' -F
complete -c agentbox -n '__fish_seen_subcommand_from status; and not __agentbox_after_dashdash' -l policy -r -F -d 'an extra policy FILE (trusted as given; repeatable)'
complete -c agentbox -n '__fish_seen_subcommand_from status; and not __agentbox_after_dashdash' -l writable -r -F -d 'make PATH writable (absolute; repeatable)'
complete -c agentbox -n '__fish_seen_subcommand_from status; and not __agentbox_after_dashdash' -l read-only -r -F -d 'keep PATH read-only inside a writable root (repeatable)'
complete -c agentbox -n '__fish_seen_subcommand_from status; and not __agentbox_after_dashdash' -l deny -r -F -d 'hide PATH (repeatable)'
complete -c agentbox -n '__fish_seen_subcommand_from status; and not __agentbox_after_dashdash' -l network -x -a 'open none allowlist' -d 'network MODE: open, none or allowlist'
complete -c agentbox -n '__fish_seen_subcommand_from status; and not __agentbox_after_dashdash' -l allow -x -d 'allow HOST in allowlist mode: a name, *.domain, an address, with an optional :port (repeatable)'
complete -c agentbox -n '__fish_seen_subcommand_from status; and not __agentbox_after_dashdash' -l workspace -x -d 'workspace ID: hide every other workspace'
complete -c agentbox -n '__fish_seen_subcommand_from status; and not __agentbox_after_dashdash' -l workspace-root -r -F -d 'the work DIR holding all workspaces'
complete -c agentbox -n '__fish_seen_subcommand_from status; and not __agentbox_after_dashdash' -l task -x -d 'task ID: <root>/<workspace>/<task> becomes the working directory'
complete -c agentbox -n '__fish_seen_subcommand_from status; and not __agentbox_after_dashdash' -l tmp -x -a 'workspace private host' -d '/tmp MODE: workspace, private or host'
complete -c agentbox -n '__fish_seen_subcommand_from status; and not __agentbox_after_dashdash' -l env-mode -x -a 'inherit clean' -d 'environment MODE: inherit or clean'
complete -c agentbox -n '__fish_seen_subcommand_from status; and not __agentbox_after_dashdash' -l pass-env -x -d 'keep variable NAME in clean mode (glob; repeatable)'
complete -c agentbox -n '__fish_seen_subcommand_from status; and not __agentbox_after_dashdash' -l deny-env -x -d 'remove variable NAME (glob; repeatable)'
complete -c agentbox -n '__fish_seen_subcommand_from status; and not __agentbox_after_dashdash' -l provider -x -a 'auto none claude codex hermes kimi mimo opencode pi' -d 'the agent CLI\'s provider NAME: auto, none, claude, codex, hermes, kimi, mimo, opencode or pi'
complete -c agentbox -n '__fish_seen_subcommand_from status; and not __agentbox_after_dashdash' -l backend -x -a 'auto bwrap landlock windows' -d 'backend NAME: auto, bwrap, landlock or windows'
complete -c agentbox -n '__fish_seen_subcommand_from status; and not __agentbox_after_dashdash' -l best-effort -d 'if confinement is impossible, warn and run unconfined'
complete -c agentbox -n '__fish_seen_subcommand_from status; and not __agentbox_after_dashdash' -l require -d 'refuse to run unconfined (the default; overrides a policy\'s best-effort)'
complete -c agentbox -n '__fish_seen_subcommand_from status; and not __agentbox_after_dashdash' -l allow-broad-writable -d 'allow a writable root that is / or holds the home folder'
complete -c agentbox -n '__fish_seen_subcommand_from status; and not __agentbox_after_dashdash' -l json -d 'print JSON'
complete -c agentbox -n '__fish_seen_subcommand_from status; and not __agentbox_after_dashdash' -l prompt -d 'print the notice to give an agent about the box that agentbox run with these flags and CMD starts'
complete -c agentbox -n '__fish_seen_subcommand_from status; and not __agentbox_after_dashdash' -s h -l help -d 'show help'
complete -c agentbox -n '__fish_seen_subcommand_from status; and __agentbox_after_dashdash' -a '(__agentbox_command_line)'
complete -c agentbox -n '__fish_seen_subcommand_from providers' -l json -d 'print JSON'
complete -c agentbox -n '__fish_seen_subcommand_from providers' -s h -l help -d 'show help'
complete -c agentbox -n '__fish_seen_subcommand_from shell-init' -s h -l help -d 'show help'
complete -c agentbox -n '__fish_seen_subcommand_from shell-init' -a 'bash zsh fish'
complete -c agentbox -n '__fish_seen_subcommand_from completion' -s h -l help -d 'show help'
complete -c agentbox -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'
complete -c agentbox -n '__fish_seen_subcommand_from setup' -l check -d 'verify the real state and name each problem'
complete -c agentbox -n '__fish_seen_subcommand_from setup' -l uninstall -d 'remove everything setup made'
complete -c agentbox -n '__fish_seen_subcommand_from setup' -l no-elevate -d 'fail with a hint instead of asking for elevation'
complete -c agentbox -n '__fish_seen_subcommand_from setup' -s h -l help -d 'show help'
complete -c agentbox -n '__fish_seen_subcommand_from version' -l json -d 'print JSON'
complete -c agentbox -n '__fish_seen_subcommand_from version' -s h -l help -d 'show help'
complete -c agentbox -n '__fish_seen_subcommand_from help' -s h -l help -d 'show help'
complete -c agentbox -n '__fish_seen_subcommand_from help' -a 'run plan init doctor trust status providers shell-init completion setup version'
