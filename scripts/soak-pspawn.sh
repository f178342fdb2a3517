#!/usr/bin/env bash
# Soak test: N back-to-back `pspawn -n 1 /bin/true` against a private PRRTE
# 3.0.14 DVM (the wheel installed by scripts/install-peers.sh).
#
# usage: scripts/soak-pspawn.sh [N]        (N defaults to 1000)
#
# Each run is bounded by `timeout 30`; a run that hits it (exit 124) is a
# hang. Prints one summary line:
#   soak-pspawn: N runs: S ok, F failed, H hung (L job ends learned by query: event lost); median X ms per run
# (L counts runs whose job-end event never came and whose end pspawn learned
# by asking the DVM) and exits non-zero when any run hung, the DVM died, or
# it could not be started.
# Uses target/release/pspawn (build it with `cargo build --release --bins`);
# set PSPAWN to use another binary, PMIX_TOOLS_PEERS for another peer cache.
set -u

N=${1:-1000}
case $N in '' | *[!0-9]*)
    echo "usage: $0 [N]" >&2
    exit 2
    ;;
esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PEERS=${PMIX_TOOLS_PEERS:-$ROOT/.peers}
VENV=$PEERS/venv
PSPAWN=${PSPAWN:-$ROOT/target/release/pspawn}
PER_RUN=30

[ -x "$VENV/bin/prte" ] || { echo "$0: no PRRTE 3.0.14 at $VENV; run scripts/install-peers.sh" >&2; exit 3; }
[ -x "$PSPAWN" ] || { echo "$0: no $PSPAWN; run cargo build --release --bins" >&2; exit 3; }

D=$(mktemp -d "${TMPDIR:-/tmp}/soak-pspawn.XXXXXX")
PRTE_PID=
stop_dvm() {
    if [ -n "$PRTE_PID" ] && kill -0 "$PRTE_PID" 2>/dev/null; then
        kill -TERM "$PRTE_PID" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$PRTE_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$PRTE_PID" 2>/dev/null
        wait "$PRTE_PID" 2>/dev/null
    fi
    PRTE_PID=
}
cleanup() {
    stop_dvm
    rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ROOTFLAG=
[ "$(id -u)" = 0 ] && ROOTFLAG=--allow-run-as-root
TMPDIR=$D PRTE_PREFIX=$VENV PMIX_INSTALL_PREFIX=$VENV OPAL_PREFIX=$VENV \
    "$VENV/bin/prte" $ROOTFLAG --report-uri "$D/uri" </dev/null >"$D/prte.out" 2>"$D/prte.err" &
PRTE_PID=$!
for _ in $(seq 300); do
    grep -q "DVM ready" "$D/prte.out" 2>/dev/null && [ "$(wc -l <"$D/uri" 2>/dev/null)" -ge 2 ] && break
    kill -0 "$PRTE_PID" 2>/dev/null || break
    sleep 0.1
done
if ! grep -q "DVM ready" "$D/prte.out" 2>/dev/null; then
    echo "$0: the DVM did not start:" >&2
    cat "$D/prte.out" "$D/prte.err" >&2
    exit 3
fi

ok=0 failed=0 hung=0 lost=0 died=0
: >"$D/times"
for i in $(seq "$N"); do
    t0=$(date +%s%N)
    TMPDIR=$D timeout "$PER_RUN" "$PSPAWN" -v --uri "file:$D/uri" -n 1 /bin/true </dev/null >/dev/null 2>"$D/last.err"
    rc=$?
    t1=$(date +%s%N)
    if grep -q "never announced" "$D/last.err"; then
        lost=$((lost + 1))
        grep "never announced" "$D/last.err" >>"$D/pspawn.err"
    fi
    [ "$rc" = 0 ] || cat "$D/last.err" >>"$D/pspawn.err"
    echo $(((t1 - t0) / 1000)) >>"$D/times"
    case $rc in
    0) ok=$((ok + 1)) ;;
    124) hung=$((hung + 1)); echo "run $i: hung (killed after ${PER_RUN}s)" >&2 ;;
    *) failed=$((failed + 1)); echo "run $i: exit $rc" >&2 ;;
    esac
    if ! kill -0 "$PRTE_PID" 2>/dev/null; then
        echo "$0: the DVM died during run $i" >&2
        died=1
        break
    fi
done

median_us=$(sort -n "$D/times" | awk '{a[NR]=$1} END {if (NR == 0) print 0; else if (NR % 2) print a[(NR+1)/2]; else print int((a[NR/2]+a[NR/2+1])/2)}')
runs=$(wc -l <"$D/times")
printf 'soak-pspawn: %d runs: %d ok, %d failed, %d hung (%d job ends learned by query: event lost); median %d.%03d ms per run\n' \
    "$runs" "$ok" "$failed" "$hung" "$lost" $((median_us / 1000)) $((median_us % 1000))
if [ -s "$D/pspawn.err" ]; then
    echo "pspawn stderr (last lines):" >&2
    tail -n 5 "$D/pspawn.err" >&2
fi
[ "$hung" -eq 0 ] && [ "$died" -eq 0 ]
