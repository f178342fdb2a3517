#!/bin/sh
# CHILD inheritance (spec 001 §8.2.1.9.2): a reservation owned by a short-lived
# namespace survives its owner while a job spawned into it still runs, and is
# returned to the scheduler when that last derived job ends.
#
#   pdvm --nodes 1 --scheduler-nodes 2 --time-scale 60 -- examples/child-drain.sh
set -eu

echo "== a helper job reserves a node with CHILD inheritance and starts a worker in it"
OUT=$(pspawn -n 1 sh -c '
    A=$(palloc -N 1 --inherit child --json | sed -n "s/.*\"alloc_id\":\"\([^\"]*\)\".*/\1/p" | head -n 1)
    echo "alloc=$A"
    pspawn --detach --target "$A" -n 1 sleep 3
')
ALLOC=$(printf '%s\n' "$OUT" | sed -n 's/^alloc=//p')
echo "helper ended; reservation $ALLOC drains while its worker runs"
pwatch --status reservations

echo "== wait for the worker: the reservation then goes back to the scheduler"
sleep 4
pwatch --status reservations nodes
