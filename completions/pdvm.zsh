#compdef pdvm

autoload -U is-at-least

_pdvm() {
    typeset -A opt_args
    typeset -a _arguments_options
    local ret=1

    if is-at-least 5.2; then
        _arguments_options=(-s -S -C)
    else
        _arguments_options=(-s -C)
    fi

    local context curcontext="$curcontext" state line
    _arguments "${_arguments_options[@]}" : \
'--nodes=[Simulated nodes in the default session]:N:' \
'--slots=[Slots per node]:S:' \
'--scheduler-nodes=[Further nodes the simulated scheduler can grant (0 allowed)]:M:' \
'--tmpdir=[Directory for rendezvous files (default \$TMPDIR)]:DIR:_files -/' \
'--time-scale=[Run simulated time this many times faster (a positive number)]:F:' \
'--job-history=[Keep the last N ended jobs for \`pwatch --status --all\` and a late \`pwatch --job\` (0 allowed); older ones are forgotten, so pdvm'\''s memory does not grow with the jobs it has run]:N:' \
'(--daemonize --pmix-compat --report-uri --terminate)--release=[Release allocation ALLOC_ID as the simulated scheduler, whoever owns it (an administrator'\''s \`scancel\`; the scheduler is an implicit owner of every reservation, spec §8.2.1.7)\: its nodes go back to the scheduler and its owner is told, as at an expiry]:ALLOC_ID:' \
'--report-uri=[Write the server URI (and PMIx version) into FILE, like \`prte --report-uri\`]:FILE:_files' \
'--pmix-compat[Behave as a DVM whose PMIx lacks the reservation attributes (§8.2.1.10)]' \
'()--daemonize[Detach and run in the background once ready]' \
'(--daemonize --pmix-compat --report-uri)--terminate[Stop the running pdvm found through the rendezvous files]' \
'*-q[Print less (repeatable)]' \
'*--quiet[Print less (repeatable)]' \
'*-v[Print more\: requests and decisions on stderr (repeatable)]' \
'*--verbose[Print more\: requests and decisions on stderr (repeatable)]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'-V[Print version]' \
'--version[Print version]' \
'*::command -- Command to run as the session leader job (after `--`):_cmdambivalent' \
&& ret=0
}

(( $+functions[_pdvm_commands] )) ||
_pdvm_commands() {
    local commands; commands=()
    _describe -t commands 'pdvm commands' commands "$@"
}

if [ "$funcstack[1]" = "_pdvm" ]; then
    _pdvm "$@"
else
    compdef _pdvm pdvm
fi
