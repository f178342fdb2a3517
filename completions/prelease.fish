complete -c prelease -l request-id -d 'Release the allocation requested under this request id (repeatable or comma-separated)' -r -f
complete -c prelease -s N -l nodes -d 'Release only this many nodes of the allocation (partial release)' -r -f
complete -c prelease -s w -l nodelist -d 'Release only these nodes, e.g. `node[07-08]` or file:PATH (partial release)' -r -f
complete -c prelease -l cancel -d 'Cancel the queued request with this request id (PMIX_ALLOC_REQ_CANCEL); once granted, release what was granted' -r -f
complete -c prelease -l reacquire -d 'Reacquire this released allocation (PMIX_ALLOC_REAQUIRE)' -r -f -a "(pwatch --complete allocs 2>/dev/null)"
complete -c prelease -l signal -d 'Send this signal to every process of the jobs named (their namespaces, as `pspawn --detach` prints them) instead of ending them, as `scancel --signal` does: a name (USR1, SIGTERM) or a number' -r -f
complete -c prelease -l uri -d 'Connect to the server at this URI, or read the URI from file:PATH. When no flag names a server, the environment variable PMIX_TOOLS_URI (same forms) chooses the DVM for every tool of a shell or script, as FLUX_URI does (not inside a job or `palloc -- CMD`, whose DVM is already known)' -r
complete -c prelease -l pid -d 'Connect to the server of this process id, or read the pid from file:PATH' -r
complete -c prelease -l namespace -l nspace -d 'Connect to the server hosting this namespace' -r -f
complete -c prelease -l tmpdir -d 'Look for rendezvous files under DIR instead of $TMPDIR' -r -f -a "(__fish_complete_directories)"
complete -c prelease -l wait-to-connect -d 'Delay between connection retries (see --num-connect-retries); a plain number is seconds here, as in the OpenPMIx tools (default 1s)' -r -f
complete -c prelease -l num-connect-retries -d 'Retry a failed connection N times, waiting --wait-to-connect between tries' -r -f
complete -c prelease -l system-server-first -d 'Try the system server first, then fall back to others'
complete -c prelease -l system-server-only -d 'Connect only to the system server'
complete -c prelease -l as-tool -d 'Connect as a tool with a fresh namespace even inside a job (by default a tool run inside a job acts for that job\'s namespace)'
complete -c prelease -l json -d 'Print JSON: a one-shot result is ONE JSON document; a stream (events, a job\'s output) is JSON lines, one object per line. Field names are listed under JSON FIELDS in the man page'
complete -c prelease -s q -l quiet -d 'Print less: once for results only, twice for nothing but errors'
complete -c prelease -s v -l verbose -d 'Print more: once for details, twice for protocol tracing on stderr'
complete -c prelease -s h -l help -d 'Print help (see more with \'--help\')'
complete -c prelease -s V -l version -d 'Print version'
