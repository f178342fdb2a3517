#compdef pspawn

autoload -U is-at-least

_pspawn() {
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
'-n+[Number of processes (default 1, or with -N one per node; applies to every app without its own -n)]:N:' \
'--np=[Number of processes (default 1, or with -N one per node; applies to every app without its own -n)]:N:' \
'(--default-pool)-N+[Nodes to run on, as srun -N\: outside any allocation, reserve COUNT nodes for this job alone and give them back at its end; inside one, use COUNT of its nodes. Spreads the processes over them (--map-by node unless given)]:COUNT:' \
'(--default-pool)--nodes=[Nodes to run on, as srun -N\: outside any allocation, reserve COUNT nodes for this job alone and give them back at its end; inside one, use COUNT of its nodes. Spreads the processes over them (--map-by node unless given)]:COUNT:' \
'*-x+[Set VAR=VAL, or forward VAR from this environment, for every app (repeatable; a VAR that is not set here is refused)]:VAR[=VAL]:' \
'*--env=[Set VAR=VAL, or forward VAR from this environment, for every app (repeatable; a VAR that is not set here is refused)]:VAR[=VAL]:' \
'--export=[Which of this environment the job gets besides -x\: ALL (default, as srun), NONE, or VAR\[=VAL\]\[,…\]. ALL leaves out PMIX_*, PRTE_* and OMPI_* (this command'\''s own PMIx connection and identity; the DVM gives each process its own), and sends TERM=dumb when this command'\''s stdout is not a terminal (PRRTE gives a job'\''s stdout a pty\: a log would fill with colour codes); -x TERM sends yours]:ALL|NONE|VARS:' \
'-D+[Working directory of the processes (srun'\''s -D/--chdir); a relative program path such as ./run.sh is found there]:DIR:_files -/' \
'--wdir=[Working directory of the processes (srun'\''s -D/--chdir); a relative program path such as ./run.sh is found there]:DIR:_files -/' \
'--chdir=[Working directory of the processes (srun'\''s -D/--chdir); a relative program path such as ./run.sh is found there]:DIR:_files -/' \
'-H+[Hosts to run on, node list forms such as \`node\[01-02\]\` or file\:PATH; \`NAME\:N\` uses N slots there (one by default), e.g. \`-H node04\:2\`]:LIST:($(pwatch --complete nodes 2>/dev/null))' \
'-w+[Hosts to run on, node list forms such as \`node\[01-02\]\` or file\:PATH; \`NAME\:N\` uses N slots there (one by default), e.g. \`-H node04\:2\`]:LIST:($(pwatch --complete nodes 2>/dev/null))' \
'--host=[Hosts to run on, node list forms such as \`node\[01-02\]\` or file\:PATH; \`NAME\:N\` uses N slots there (one by default), e.g. \`-H node04\:2\`]:LIST:($(pwatch --complete nodes 2>/dev/null))' \
'--map-by=[Mapping policy passed to the DVM (PMIX_MAPBY), e.g. slot, node, ppr\:2\:node, \:OVERSUBSCRIBE (more processes than cores; they are then not bound to cores)]:POLICY:(slot node core hwthread package numa l3cache ppr\:1\:node slot\:OVERSUBSCRIBE node\:OVERSUBSCRIBE)' \
'*--target=[Allocation ids the job may use (PMIX_SPAWN_TARGET; repeatable, comma-separated)]:ALLOC_ID:($(pwatch --complete allocs 2>/dev/null))' \
'(--detach)--timeout=[Kill the job and exit 8 after this long\: a plain number is minutes; or 45s, 30m, 2h, 1d, MM\:SS, \[D-\]HH\:MM\:SS]:DURATION:' \
'-o+[Write each process'\''s stdout to this file instead of forwarding it (as srun -o)\: \`%j\` is the job'\''s namespace, \`%t\` (or \`%r\`) the rank, \`%a\` the --array index, \`%A\` the array'\''s id (the namespace of the pspawn running it), \`%%\` a \`%\`; a relative path is from the job'\''s working directory. Each file is emptied once and shared by the ranks and streams that name it\: pspawn writes whole lines into it (with --detach, each process appends to it itself). A link is never followed and a file that is not your own regular file is never emptied\: both are refused before the job runs]:PATTERN:' \
'--output=[Write each process'\''s stdout to this file instead of forwarding it (as srun -o)\: \`%j\` is the job'\''s namespace, \`%t\` (or \`%r\`) the rank, \`%a\` the --array index, \`%A\` the array'\''s id (the namespace of the pspawn running it), \`%%\` a \`%\`; a relative path is from the job'\''s working directory. Each file is emptied once and shared by the ranks and streams that name it\: pspawn writes whole lines into it (with --detach, each process appends to it itself). A link is never followed and a file that is not your own regular file is never emptied\: both are refused before the job runs]:PATTERN:' \
'-e+[The same for stderr (default\: with --output, the same file)]:PATTERN:' \
'--error=[The same for stderr (default\: with --output, the same file)]:PATTERN:' \
'(--detach)--stdin=[Which rank gets pspawn'\''s stdin\: a rank number (default 0), \`all\` (each rank gets a copy, as prun'\''s --stdin all) or \`none\`]:RANK|all|none:' \
'-c+[CPUs (slots) each process takes (srun'\''s -c/--cpus-per-task; PMIX_CPUS_PER_PROC, which PRRTE reads as --map-by \:PE=N and binds each process to N cores)]:N:' \
'--cpus-per-task=[CPUs (slots) each process takes (srun'\''s -c/--cpus-per-task; PMIX_CPUS_PER_PROC, which PRRTE reads as --map-by \:PE=N and binds each process to N cores)]:N:' \
'--cpus-per-proc=[CPUs (slots) each process takes (srun'\''s -c/--cpus-per-task; PMIX_CPUS_PER_PROC, which PRRTE reads as --map-by \:PE=N and binds each process to N cores)]:N:' \
'-J+[A name for the job (srun'\''s -J/--job-name), shown in pwatch'\''s namespace table on pdvm; PMIx has no job-name attribute, so PRRTE ignores it]:NAME:' \
'--job-name=[A name for the job (srun'\''s -J/--job-name), shown in pwatch'\''s namespace table on pdvm; PMIx has no job-name attribute, so PRRTE ignores it]:NAME:' \
'(--detach --stdin)--array=[Run the app once per index, as sbatch --array\: 1-1000, 1-1000\:2, 1,5,9 or 1-3,7, with %N for at most N tasks at once. Each task gets PMIX_ARRAY_TASK_ID and SLURM_ARRAY_TASK_{ID,COUNT,MIN,MAX}; %a in -o/-e is its index]:SPEC:' \
'(--array --detach --stdin -o --output -l --tag-output)--stdin-tasks=[Read tasks from stdin, one JSON object a line ({"id"\: …, "argv"\: \[...\], "env"\: {…}, "np"\: N, "cwd"\: DIR}; only argv is required), run at most N (default 32) at once over one connection, and print JSON lines\: each task'\''s output, then an array_task result (id, nspace, exit_code) as it ends. The other flags (-n, -x, --export, -D, --target, …) apply to every task. A line may hold up to 64 MiB, and a task'\''s spawn request up to 16 MiB (what a DVM takes)\: a task beyond either, or not a task, fails alone (exit_code 2, the reason on stderr) and the stream goes on]::N:' \
'--uri=[Connect to the server at this URI, or read the URI from file\:PATH. When no flag names a server, the environment variable PMIX_TOOLS_URI (same forms) chooses the DVM for every tool of a shell or script, as FLUX_URI does (not inside a job or \`palloc -- CMD\`, whose DVM is already known)]:URI|file:PATH:_default' \
'--pid=[Connect to the server of this process id, or read the pid from file\:PATH]:PID|file:PATH:_default' \
'--namespace=[Connect to the server hosting this namespace]:NS:' \
'--nspace=[Connect to the server hosting this namespace]:NS:' \
'--tmpdir=[Look for rendezvous files under DIR instead of \$TMPDIR]:DIR:_files -/' \
'--wait-to-connect=[Delay between connection retries (see --num-connect-retries); a plain number is seconds here, as in the OpenPMIx tools (default 1s)]:SECS:' \
'--num-connect-retries=[Retry a failed connection N times, waiting --wait-to-connect between tries]:N:' \
'--default-pool[Also allow the default pool (adds the invalid namespace to PMIX_SPAWN_TARGET); alone, it overrides the allocation of PMIX_ALLOC_ID]' \
'(--detach)-l[Prefix each forwarded output line with \`\[rank\]\` (srun'\''s -l/--label)]' \
'(--detach)--tag-output[Prefix each forwarded output line with \`\[rank\]\` (srun'\''s -l/--label)]' \
'(--detach)--label[Prefix each forwarded output line with \`\[rank\]\` (srun'\''s -l/--label)]' \
'--detach[Print the job'\''s namespace and return without waiting for it]' \
'(--json)--parsable[With --detach\: print only the job'\''s namespace, nothing else (as sbatch --parsable)]' \
'-I[Inside an allocation whose slots are busy, refuse at once (exit 4) instead of waiting for them (srun'\''s -I/--immediate)]' \
'--immediate[Inside an allocation whose slots are busy, refuse at once (exit 4) instead of waiting for them (srun'\''s -I/--immediate)]' \
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
'*::app -- PROGRAM \[ARGS…\] \[\: \[APP OPTIONS\] PROGRAM \[ARGS…\]\]…:_cmdambivalent' \
&& ret=0
}

(( $+functions[_pspawn_commands] )) ||
_pspawn_commands() {
    local commands; commands=()
    _describe -t commands 'pspawn commands' commands "$@"
}

if [ "$funcstack[1]" = "_pspawn" ]; then
    _pspawn "$@"
else
    compdef _pspawn pspawn
fi
