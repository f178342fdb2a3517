#compdef palloc

autoload -U is-at-least

_palloc() {
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
'-N+[Number of nodes (PMIX_ALLOC_NUM_NODES)]:N:_default' \
'--nodes=[Number of nodes (PMIX_ALLOC_NUM_NODES)]:N:_default' \
'-w+[Nodes to allocate, e.g. \`node\[01-04\],gpu7\` or file\:PATH (PMIX_ALLOC_NODE_LIST)]:LIST:_default' \
'--nodelist=[Nodes to allocate, e.g. \`node\[01-04\],gpu7\` or file\:PATH (PMIX_ALLOC_NODE_LIST)]:LIST:_default' \
'-x+[Nodes that must not be allocated, same forms as --nodelist (PMIX_ALLOC_EXCLUDE)]:LIST:_default' \
'--exclude=[Nodes that must not be allocated, same forms as --nodelist (PMIX_ALLOC_EXCLUDE)]:LIST:_default' \
'-c+[Number of CPUs (PMIX_ALLOC_NUM_CPUS)]:N:_default' \
'--cpus=[Number of CPUs (PMIX_ALLOC_NUM_CPUS)]:N:_default' \
'--mem=[Memory, e.g. 512M, 4G; plain numbers are megabytes (PMIX_ALLOC_MEM_SIZE)]:SIZE:_default' \
'-t+[Time limit\: 90 (minutes), 45\:00, 2\:00\:00, 1-00\:00\:00, 2h, 1d (PMIX_ALLOC_TIME)]:DURATION:_default' \
'--time=[Time limit\: 90 (minutes), 45\:00, 2\:00\:00, 1-00\:00\:00, 2h, 1d (PMIX_ALLOC_TIME)]:DURATION:_default' \
'-q+[Scheduler queue (PMIX_ALLOC_QUEUE). \`-q\` is this, not --quiet]:QUEUE:_default' \
'--queue=[Scheduler queue (PMIX_ALLOC_QUEUE). \`-q\` is this, not --quiet]:QUEUE:_default' \
'(--extend-request)--request-id=[Your own id for this request, echoed in the reply (PMIX_ALLOC_REQ_ID)]:REQ_ID:_default' \
'--target=[Reserve for this namespace instead of your own (PMIX_ALLOC_TARGET; tools only)]:NSPACE:_default' \
'--inherit=[What happens when the owner ends\: none, child, default, child-default (PMIX_ALLOC_INHERITANCE; absent = the DVM default, \`default\`)]:RULE:_default' \
'--warn-timeout=[Ask for a warning this long before the time limit (PMIX_ALLOC_WARN_TIMEOUT; plain = seconds)]:SECS:_default' \
'--extend=[Extend the allocation with this id (PMIX_ALLOC_EXTEND + PMIX_ALLOC_ID)]::ALLOC_ID:_default' \
'--extend-request=[Extend the allocation requested under this request id (PMIX_ALLOC_EXTEND + PMIX_ALLOC_REQ_ID)]:REQ_ID:_default' \
'--uri=[Connect to the server at this URI, or read the URI from file\:PATH]:URI|file:PATH:_default' \
'--pid=[Connect to the server of this process id, or read the pid from file\:PATH]:PID|file:PATH:_default' \
'--namespace=[Connect to the server hosting this namespace]:NS:_default' \
'--nspace=[Connect to the server hosting this namespace]:NS:_default' \
'--tmpdir=[Look for rendezvous files under DIR instead of \$TMPDIR]:DIR:_files' \
'--wait-to-connect=[Keep trying to connect for up to SECS seconds]:SECS:_default' \
'--num-connect-retries=[Retry a failed connection N times]:N:_default' \
'--share[Put the nodes in the default session for everyone (PMIX_ALLOC_SHARE=true)]' \
'(--hold)--no-wait[Return as soon as the request is accepted, printing its request id]' \
'--hold[After the grant, print the id and keep the allocation until SIGINT/SIGTERM]' \
'--keep[With \`-- CMD\`\: do not release the allocation when CMD ends (the --inherit rule then decides what becomes of it when its owner ends)]' \
'--system-server-first[Try the system server first, then fall back to others]' \
'(--system-server-first)--system-server-only[Connect only to the system server]' \
'--as-tool[Connect as a tool with a fresh namespace even inside a job (by default a tool run inside a job acts for that job'\''s namespace)]' \
'--json[Print one JSON object per result; see JSON FIELDS in the man page]' \
'*--quiet[Print less (repeatable). palloc has no \`-q\` short form\: \`-q\` is \`--queue\`]' \
'*-v[Print more (repeatable)]' \
'*--verbose[Print more (repeatable)]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'-V[Print version]' \
'--version[Print version]' \
'*::command -- Command to run inside the allocation once granted (after `--`)\: a local process with your environment, directory, stdin and terminal; the tools it runs act within the allocation:_default' \
&& ret=0
}

(( $+functions[_palloc_commands] )) ||
_palloc_commands() {
    local commands; commands=()
    _describe -t commands 'palloc commands' commands "$@"
}

if [ "$funcstack[1]" = "_palloc" ]; then
    _palloc "$@"
else
    compdef _palloc palloc
fi
