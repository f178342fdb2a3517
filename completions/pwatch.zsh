#compdef pwatch

autoload -U is-at-least

_pwatch() {
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
'*--what=[With --status\: what to show]:WHAT:((reservations\:"Reservations\: id, owning namespace, owner set, inheritance, share, nodes, expiry"
namespaces\:"Namespaces (jobs)"
nodes\:"Nodes"
all\:"All three"))' \
'--interval=[With --status\: refresh every so often (plain numbers are seconds)]:DURATION:_default' \
'(--status)*--alloc=[Only events about this allocation id (repeatable)]:ALLOC_ID:_default' \
'(--status)*--request-id=[Only events about this request id (repeatable)]:REQ_ID:_default' \
'(--status)*--job=[Only events about this job namespace (repeatable). Not --nspace\: that is the connection flag shared by every tool]:NSPACE:_default' \
'(--status)*--event=[Event kinds to show (repeatable; default any)]:NAME:((timeout-warning\:"\`PMIX_ALLOC_TIMEOUT_WARNING\` (-194)"
job-end\:"\`PMIX_EVENT_JOB_END\` (-145)"
alloc\:"Allocation changes (granted, extended, released, reclaimed)"
node\:"Node changes (joined, left, unreserved)"
any\:"Everything"))' \
'(--status)--count=[Stop after N matching events]:N:_default' \
'(--status)--timeout=[Stop after this long (plain numbers are seconds); exit 8 if nothing matched]:DURATION:_default' \
'(--status)--exec=[Run this shell command for each event, fields in PWATCH_* variables]:CMD:_default' \
'(--status)--extend-by=[Answer each timeout warning with an EXTEND of this time (plain = minutes, like -t)]:DURATION:_default' \
'(--status)--warn-timeout=[Arm the warning for each --alloc at start, and re-arm it on each --extend-by EXTEND (PMIX_ALLOC_WARN_TIMEOUT; plain = seconds). Arming makes this pwatch the requester that receives the warnings]:SECS:_default' \
'--uri=[Connect to the server at this URI, or read the URI from file\:PATH]:URI|file:PATH:_default' \
'--pid=[Connect to the server of this process id, or read the pid from file\:PATH]:PID|file:PATH:_default' \
'--namespace=[Connect to the server hosting this namespace]:NS:_default' \
'--nspace=[Connect to the server hosting this namespace]:NS:_default' \
'--tmpdir=[Look for rendezvous files under DIR instead of \$TMPDIR]:DIR:_files' \
'--wait-to-connect=[Keep trying to connect for up to SECS seconds]:SECS:_default' \
'--num-connect-retries=[Retry a failed connection N times]:N:_default' \
'--status[Show status instead of streaming events]' \
'--system-server-first[Try the system server first, then fall back to others]' \
'(--system-server-first)--system-server-only[Connect only to the system server]' \
'--as-tool[Connect as a tool with a fresh namespace even inside a job (by default a tool run inside a job acts for that job'\''s namespace)]' \
'--json[Print one JSON object per result (JSON lines for streams); field names are listed under JSON FIELDS in the man page]' \
'*-q[Print less\: once for results only, twice for nothing but errors]' \
'*--quiet[Print less\: once for results only, twice for nothing but errors]' \
'*-v[Print more\: once for details, twice for protocol tracing on stderr]' \
'*--verbose[Print more\: once for details, twice for protocol tracing on stderr]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
}

(( $+functions[_pwatch_commands] )) ||
_pwatch_commands() {
    local commands; commands=()
    _describe -t commands 'pwatch commands' commands "$@"
}

if [ "$funcstack[1]" = "_pwatch" ]; then
    _pwatch "$@"
else
    compdef _pwatch pwatch
fi
