complete -c pspawn -s n -l np -d 'Number of processes (default 1, or with -N one per node; applies to every app without its own -n)' -r -f
complete -c pspawn -s N -l nodes -d 'Nodes to run on, as srun -N: outside any allocation, reserve COUNT nodes for this job alone and give them back at its end; inside one, use COUNT of its nodes. Spreads the processes over them (--map-by node unless given)' -r -f
complete -c pspawn -s x -l env -d 'Set VAR=VAL, or forward VAR from this environment, for every app (repeatable; a VAR that is not set here is refused)' -r -f
complete -c pspawn -l export -d 'Which of this environment the job gets besides -x: ALL (default, as srun), NONE, or VAR[=VAL][,…]. ALL leaves out PMIX_*, PRTE_* and OMPI_* (this command\'s own PMIx connection and identity; the DVM gives each process its own), and sends TERM=dumb when this command\'s stdout is not a terminal (PRRTE gives a job\'s stdout a pty: a log would fill with colour codes); -x TERM sends yours' -r -f
complete -c pspawn -s D -l wdir -l chdir -d 'Working directory of the processes (srun\'s -D/--chdir); a relative program path such as ./run.sh is found there' -r -f -a "(__fish_complete_directories)"
complete -c pspawn -s H -s w -l host -d 'Hosts to run on, node list forms such as `node[01-02]` or file:PATH; `NAME:N` uses N slots there (one by default), e.g. `-H node04:2`' -r -f -a "(pwatch --complete nodes 2>/dev/null)"
complete -c pspawn -l map-by -d 'Mapping policy passed to the DVM (PMIX_MAPBY), e.g. slot, node, ppr:2:node, :OVERSUBSCRIBE (more processes than cores; they are then not bound to cores)' -r -f -a "slot\t''
node\t''
core\t''
hwthread\t''
package\t''
numa\t''
l3cache\t''
ppr:1:node\t''
slot:OVERSUBSCRIBE\t''
node:OVERSUBSCRIBE\t''"
complete -c pspawn -l target -d 'Allocation ids the job may use (PMIX_SPAWN_TARGET; repeatable, comma-separated)' -r -f -a "(pwatch --complete allocs 2>/dev/null)"
complete -c pspawn -l timeout -d 'Kill the job and exit 8 after this long: a plain number is minutes; or 45s, 30m, 2h, 1d, MM:SS, [D-]HH:MM:SS' -r -f
complete -c pspawn -s o -l output -d 'Write each process\'s stdout to this file instead of forwarding it (as srun -o): `%j` is the job\'s namespace, `%t` (or `%r`) the rank, `%a` the --array index, `%A` the array\'s id (the namespace of the pspawn running it), `%%` a `%`; a relative path is from the job\'s working directory. Each file is emptied once and shared by the ranks and streams that name it: pspawn writes whole lines into it (with --detach, each process appends to it itself). A link is never followed and a file that is not your own regular file is never emptied: both are refused before the job runs' -r -f
complete -c pspawn -s e -l error -d 'The same for stderr (default: with --output, the same file)' -r -f
complete -c pspawn -l stdin -d 'Which rank gets pspawn\'s stdin: a rank number (default 0), `all` (each rank gets a copy, as prun\'s --stdin all) or `none`' -r -f
complete -c pspawn -s c -l cpus-per-task -l cpus-per-proc -d 'CPUs (slots) each process takes (srun\'s -c/--cpus-per-task; PMIX_CPUS_PER_PROC, which PRRTE reads as --map-by :PE=N and binds each process to N cores)' -r -f
complete -c pspawn -s J -l job-name -d 'A name for the job (srun\'s -J/--job-name), shown in pwatch\'s namespace table on pdvm; PMIx has no job-name attribute, so PRRTE ignores it' -r -f
complete -c pspawn -l array -d 'Run the app once per index, as sbatch --array: 1-1000, 1-1000:2, 1,5,9 or 1-3,7, with %N for at most N tasks at once. Each task gets PMIX_ARRAY_TASK_ID and SLURM_ARRAY_TASK_{ID,COUNT,MIN,MAX}; %a in -o/-e is its index' -r -f
complete -c pspawn -l stdin-tasks -d 'Read tasks from stdin, one JSON object a line ({"id": …, "argv": [...], "env": {…}, "np": N, "cwd": DIR}; only argv is required), run at most N (default 32) at once over one connection, and print JSON lines: each task\'s output, then an array_task result (id, nspace, exit_code) as it ends. The other flags (-n, -x, --export, -D, --target, …) apply to every task. A line may hold up to 64 MiB, and a task\'s spawn request up to 16 MiB (what a DVM takes): a task beyond either, or not a task, fails alone (exit_code 2, the reason on stderr) and the stream goes on' -r -f
complete -c pspawn -l uri -d 'Connect to the server at this URI, or read the URI from file:PATH. When no flag names a server, the environment variable PMIX_TOOLS_URI (same forms) chooses the DVM for every tool of a shell or script, as FLUX_URI does (not inside a job or `palloc -- CMD`, whose DVM is already known)' -r
complete -c pspawn -l pid -d 'Connect to the server of this process id, or read the pid from file:PATH' -r
complete -c pspawn -l namespace -l nspace -d 'Connect to the server hosting this namespace' -r -f
complete -c pspawn -l tmpdir -d 'Look for rendezvous files under DIR instead of $TMPDIR' -r -f -a "(__fish_complete_directories)"
complete -c pspawn -l wait-to-connect -d 'Delay between connection retries (see --num-connect-retries); a plain number is seconds here, as in the OpenPMIx tools (default 1s)' -r -f
complete -c pspawn -l num-connect-retries -d 'Retry a failed connection N times, waiting --wait-to-connect between tries' -r -f
complete -c pspawn -l default-pool -d 'Also allow the default pool (adds the invalid namespace to PMIX_SPAWN_TARGET); alone, it overrides the allocation of PMIX_ALLOC_ID'
complete -c pspawn -s l -l tag-output -l label -d 'Prefix each forwarded output line with `[rank]` (srun\'s -l/--label)'
complete -c pspawn -l detach -d 'Print the job\'s namespace and return without waiting for it'
complete -c pspawn -l parsable -d 'With --detach: print only the job\'s namespace, nothing else (as sbatch --parsable)'
complete -c pspawn -s I -l immediate -d 'Inside an allocation whose slots are busy, refuse at once (exit 4) instead of waiting for them (srun\'s -I/--immediate)'
complete -c pspawn -l system-server-first -d 'Try the system server first, then fall back to others'
complete -c pspawn -l system-server-only -d 'Connect only to the system server'
complete -c pspawn -l as-tool -d 'Connect as a tool with a fresh namespace even inside a job (by default a tool run inside a job acts for that job\'s namespace)'
complete -c pspawn -l json -d 'Print JSON: a one-shot result is ONE JSON document; a stream (events, a job\'s output) is JSON lines, one object per line. Field names are listed under JSON FIELDS in the man page'
complete -c pspawn -s q -l quiet -d 'Print less: once for results only, twice for nothing but errors'
complete -c pspawn -s v -l verbose -d 'Print more: once for details, twice for protocol tracing on stderr'
complete -c pspawn -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pspawn -s V -l version -d 'Print version'
