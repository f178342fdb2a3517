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
'*--what=[With --status\: what to show (repeatable or comma-separated)]:WHAT:((reservations\:"Reservations\: id, owning namespace, owner set, inheritance, share, nodes, expiry"
namespaces\:"Namespaces (jobs)"
nodes\:"Nodes"
scheduler\:"Scheduler queues\: nodes, free nodes, pending requests (like \`sinfo\`)"
all\:"All four"))' \
'*--state=[With --status\: keep only rows in this state (repeatable or comma-separated, as squeue -t R,PD)\: queued, active, draining (reservations), running, killing, ended (namespaces), idle, busy (nodes); tables none of whose states is named are left out]:STATE:((queued\:"Reservations waiting in the scheduler'\''s queue"
active\:"Reservations granted, owner alive"
draining\:"Reservations whose owner ended, kept for its running descendants"
running\:"Namespaces (jobs) running"
killing\:"Namespaces being killed"
ended\:"Namespaces that ended (implies --all)"
idle\:"Nodes with no slot in use"
busy\:"Nodes with slots in use"))' \
'(--status)--complete=[Print live allocation ids or namespaces, one per line, for the shell completions (they call \`pwatch --complete allocs\`); prints nothing and exits 0 when no DVM answers]:WHAT:((allocs\:"Live allocation ids"
namespaces\:"Live job namespaces"
nodes\:"The DVM'\''s node names"))' \
'--interval=[With --status\: refresh every so often (a plain number is minutes; or 5s, 2m, MM\:SS)]:DURATION:' \
'(--status)*--alloc=[Only events about this allocation id (repeatable or comma-separated)]:ALLOC_ID:($(pwatch --complete allocs 2>/dev/null))' \
'(--status)*--request-id=[Only events about this request id (repeatable or comma-separated)]:REQ_ID:' \
'(--status)*--job=[Only events about this job namespace (repeatable or comma-separated). Not --nspace\: that is the connection flag shared by every tool]:NSPACE:($(pwatch --complete namespaces 2>/dev/null))' \
'(--status)*--event=[Event kinds to show (repeatable or comma-separated; default any)]:NAME:((timeout-warning\:"\`PMIX_ALLOC_TIMEOUT_WARNING\` (-194)"
job-end\:"\`PMIX_EVENT_JOB_END\` (-145)"
alloc\:"Allocation changes (granted, extended, released, reclaimed)"
node\:"Node changes (joined, left, unreserved)"
any\:"Everything"))' \
'(--status)--count=[Stop after N matching events]:N:' \
'(--status)--timeout=[Stop after this long (a plain number is minutes; or 30s, 2h, MM\:SS); exit 8 if nothing matched]:DURATION:' \
'(--status)--exec=[Run this shell command for each event, fields in PWATCH_* variables]:CMD:_cmdstring' \
'(--status)--extend-by=[Answer each timeout warning with an EXTEND of this time (a plain number is minutes; or 30s, 2h, MM\:SS, \[D-\]HH\:MM\:SS)]:DURATION:' \
'(--status)--warn-timeout=[Arm the warning for each --alloc at start, and re-arm it on each --extend-by EXTEND (PMIX_ALLOC_WARN_TIMEOUT; a plain number is minutes, or 300s). Arming makes this pwatch the requester that receives the warnings]:DURATION:' \
'--uri=[Connect to the server at this URI, or read the URI from file\:PATH. When no flag names a server, the environment variable PMIX_TOOLS_URI (same forms) chooses the DVM for every tool of a shell or script, as FLUX_URI does (not inside a job or \`palloc -- CMD\`, whose DVM is already known)]:URI|file:PATH:_default' \
'--pid=[Connect to the server of this process id, or read the pid from file\:PATH]:PID|file:PATH:_default' \
'--namespace=[Connect to the server hosting this namespace]:NS:' \
'--nspace=[Connect to the server hosting this namespace]:NS:' \
'--tmpdir=[Look for rendezvous files under DIR instead of \$TMPDIR]:DIR:_files -/' \
'--wait-to-connect=[Delay between connection retries (see --num-connect-retries); a plain number is seconds here, as in the OpenPMIx tools (default 1s)]:SECS:' \
'--num-connect-retries=[Retry a failed connection N times, waiting --wait-to-connect between tries]:N:' \
'--status[Show status instead of streaming events]' \
'--mine[With --status\: only my reservations, the namespaces in their owner sets and the jobs those launched, and their nodes (see DESCRIPTION)]' \
'--all[With --status\: also list namespaces that ended]' \
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
