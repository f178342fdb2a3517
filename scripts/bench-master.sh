#!/usr/bin/env bash
# Side-by-side timings against one PRRTE master DVM (built by
# scripts/install-peers.sh): our tools vs PRRTE's and OpenPMIx's own.
#
#   pspawn -n 1 /bin/true     vs  prun -n 1 /bin/true
#   palloc -N 1 -- true       vs  OpenPMIx master palloc -N 1
#   pwatch --status           vs  OpenPMIx master pps
#
# The palloc pair needs a scheduler (PRRTE master alone refuses every
# allocation): it runs on scripts/prrte-cluster.sh's multi-node DVM with
# psched attached, owning RUNS+2 nodes. Ours reserves a node, runs `true`
# there and gives it back; OpenPMIx's palloc has no release (the node stays
# reserved until the DVM ends), so each of its runs takes a fresh node.
#
# Usage: scripts/bench-master.sh [RUNS]   (default 10; release build)
# Each pair runs A, B, A, B, … RUNS times each (after one warm-up of each),
# every run bounded by `timeout 60`. Prints per pair the median wall time of
# each side, the ratio of the medians and the median of the pairwise ratios.
# Exits non-zero if any run fails or times out.
set -euo pipefail

runs="${1:-10}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
peers="${PMIX_TOOLS_PEERS:-$repo/.peers}"
master="$peers/master"
[ -x "$master/prrte/bin/prte" ] || { echo "bench-master: no PRRTE master at $master: run scripts/install-peers.sh" >&2; exit 1; }

cargo build --release --bins --quiet --manifest-path "$repo/Cargo.toml"
bin="$repo/target/release"

dir="$(mktemp -d /tmp/bench-master.XXXXXX)"
root_flag=()
[ "$(id -u)" -eq 0 ] && root_flag=(--allow-run-as-root)
env -i PATH=/usr/bin:/bin HOME="$HOME" TMPDIR="$dir" \
    "$master/prrte/bin/prte" "${root_flag[@]}" --prtemca prte_num_worker_threads 0 \
    --report-uri "$dir/uri" >"$dir/prte.log" 2>&1 &
dvm=$!
cleanup() {
    kill "$dvm" 2>/dev/null || true
    wait "$dvm" 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT
for _ in $(seq 200); do
    grep -q "DVM ready" "$dir/prte.log" 2>/dev/null && [ -s "$dir/uri" ] && break
    sleep 0.1
done
grep -q "DVM ready" "$dir/prte.log" || { echo "bench-master: PRRTE master did not start" >&2; cat "$dir/prte.log" >&2; exit 1; }

export TMPDIR="$dir"
unset PMIX_NAMESPACE PMIX_RANK PMIX_SERVER_URI41 PMIX_SERVER_URI4 PMIX_SERVER_URI3 PMIX_SERVER_URI2 PMIX_SERVER_URI21

# shellcheck source=scripts/bench-lib.sh
. "$repo/scripts/bench-lib.sh"

echo "PRRTE master $("$master/prrte/bin/prte" --version 2>/dev/null | awk '/PRRTE/ {print $NF; exit}'), $runs runs each, wall time"
echo "| ours | median | theirs | median | ratio of medians | median pairwise ratio |"
echo "|---|---|---|---|---|---|"
pair "pspawn -n 1 /bin/true" "prun -n 1 /bin/true" \
    ::: "$bin/pspawn" -n 1 /bin/true \
    ::: "$master/prrte/bin/prun" "${root_flag[@]}" --dvm-uri "file:$dir/uri" -n 1 /bin/true
pair "pwatch --status" "OpenPMIx pps" \
    ::: "$bin/pwatch" --status \
    ::: "$master/pmix/bin/pps"
kill -0 "$dvm" 2>/dev/null || { echo "bench-master: PRRTE master died during the benchmark" >&2; exit 1; }

# The palloc pair, on PRRTE master with psched (see the top).
cluster="$repo/scripts/prrte-cluster.sh"
export PRRTE_CLUSTER_STATE="$dir/cluster" PSCHED="$bin/psched" PRRTE_PREFIX="$master/prrte"
"$cluster" start --psched $((runs + 2)) >"$dir/cluster.log" 2>&1 || { echo "bench-master: the PRRTE master cluster with psched did not start" >&2; cat "$dir/cluster.log" >&2; exit 1; }
cleanup_cluster() { "$cluster" stop >/dev/null 2>&1 || true; cleanup; }
trap cleanup_cluster EXIT
read -r -a inside <<<"$("$cluster" prefix)"
pair "palloc -N 1 -- true (psched)" "OpenPMIx palloc -N 1 (psched)" \
    ::: env "${inside[@]}" "$bin/palloc" -N 1 -- true \
    ::: env "${inside[@]}" "$master/pmix/bin/palloc" --uri "file:$PRRTE_CLUSTER_STATE/uri.txt" -N 1
echo "PRRTE master alive after the benchmark"
