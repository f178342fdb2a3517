#compdef prelease

autoload -U is-at-least

_prelease() {
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
'*--request-id=[Release the allocation requested under this request id (repeatable or comma-separated)]:REQ_ID:' \
'(--cancel --reacquire)-N+[Release only this many nodes of the allocation (partial release)]:N:' \
'(--cancel --reacquire)--nodes=[Release only this many nodes of the allocation (partial release)]:N:' \
'(--cancel --reacquire)-w+[Release only these nodes, e.g. \`node\[07-08\]\` or file\:PATH (partial release)]:LIST:' \
'(--cancel --reacquire)--nodelist=[Release only these nodes, e.g. \`node\[07-08\]\` or file\:PATH (partial release)]:LIST:' \
'(--request-id --reacquire)--cancel=[Cancel the queued request with this request id (PMIX_ALLOC_REQ_CANCEL); once granted, release what was granted]:REQ_ID:' \
'(--request-id)--reacquire=[Reacquire this released allocation (PMIX_ALLOC_REAQUIRE)]:ALLOC_ID:($(pwatch --complete allocs 2>/dev/null))' \
'(--cancel --reacquire --request-id -N --nodes -w --nodelist)--signal=[Send this signal to every process of the jobs named (their namespaces, as \`pspawn --detach\` prints them) instead of ending them, as \`scancel --signal\` does\: a name (USR1, SIGTERM) or a number]:SIG:' \
'--uri=[Connect to the server at this URI, or read the URI from file\:PATH. When no flag names a server, the environment variable PMIX_TOOLS_URI (same forms) chooses the DVM for every tool of a shell or script, as FLUX_URI does (not inside a job or \`palloc -- CMD\`, whose DVM is already known)]:URI|file:PATH:_default' \
'--pid=[Connect to the server of this process id, or read the pid from file\:PATH]:PID|file:PATH:_default' \
'--namespace=[Connect to the server hosting this namespace]:NS:' \
'--nspace=[Connect to the server hosting this namespace]:NS:' \
'--tmpdir=[Look for rendezvous files under DIR instead of \$TMPDIR]:DIR:_files -/' \
'--wait-to-connect=[Delay between connection retries (see --num-connect-retries); a plain number is seconds here, as in the OpenPMIx tools (default 1s)]:SECS:' \
'--num-connect-retries=[Retry a failed connection N times, waiting --wait-to-connect between tries]:N:' \
'--system-server-first[Try the system server first, then fall back to others]' \
'(--system-server-first)--system-server-only[Connect only to the system server]' \
'--as-tool[Connect as a tool with a fresh namespace even inside a job (by default a tool run inside a job acts for that job'\''s namespace)]' \
'--json[Print JSON\: a one-shot result is ONE JSON document; a stream (events, a job'\''s output) is JSON lines, one object per line. Field names are listed under JSON FIELDS in the man page]' \
'*-q[Print less\: once for results only, twice for nothing but errors]' \
'*--quiet[Print less\: once for results only, twice for nothing but errors]' \
'*-v[Print more\: once for details, twice for protocol tracing on stderr]' \
'*--verbose[Print more\: once for details, twice for protocol tracing on stderr]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'-V[Print version]' \
'--version[Print version]' \
'*::alloc_ids -- Allocation ids to release:($(pwatch --complete allocs 2>/dev/null))' \
&& ret=0
}

(( $+functions[_prelease_commands] )) ||
_prelease_commands() {
    local commands; commands=()
    _describe -t commands 'prelease commands' commands "$@"
}

if [ "$funcstack[1]" = "_prelease" ]; then
    _prelease "$@"
else
    compdef _prelease prelease
fi
