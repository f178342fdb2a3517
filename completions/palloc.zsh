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
'-N+[Number of nodes (PMIX_ALLOC_NUM_NODES; a NEW naming no nodes asks for 1)]:N:' \
'--nodes=[Number of nodes (PMIX_ALLOC_NUM_NODES; a NEW naming no nodes asks for 1)]:N:' \
'-w+[Nodes to allocate, e.g. \`node\[01-04\],gpu7\` or file\:PATH (PMIX_ALLOC_NODE_LIST)]:LIST:($(pwatch --complete nodes 2>/dev/null))' \
'--nodelist=[Nodes to allocate, e.g. \`node\[01-04\],gpu7\` or file\:PATH (PMIX_ALLOC_NODE_LIST)]:LIST:($(pwatch --complete nodes 2>/dev/null))' \
'--exclude=[Nodes that must not be allocated, same forms as --nodelist (PMIX_ALLOC_EXCLUDE). Long form only\: \`-x\` means --env throughout the suite]:LIST:($(pwatch --complete nodes 2>/dev/null))' \
'-c+[Number of CPUs (PMIX_ALLOC_NUM_CPUS)]:N:' \
'--cpus=[Number of CPUs (PMIX_ALLOC_NUM_CPUS)]:N:' \
'--mem=[Memory, e.g. 512M, 4G; plain numbers are megabytes (PMIX_ALLOC_MEM_SIZE)]:SIZE:' \
'-t+[Time limit (PMIX_ALLOC_TIME)\: a plain number is minutes; or 45s, 30m, 2h, 1d, MM\:SS, \[D-\]HH\:MM\:SS; UNLIMITED asks for none]:DURATION:' \
'--time=[Time limit (PMIX_ALLOC_TIME)\: a plain number is minutes; or 45s, 30m, 2h, 1d, MM\:SS, \[D-\]HH\:MM\:SS; UNLIMITED asks for none]:DURATION:' \
'-p+[Scheduler queue, Slurm'\''s partition (PMIX_ALLOC_QUEUE)]:QUEUE:' \
'--partition=[Scheduler queue, Slurm'\''s partition (PMIX_ALLOC_QUEUE)]:QUEUE:' \
'--queue=[Scheduler queue, Slurm'\''s partition (PMIX_ALLOC_QUEUE)]:QUEUE:' \
'-A+[Account to charge (psched on Slurm\: \`salloc --account\`). pdvm and psched'\''s pool have no accounts and ignore it]:ACCOUNT:' \
'--account=[Account to charge (psched on Slurm\: \`salloc --account\`). pdvm and psched'\''s pool have no accounts and ignore it]:ACCOUNT:' \
'--qos=[Quality of service (psched on Slurm\: \`salloc --qos\`). pdvm and psched'\''s pool ignore it]:QOS:' \
'--reservation=[Run in this reservation of the resource manager (psched on Slurm\: \`salloc --reservation\`). pdvm and psched'\''s pool have no such reservations and ignore it]:NAME:' \
'-C+[Node features to require, e.g. \`gpu&ib\` (psched on Slurm\: \`salloc --constraint\`). pdvm and psched'\''s pool have no node features and ignore it]:FEATURES:' \
'--constraint=[Node features to require, e.g. \`gpu&ib\` (psched on Slurm\: \`salloc --constraint\`). pdvm and psched'\''s pool have no node features and ignore it]:FEATURES:' \
'(--extend-request)-J+[Your own name for this request, echoed in the reply (PMIX_ALLOC_REQ_ID)]:REQ_ID:' \
'(--extend-request)--request-id=[Your own name for this request, echoed in the reply (PMIX_ALLOC_REQ_ID)]:REQ_ID:' \
'(--extend-request)--job-name=[Your own name for this request, echoed in the reply (PMIX_ALLOC_REQ_ID)]:REQ_ID:' \
'-o+[A batch script'\''s log (with \`--no-wait -- SCRIPT\` only, as sbatch -o)\: \`%j\` and \`%x\` are the request id, \`%%\` a \`%\`; relative to the current folder. Default\: palloc-ID.out there]:FILE:' \
'--output=[A batch script'\''s log (with \`--no-wait -- SCRIPT\` only, as sbatch -o)\: \`%j\` and \`%x\` are the request id, \`%%\` a \`%\`; relative to the current folder. Default\: palloc-ID.out there]:FILE:' \
'--target=[Reserve for this namespace instead of your own (PMIX_ALLOC_TARGET; tools only)]:NSPACE:($(pwatch --complete namespaces 2>/dev/null))' \
'--inherit=[What happens when the owner ends\: none, child, default, child-default (PMIX_ALLOC_INHERITANCE). Not given, palloc outside a job sends \`child\` (the nodes go back to the scheduler once palloc and the jobs it started have ended, so none is left behind, however palloc ends), and gives the allocation back itself when it ends; inside a job it sends nothing (the DVM'\''s default, \`default\`). With \`default\` or \`child-default\` the nodes stay in the DVM unreserved (\`pwatch --status\` shows ORIGIN \`scheduler\`); \`prelease \$(palloc -w NODES --parsable)\` gives them back]:RULE:(none child default child-default)' \
'--warn-timeout=[Ask for a warning this long before the time limit (PMIX_ALLOC_WARN_TIMEOUT)\: a plain number is minutes; or 45s, 30m, 2h, MM\:SS, \[D-\]HH\:MM\:SS. Only with -- CMD or --hold (palloc prints the warning)\: where palloc returns at once nobody would hear it, so it is refused (exit 2)]:DURATION:' \
'--extend=[Extend the allocation with this id (PMIX_ALLOC_EXTEND + PMIX_ALLOC_ID)]::ALLOC_ID:($(pwatch --complete allocs 2>/dev/null))' \
'--extend-request=[Extend the allocation requested under this request id (PMIX_ALLOC_EXTEND + PMIX_ALLOC_REQ_ID)]:REQ_ID:' \
'--uri=[Connect to the server at this URI, or read the URI from file\:PATH. When no flag names a server, the environment variable PMIX_TOOLS_URI (same forms) chooses the DVM for every tool of a shell or script, as FLUX_URI does (not inside a job or \`palloc -- CMD\`, whose DVM is already known)]:URI|file:PATH:_default' \
'--pid=[Connect to the server of this process id, or read the pid from file\:PATH]:PID|file:PATH:_default' \
'--namespace=[Connect to the server hosting this namespace]:NS:' \
'--nspace=[Connect to the server hosting this namespace]:NS:' \
'--tmpdir=[Look for rendezvous files under DIR instead of \$TMPDIR]:DIR:_files -/' \
'--wait-to-connect=[Delay between connection retries (see --num-connect-retries); a plain number is seconds here, as in the OpenPMIx tools (default 1s)]:SECS:' \
'--num-connect-retries=[Retry a failed connection N times, waiting --wait-to-connect between tries]:N:' \
'--exclusive[Whole nodes, shared with no other job of the resource manager (psched on Slurm\: \`salloc --exclusive\`; without it Slurm is asked only for the CPUs wanted). pdvm and psched'\''s pool always grant whole nodes]' \
'--share[Put the nodes in the default session for everyone (PMIX_ALLOC_SHARE=true)]' \
'(--hold)--no-wait[Submit the request and return at once, printing its request id (like sbatch). Outside a job a detached palloc keeps the request, then holds the grant until it is released (\`prelease ID\`) or expires, or, with \`-- SCRIPT\`, runs SCRIPT in it (output in palloc-NAME.out, NAME from -J); \`prelease REQ_ID\` withdraws it while queued, or stops it]' \
'--hold[After the grant, print the id and keep the allocation until SIGINT/SIGTERM]' \
'(--hold --no-wait --extend --extend-request)--stdin-requests[Submit batch jobs read from stdin, one a line, each a JSON array of the arguments of \`palloc --no-wait\` (e.g. \`\["-J","job1","-N","1","--","/bin/bash","job1.sh"\]\`), and answer each with one JSON line on stdout\: \`{"type"\:"request","request_id"\:ID,"state"\:"submitted"}\`, or \`{"type"\:"error",…,"message"\:…,"exit_code"\:N}\` with the status palloc --no-wait would exit with (a line that is not such an array\: exit code 2). One palloc serves a whole workflow (PSI/J'\''s \`pmix\` executor) instead of one process per job; end of input ends it, and the jobs it submitted go on, each held by its detached palloc as with --no-wait. While it runs, the end of each job'\''s detached palloc is said unasked, as soon as it happens\: one line holding the job'\''s batch record (\`{"type"\:"batch",…}\`, as \`pwatch --status --all\` lists it\: its state, exit code or signal)]' \
'(--json)--parsable[Print only the allocation id (with --no-wait, the request id), as sbatch --parsable]' \
'--keep[With \`-- CMD\`\: do not release the allocation when CMD ends (the --inherit rule then decides what becomes of it when its owner ends)]' \
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
'*::command -- Command to run inside the allocation once granted (after `--`)\: a local process with your environment, directory, stdin and terminal; the tools it runs act within the allocation:_cmdambivalent' \
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
