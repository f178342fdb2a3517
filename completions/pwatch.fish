complete -c pwatch -l what -d 'With --status: what to show (repeatable or comma-separated)' -r -f -a "reservations\t'Reservations: id, owning namespace, owner set, inheritance, share, nodes, expiry'
namespaces\t'Namespaces (jobs)'
nodes\t'Nodes'
scheduler\t'Scheduler queues: nodes, free nodes, pending requests (like `sinfo`)'
all\t'All four'"
complete -c pwatch -l state -d 'With --status: keep only rows in this state (repeatable or comma-separated, as squeue -t R,PD): queued, active, draining (reservations), running, killing, ended (namespaces), idle, busy (nodes); tables none of whose states is named are left out' -r -f -a "queued\t'Reservations waiting in the scheduler\'s queue'
active\t'Reservations granted, owner alive'
draining\t'Reservations whose owner ended, kept for its running descendants'
running\t'Namespaces (jobs) running'
killing\t'Namespaces being killed'
ended\t'Namespaces that ended (implies --all)'
idle\t'Nodes with no slot in use'
busy\t'Nodes with slots in use'"
complete -c pwatch -l complete -d 'Print live allocation ids or namespaces, one per line, for the shell completions (they call `pwatch --complete allocs`); prints nothing and exits 0 when no DVM answers' -r -f -a "allocs\t'Live allocation ids'
namespaces\t'Live job namespaces'
nodes\t'The DVM\'s node names'"
complete -c pwatch -l interval -d 'With --status: refresh every so often (a plain number is minutes; or 5s, 2m, MM:SS)' -r -f
complete -c pwatch -l alloc -d 'Only events about this allocation id (repeatable or comma-separated)' -r -f -a "(pwatch --complete allocs 2>/dev/null)"
complete -c pwatch -l request-id -d 'Only events about this request id (repeatable or comma-separated)' -r -f
complete -c pwatch -l job -d 'Only events about this job namespace (repeatable or comma-separated). Not --nspace: that is the connection flag shared by every tool' -r -f -a "(pwatch --complete namespaces 2>/dev/null)"
complete -c pwatch -l event -d 'Event kinds to show (repeatable or comma-separated; default any)' -r -f -a "timeout-warning\t'`PMIX_ALLOC_TIMEOUT_WARNING` (-194)'
job-end\t'`PMIX_EVENT_JOB_END` (-145)'
alloc\t'Allocation changes (granted, extended, released, reclaimed)'
node\t'Node changes (joined, left, unreserved)'
any\t'Everything'"
complete -c pwatch -l count -d 'Stop after N matching events' -r -f
complete -c pwatch -l timeout -d 'Stop after this long (a plain number is minutes; or 30s, 2h, MM:SS); exit 8 if nothing matched' -r -f
complete -c pwatch -l exec -d 'Run this shell command for each event, fields in PWATCH_* variables' -r -f -a "(__fish_complete_command)"
complete -c pwatch -l extend-by -d 'Answer each timeout warning with an EXTEND of this time (a plain number is minutes; or 30s, 2h, MM:SS, [D-]HH:MM:SS)' -r -f
complete -c pwatch -l warn-timeout -d 'Arm the warning for each --alloc at start, and re-arm it on each --extend-by EXTEND (PMIX_ALLOC_WARN_TIMEOUT; a plain number is minutes, or 300s). Arming makes this pwatch the requester that receives the warnings' -r -f
complete -c pwatch -l uri -d 'Connect to the server at this URI, or read the URI from file:PATH. When no flag names a server, the environment variable PMIX_TOOLS_URI (same forms) chooses the DVM for every tool of a shell or script, as FLUX_URI does (not inside a job or `palloc -- CMD`, whose DVM is already known)' -r
complete -c pwatch -l pid -d 'Connect to the server of this process id, or read the pid from file:PATH' -r
complete -c pwatch -l namespace -l nspace -d 'Connect to the server hosting this namespace' -r -f
complete -c pwatch -l tmpdir -d 'Look for rendezvous files under DIR instead of $TMPDIR' -r -f -a "(__fish_complete_directories)"
complete -c pwatch -l wait-to-connect -d 'Delay between connection retries (see --num-connect-retries); a plain number is seconds here, as in the OpenPMIx tools (default 1s)' -r -f
complete -c pwatch -l num-connect-retries -d 'Retry a failed connection N times, waiting --wait-to-connect between tries' -r -f
complete -c pwatch -l status -d 'Show status instead of streaming events'
complete -c pwatch -l mine -d 'With --status: only my reservations, the namespaces in their owner sets and the jobs those launched, and their nodes (see DESCRIPTION)'
complete -c pwatch -l all -d 'With --status: also list namespaces that ended'
complete -c pwatch -l system-server-first -d 'Try the system server first, then fall back to others'
complete -c pwatch -l system-server-only -d 'Connect only to the system server'
complete -c pwatch -l as-tool -d 'Connect as a tool with a fresh namespace even inside a job (by default a tool run inside a job acts for that job\'s namespace)'
complete -c pwatch -l json -d 'Print JSON: a one-shot result is ONE JSON document; a stream (events, a job\'s output) is JSON lines, one object per line. Field names are listed under JSON FIELDS in the man page'
complete -c pwatch -s q -l quiet -d 'Print less: once for results only, twice for nothing but errors'
complete -c pwatch -s v -l verbose -d 'Print more: once for details, twice for protocol tracing on stderr'
complete -c pwatch -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pwatch -s V -l version -d 'Print version'
