complete -c pwatch -l what -d 'With --status: what to show' -r -f -a "reservations\t'Reservations: id, owning namespace, owner set, inheritance, share, nodes, expiry'
namespaces\t'Namespaces (jobs)'
nodes\t'Nodes'
all\t'All three'"
complete -c pwatch -l interval -d 'With --status: refresh every so often (plain numbers are seconds)' -r
complete -c pwatch -l alloc -d 'Only events about this allocation id (repeatable)' -r
complete -c pwatch -l request-id -d 'Only events about this request id (repeatable)' -r
complete -c pwatch -l job -d 'Only events about this job namespace (repeatable). Not --nspace: that is the connection flag shared by every tool' -r
complete -c pwatch -l event -d 'Event kinds to show (repeatable; default any)' -r -f -a "timeout-warning\t'`PMIX_ALLOC_TIMEOUT_WARNING` (-194)'
job-end\t'`PMIX_EVENT_JOB_END` (-145)'
alloc\t'Allocation changes (granted, extended, released, reclaimed)'
node\t'Node changes (joined, left, unreserved)'
any\t'Everything'"
complete -c pwatch -l count -d 'Stop after N matching events' -r
complete -c pwatch -l timeout -d 'Stop after this long (plain numbers are seconds); exit 8 if nothing matched' -r
complete -c pwatch -l exec -d 'Run this shell command for each event, fields in PWATCH_* variables' -r
complete -c pwatch -l extend-by -d 'Answer each timeout warning with an EXTEND of this time (plain = minutes, like -t)' -r
complete -c pwatch -l warn-timeout -d 'Arm the warning for each --alloc at start, and re-arm it on each --extend-by EXTEND (PMIX_ALLOC_WARN_TIMEOUT; plain = seconds). Arming makes this pwatch the requester that receives the warnings' -r
complete -c pwatch -l uri -d 'Connect to the server at this URI, or read the URI from file:PATH' -r
complete -c pwatch -l pid -d 'Connect to the server of this process id, or read the pid from file:PATH' -r
complete -c pwatch -l namespace -l nspace -d 'Connect to the server hosting this namespace' -r
complete -c pwatch -l tmpdir -d 'Look for rendezvous files under DIR instead of $TMPDIR' -r -F
complete -c pwatch -l wait-to-connect -d 'Keep trying to connect for up to SECS seconds' -r
complete -c pwatch -l num-connect-retries -d 'Retry a failed connection N times' -r
complete -c pwatch -l status -d 'Show status instead of streaming events'
complete -c pwatch -l system-server-first -d 'Try the system server first, then fall back to others'
complete -c pwatch -l system-server-only -d 'Connect only to the system server'
complete -c pwatch -l as-tool -d 'Connect as a tool with a fresh namespace even inside a job (by default a tool run inside a job acts for that job\'s namespace)'
complete -c pwatch -l json -d 'Print one JSON object per result (JSON lines for streams); field names are listed under JSON FIELDS in the man page'
complete -c pwatch -s q -l quiet -d 'Print less: once for results only, twice for nothing but errors'
complete -c pwatch -s v -l verbose -d 'Print more: once for details, twice for protocol tracing on stderr'
complete -c pwatch -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pwatch -s V -l version -d 'Print version'
