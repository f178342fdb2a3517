#compdef psched

autoload -U is-at-least

_psched() {
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
'--nodes=[The nodes psched owns, as a list with ranges\: \`node\[03-08\]\`, \`n1,n2\` (the pool backend; with \`--backend slurm\` Slurm has the nodes)]:LIST:' \
'--backend=[Where the nodes come from\: \`pool\` (psched'\''s own, \`--nodes\`) or \`slurm\` (the Slurm that SLURM_CONF names\: each allocation is an exclusive Slurm job; time limits, partitions and queueing are Slurm'\''s)]:pool|slurm:' \
'--slots=[Slots per node (recorded in the ledger, and said to PRRTE master as it first hears of the node\: \`node02\:2\`; without it PRRTE gives a scheduler'\''s node one slot)]:N:' \
'*--partition=[A partition\: \`NAME\[\:DEFAULT\[\:MAX\]\]\` with time limits such as \`10m\`, \`1h\`, \`30s\`; the first is used when a request names none. Default\: \`batch\` without limits]:SPEC:' \
'--ledger=[The ledger file (grants survive a restart)]:PATH:_files' \
'--retry=[Seconds between attempts to attach to the DVM]:SECS:' \
'--time-scale=[Run psched'\''s clock F times faster, for trying workflows\: a request'\''s time limit and warning threshold are divided by F (the ledger keeps real times), a warning'\''s seconds left multiplied back. As \`pdvm --time-scale\`\: with 60 a minute lasts a second]:F:' \
'--status-uri=[Serve status queries on a loopback socket and write its URI (and PMIx version) to PATH, so that \`pwatch --status --uri file\:PATH\` shows psched'\''s queues (nodes, free nodes, pending requests), its grants as reservations with their expiry, and its pool as nodes]:PATH:' \
'(--status)--release=[Release the grant ID as the scheduler (which may release any reservation, spec 001 §8.2.1.7), through the psched serving --ledger\: its nodes return to the pool and the DVM is told to end the session. Waits at most 15 s for psched to act]:ID:($(pwatch --complete allocs 2>/dev/null))' \
'--uri=[Connect to the server at this URI, or read the URI from file\:PATH. When no flag names a server, the environment variable PMIX_TOOLS_URI (same forms) chooses the DVM for every tool of a shell or script, as FLUX_URI does (not inside a job or \`palloc -- CMD\`, whose DVM is already known)]:URI|file:PATH:_default' \
'--pid=[Connect to the server of this process id, or read the pid from file\:PATH]:PID|file:PATH:_default' \
'--namespace=[Connect to the server hosting this namespace]:NS:' \
'--nspace=[Connect to the server hosting this namespace]:NS:' \
'--tmpdir=[Look for rendezvous files under DIR instead of \$TMPDIR]:DIR:_files -/' \
'--wait-to-connect=[Delay between connection retries (see --num-connect-retries); a plain number is seconds here, as in the OpenPMIx tools (default 1s)]:SECS:' \
'--num-connect-retries=[Retry a failed connection N times, waiting --wait-to-connect between tries]:N:' \
'--once[Exit when the DVM goes away instead of waiting for a new one]' \
'--status[Print psched'\''s state from its ledger as one JSON object and exit\: queues (partitions with their limits), pool, free nodes, nodes the DVM kept (retained), pending requests, and each grant with its expiry (\`expires_at_ms\`) and seconds left (\`left_secs\`)]' \
'--status-public[Let every local user query the status socket. Without it only psched'\''s own user and root are answered (the grants name every user'\''s jobs); others are closed at once]' \
'(--status --release)--check[Check the setup and exit, printing one line per finding (\`ok\`, \`warn\`, \`FAIL\` and what to do)\: the DVM is found and takes a scheduler, no other psched serves it, the ledger'\''s folder is writable, and with \`--backend slurm\` Slurm'\''s commands are on PATH, its controller answers and it has partitions. Exit 0 when nothing failed, 1 otherwise]' \
'--system-server-first[Try the system server first, then fall back to others]' \
'(--system-server-first)--system-server-only[Connect only to the system server]' \
'--as-tool[Connect as a tool with a fresh namespace even inside a job (by default a tool run inside a job acts for that job'\''s namespace)]' \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
&& ret=0
}

(( $+functions[_psched_commands] )) ||
_psched_commands() {
    local commands; commands=()
    _describe -t commands 'psched commands' commands "$@"
}

if [ "$funcstack[1]" = "_psched" ]; then
    _psched "$@"
else
    compdef _psched psched
fi
