complete -c pdvm -l nodes -d 'Simulated nodes in the default session' -r -f
complete -c pdvm -l slots -d 'Slots per node' -r -f
complete -c pdvm -l scheduler-nodes -d 'Further nodes the simulated scheduler can grant (0 allowed)' -r -f
complete -c pdvm -l tmpdir -d 'Directory for rendezvous files (default $TMPDIR)' -r -f -a "(__fish_complete_directories)"
complete -c pdvm -l time-scale -d 'Run simulated time this many times faster (a positive number)' -r -f
complete -c pdvm -l job-history -d 'Keep the last N ended jobs for `pwatch --status --all` and a late `pwatch --job` (0 allowed); older ones are forgotten, so pdvm\'s memory does not grow with the jobs it has run' -r -f
complete -c pdvm -l release -d 'Release allocation ALLOC_ID as the simulated scheduler, whoever owns it (an administrator\'s `scancel`; the scheduler is an implicit owner of every reservation, spec §8.2.1.7): its nodes go back to the scheduler and its owner is told, as at an expiry' -r -f
complete -c pdvm -l report-uri -d 'Write the server URI (and PMIx version) into FILE, like `prte --report-uri`' -r -F
complete -c pdvm -l pmix-compat -d 'Behave as a DVM whose PMIx lacks the reservation attributes (§8.2.1.10)'
complete -c pdvm -l daemonize -d 'Detach and run in the background once ready'
complete -c pdvm -l terminate -d 'Stop the running pdvm found through the rendezvous files'
complete -c pdvm -s q -l quiet -d 'Print less (repeatable)'
complete -c pdvm -s v -l verbose -d 'Print more: requests and decisions on stderr (repeatable)'
complete -c pdvm -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pdvm -s V -l version -d 'Print version'
