#!/bin/sh
# The spec-001 workflow in one script: reservation, inheritance, spawn
# targeting (one reservation, then reservation + default pool), a timeout
# warning answered by an EXTEND, and release.
#
# Run it as pdvm's session leader (every tool below then acts for the
# script's namespace; pdvm puts the tools on PATH):
#
#   pdvm --nodes 2 --scheduler-nodes 4 --time-scale 60 -- examples/reservation-workflow.sh
#
# With --time-scale 60 a simulated minute lasts one real second.
#
# Unchanged on PRRTE master with psched attached (`psched --time-scale 60`
# for the same fast clock; see the README, "psched"), as a job of the DVM:
#
#   pspawn -n 1 sh examples/reservation-workflow.sh
set -eu

field() { # field NAME: first "NAME":"value" of a JSON line on stdin
    sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p" | head -n 1
}

echo "== session leader: $PMIX_NAMESPACE (rank $PMIX_RANK) on $PMIX_HOSTNAME"

echo "== NEW: 2 scheduler nodes for 10 minutes, CHILD inheritance"
ALLOC=$(palloc -N 2 -t 10m --inherit child --request-id wf-main --json | field alloc_id)
[ -n "$ALLOC" ] || { echo "FAIL: palloc granted nothing"; exit 1; }
echo "reserved $ALLOC"

echo "== spawn targeting the reservation only"
pspawn --target "$ALLOC" -n 2 sh -c 'echo "rank $PMIX_RANK on $PMIX_HOSTNAME in $PMIX_ALLOC_ID"'

echo "== spawn targeting the reservation plus the default pool"
pspawn --target "$ALLOC" --default-pool -n 4 sh -c 'echo "rank $PMIX_RANK on $PMIX_HOSTNAME"'

echo "== arm a warning 5 minutes before expiry; answer it with a 10-minute EXTEND"
pwatch --alloc "$ALLOC" --warn-timeout 5m --event timeout-warning --count 1 --extend-by 10m

echo "== state after the extend"
pwatch --status --what reservations

echo "== release"
prelease "$ALLOC"
pwatch --status --what all
