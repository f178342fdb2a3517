#!/bin/sh
# CHILD inheritance (spec 000 §6.5.1.4, spec 001 §8.2.1.9.2): an orchestrator
# reserves a node with --inherit child, launches a worker into the
# reservation (the worker launches a grandchild the same way) and exits
# early. The reservation outlives the orchestrator while any descendant runs,
# and goes back to the scheduler when the last one ends.
#
#   pdvm --nodes 1 --slots 2 --scheduler-nodes 1 -- examples/child-drain.sh
#
# or, unchanged, as a job of PRRTE master with psched attached (see the
# README, "psched"):
#
#   pspawn -n 1 sh examples/child-drain.sh
#
# The script checks each step and exits non-zero when one does not hold.
set -eu

DIR=$(mktemp -d "${TMPDIR:-/tmp}/child-drain.XXXXXX")
trap 'touch "$DIR/worker.go" "$DIR/grandchild.go"; rm -rf "$DIR"' EXIT

fail() { echo "FAIL: $*"; exit 1; }

# present ID: is reservation ID listed by the DVM?
present() {
    pwatch --status --what reservations --json | grep -q "\"alloc_id\":\"$1\""
}

# ended NSPACE: has job NSPACE terminated? (pdvm lists it as terminated
# with --all; PRRTE master lists it no more)
ended() {
    ! pwatch --status --what namespaces --all --json | tr '{' '\n' |
        grep "\"nspace\":\"$1\"" | grep -qv '"state":"terminated"'
}

# within SECS CMD…: poll CMD every 50 ms for at most SECS seconds
within() {
    n=$(($1 * 20)); shift
    while ! "$@"; do
        n=$((n - 1)); [ "$n" -gt 0 ] || return 1
        sleep 0.05
    done
}

# A job body that waits (at most 60 s) for its go-file.
cat >"$DIR/wait.sh" <<'BODY'
i=0; while [ ! -e "$1" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
BODY

cat >"$DIR/worker.sh" <<BODY
echo "worker \$PMIX_NAMESPACE on \$PMIX_HOSTNAME starts a grandchild in \$1"
pspawn --detach --target "\$1" -n 1 sh "$DIR/wait.sh" "$DIR/grandchild.go" >"$DIR/grandchild.ns"
sh "$DIR/wait.sh" "$DIR/worker.go"
BODY

cat >"$DIR/orchestrator.sh" <<BODY
set -eu
A=\$(palloc -N 1 --inherit child --json | sed -n 's/.*"alloc_id":"\([^"]*\)".*/\1/p' | head -n 1)
[ -n "\$A" ] || exit 3
echo "alloc=\$A"
W=\$(pspawn --detach --target "\$A" -n 1 sh "$DIR/worker.sh" "\$A")
echo "worker=\$W"
echo "orchestrator \$PMIX_NAMESPACE exits early"
BODY

echo "== the orchestrator reserves a node with CHILD inheritance and launches a worker"
OUT=$(pspawn -n 1 sh "$DIR/orchestrator.sh") || fail "orchestrator: $OUT"
printf '%s\n' "$OUT"
ALLOC=$(printf '%s\n' "$OUT" | sed -n 's/^alloc=//p')
WORKER=$(printf '%s\n' "$OUT" | sed -n 's/^worker=//p')
[ -n "$ALLOC" ] && [ -n "$WORKER" ] || fail "no allocation or worker"

echo "== the orchestrator has ended; $ALLOC drains while its descendants run"
present "$ALLOC" || fail "$ALLOC ended with its orchestrator"
pwatch --status --what reservations

echo "== the worker ends; its grandchild still runs, so $ALLOC stays"
within 10 test -s "$DIR/grandchild.ns" || fail "no grandchild"
touch "$DIR/worker.go"
within 10 ended "$WORKER" || fail "worker did not end"
present "$ALLOC" || fail "$ALLOC ended before its last descendant"

echo "== the grandchild ends: $ALLOC goes back to the scheduler"
touch "$DIR/grandchild.go"
within 10 eval '! present "$ALLOC"' || fail "$ALLOC outlived its last descendant"
pwatch --status --what nodes
echo "released $ALLOC after its last descendant"
