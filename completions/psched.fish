complete -c psched -l nodes -d 'The nodes psched owns, as a list with ranges: `node[03-08]`, `n1,n2` (the pool backend; with `--backend slurm` Slurm has the nodes)' -r -f
complete -c psched -l backend -d 'Where the nodes come from: `pool` (psched\'s own, `--nodes`) or `slurm` (the Slurm that SLURM_CONF names: each allocation is an exclusive Slurm job; time limits, partitions and queueing are Slurm\'s)' -r -f
complete -c psched -l slots -d 'Slots per node (recorded in the ledger, and said to PRRTE master as it first hears of the node: `node02:2`; without it PRRTE gives a scheduler\'s node one slot)' -r -f
complete -c psched -l partition -d 'A partition: `NAME[:DEFAULT[:MAX]]` with time limits such as `10m`, `1h`, `30s`; the first is used when a request names none. Default: `batch` without limits' -r -f
complete -c psched -l ledger -d 'The ledger file (grants survive a restart)' -r -F
complete -c psched -l retry -d 'Seconds between attempts to attach to the DVM' -r -f
complete -c psched -l time-scale -d 'Run psched\'s clock F times faster, for trying workflows: a request\'s time limit and warning threshold are divided by F (the ledger keeps real times), a warning\'s seconds left multiplied back. As `pdvm --time-scale`: with 60 a minute lasts a second' -r -f
complete -c psched -l status-uri -d 'Serve status queries on a loopback socket and write its URI (and PMIx version) to PATH, so that `pwatch --status --uri file:PATH` shows psched\'s queues (nodes, free nodes, pending requests), its grants as reservations with their expiry, and its pool as nodes' -r -f
complete -c psched -l release -d 'Release the grant ID as the scheduler (which may release any reservation, spec 001 §8.2.1.7), through the psched serving --ledger: its nodes return to the pool and the DVM is told to end the session. Waits at most 15 s for psched to act' -r -f -a "(pwatch --complete allocs 2>/dev/null)"
complete -c psched -l uri -d 'Connect to the server at this URI, or read the URI from file:PATH. When no flag names a server, the environment variable PMIX_TOOLS_URI (same forms) chooses the DVM for every tool of a shell or script, as FLUX_URI does (not inside a job or `palloc -- CMD`, whose DVM is already known)' -r
complete -c psched -l pid -d 'Connect to the server of this process id, or read the pid from file:PATH' -r
complete -c psched -l namespace -l nspace -d 'Connect to the server hosting this namespace' -r -f
complete -c psched -l tmpdir -d 'Look for rendezvous files under DIR instead of $TMPDIR' -r -f -a "(__fish_complete_directories)"
complete -c psched -l wait-to-connect -d 'Delay between connection retries (see --num-connect-retries); a plain number is seconds here, as in the OpenPMIx tools (default 1s)' -r -f
complete -c psched -l num-connect-retries -d 'Retry a failed connection N times, waiting --wait-to-connect between tries' -r -f
complete -c psched -l once -d 'Exit when the DVM goes away instead of waiting for a new one'
complete -c psched -l status -d 'Print psched\'s state from its ledger as one JSON object and exit: queues (partitions with their limits), pool, free nodes, nodes the DVM kept (retained), pending requests, and each grant with its expiry (`expires_at_ms`) and seconds left (`left_secs`)'
complete -c psched -l status-public -d 'Let every local user query the status socket. Without it only psched\'s own user and root are answered (the grants name every user\'s jobs); others are closed at once'
complete -c psched -l check -d 'Check the setup and exit, printing one line per finding (`ok`, `warn`, `FAIL` and what to do): the DVM is found and takes a scheduler, no other psched serves it, the ledger\'s folder is writable, and with `--backend slurm` Slurm\'s commands are on PATH, its controller answers and it has partitions. Exit 0 when nothing failed, 1 otherwise'
complete -c psched -l system-server-first -d 'Try the system server first, then fall back to others'
complete -c psched -l system-server-only -d 'Connect only to the system server'
complete -c psched -l as-tool -d 'Connect as a tool with a fresh namespace even inside a job (by default a tool run inside a job acts for that job\'s namespace)'
complete -c psched -s h -l help -d 'Print help'
complete -c psched -s V -l version -d 'Print version'
