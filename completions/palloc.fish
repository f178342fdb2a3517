complete -c palloc -s N -l nodes -d 'Number of nodes (PMIX_ALLOC_NUM_NODES; a NEW naming no nodes asks for 1)' -r -f
complete -c palloc -s w -l nodelist -d 'Nodes to allocate, e.g. `node[01-04],gpu7` or file:PATH (PMIX_ALLOC_NODE_LIST)' -r -f -a "(pwatch --complete nodes 2>/dev/null)"
complete -c palloc -l exclude -d 'Nodes that must not be allocated, same forms as --nodelist (PMIX_ALLOC_EXCLUDE). Long form only: `-x` means --env throughout the suite' -r -f -a "(pwatch --complete nodes 2>/dev/null)"
complete -c palloc -s c -l cpus -d 'Number of CPUs (PMIX_ALLOC_NUM_CPUS)' -r -f
complete -c palloc -l mem -d 'Memory, e.g. 512M, 4G; plain numbers are megabytes (PMIX_ALLOC_MEM_SIZE)' -r -f
complete -c palloc -s t -l time -d 'Time limit (PMIX_ALLOC_TIME): a plain number is minutes; or 45s, 30m, 2h, 1d, MM:SS, [D-]HH:MM:SS; UNLIMITED asks for none' -r -f
complete -c palloc -s p -l partition -l queue -d 'Scheduler queue, Slurm\'s partition (PMIX_ALLOC_QUEUE)' -r -f
complete -c palloc -s A -l account -d 'Account to charge (psched on Slurm: `salloc --account`). pdvm and psched\'s pool have no accounts and ignore it' -r -f
complete -c palloc -l qos -d 'Quality of service (psched on Slurm: `salloc --qos`). pdvm and psched\'s pool ignore it' -r -f
complete -c palloc -l reservation -d 'Run in this reservation of the resource manager (psched on Slurm: `salloc --reservation`). pdvm and psched\'s pool have no such reservations and ignore it' -r -f
complete -c palloc -s C -l constraint -d 'Node features to require, e.g. `gpu&ib` (psched on Slurm: `salloc --constraint`). pdvm and psched\'s pool have no node features and ignore it' -r -f
complete -c palloc -s J -l request-id -l job-name -d 'Your own name for this request, echoed in the reply (PMIX_ALLOC_REQ_ID)' -r -f
complete -c palloc -s o -l output -d 'A batch script\'s log (with `--no-wait -- SCRIPT` only, as sbatch -o): `%j` and `%x` are the request id, `%%` a `%`; relative to the current folder. Default: palloc-ID.out there' -r -f
complete -c palloc -l target -d 'Reserve for this namespace instead of your own (PMIX_ALLOC_TARGET; tools only)' -r -f -a "(pwatch --complete namespaces 2>/dev/null)"
complete -c palloc -l inherit -d 'What happens when the owner ends: none, child, default, child-default (PMIX_ALLOC_INHERITANCE). Not given, palloc outside a job sends `child` (the nodes go back to the scheduler once palloc and the jobs it started have ended, so none is left behind, however palloc ends), and gives the allocation back itself when it ends; inside a job it sends nothing (the DVM\'s default, `default`). With `default` or `child-default` the nodes stay in the DVM unreserved (`pwatch --status` shows ORIGIN `scheduler`); `prelease $(palloc -w NODES --parsable)` gives them back' -r -f -a "none\t''
child\t''
default\t''
child-default\t''"
complete -c palloc -l warn-timeout -d 'Ask for a warning this long before the time limit (PMIX_ALLOC_WARN_TIMEOUT): a plain number is minutes; or 45s, 30m, 2h, MM:SS, [D-]HH:MM:SS. Only with -- CMD or --hold (palloc prints the warning): where palloc returns at once nobody would hear it, so it is refused (exit 2)' -r -f
complete -c palloc -l extend -d 'Extend the allocation with this id (PMIX_ALLOC_EXTEND + PMIX_ALLOC_ID)' -r -f -a "(pwatch --complete allocs 2>/dev/null)"
complete -c palloc -l extend-request -d 'Extend the allocation requested under this request id (PMIX_ALLOC_EXTEND + PMIX_ALLOC_REQ_ID)' -r -f
complete -c palloc -l uri -d 'Connect to the server at this URI, or read the URI from file:PATH. When no flag names a server, the environment variable PMIX_TOOLS_URI (same forms) chooses the DVM for every tool of a shell or script, as FLUX_URI does (not inside a job or `palloc -- CMD`, whose DVM is already known)' -r
complete -c palloc -l pid -d 'Connect to the server of this process id, or read the pid from file:PATH' -r
complete -c palloc -l namespace -l nspace -d 'Connect to the server hosting this namespace' -r -f
complete -c palloc -l tmpdir -d 'Look for rendezvous files under DIR instead of $TMPDIR' -r -f -a "(__fish_complete_directories)"
complete -c palloc -l wait-to-connect -d 'Delay between connection retries (see --num-connect-retries); a plain number is seconds here, as in the OpenPMIx tools (default 1s)' -r -f
complete -c palloc -l num-connect-retries -d 'Retry a failed connection N times, waiting --wait-to-connect between tries' -r -f
complete -c palloc -l exclusive -d 'Whole nodes, shared with no other job of the resource manager (psched on Slurm: `salloc --exclusive`; without it Slurm is asked only for the CPUs wanted). pdvm and psched\'s pool always grant whole nodes'
complete -c palloc -l share -d 'Put the nodes in the default session for everyone (PMIX_ALLOC_SHARE=true)'
complete -c palloc -l no-wait -d 'Submit the request and return at once, printing its request id (like sbatch). Outside a job a detached palloc keeps the request, then holds the grant until it is released (`prelease ID`) or expires, or, with `-- SCRIPT`, runs SCRIPT in it (output in palloc-NAME.out, NAME from -J); `prelease REQ_ID` withdraws it while queued, or stops it'
complete -c palloc -l hold -d 'After the grant, print the id and keep the allocation until SIGINT/SIGTERM'
complete -c palloc -l stdin-requests -d 'Submit batch jobs read from stdin, one a line, each a JSON array of the arguments of `palloc --no-wait` (e.g. `["-J","job1","-N","1","--","/bin/bash","job1.sh"]`), and answer each with one JSON line on stdout: `{"type":"request","request_id":ID,"state":"submitted"}`, or `{"type":"error",…,"message":…,"exit_code":N}` with the status palloc --no-wait would exit with (a line that is not such an array: exit code 2). One palloc serves a whole workflow (PSI/J\'s `pmix` executor) instead of one process per job; end of input ends it, and the jobs it submitted go on, each held by its detached palloc as with --no-wait. While it runs, the end of each job\'s detached palloc is said unasked, as soon as it happens: one line holding the job\'s batch record (`{"type":"batch",…}`, as `pwatch --status --all` lists it: its state, exit code or signal)'
complete -c palloc -l parsable -d 'Print only the allocation id (with --no-wait, the request id), as sbatch --parsable'
complete -c palloc -l keep -d 'With `-- CMD`: do not release the allocation when CMD ends (the --inherit rule then decides what becomes of it when its owner ends)'
complete -c palloc -l system-server-first -d 'Try the system server first, then fall back to others'
complete -c palloc -l system-server-only -d 'Connect only to the system server'
complete -c palloc -l as-tool -d 'Connect as a tool with a fresh namespace even inside a job (by default a tool run inside a job acts for that job\'s namespace)'
complete -c palloc -l json -d 'Print JSON: a one-shot result is ONE JSON document; a stream (events, a job\'s output) is JSON lines, one object per line. Field names are listed under JSON FIELDS in the man page'
complete -c palloc -s q -l quiet -d 'Print less: once for results only, twice for nothing but errors'
complete -c palloc -s v -l verbose -d 'Print more: once for details, twice for protocol tracing on stderr'
complete -c palloc -s h -l help -d 'Print help (see more with \'--help\')'
complete -c palloc -s V -l version -d 'Print version'
