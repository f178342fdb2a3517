#!/usr/bin/env bash
# The README figure for a multi-node PRRTE master on one machine
# (scripts/prrte-cluster.sh):
#
#   cluster start-up   `prrte-cluster.sh start -n 4 -s 2` until every daemon
#                      reported ("DVM ready"), then `stop`
#   pspawn -n 8        `pspawn -n 8 --map-by node hostname` across the 4 nodes
#                      vs PRRTE's own `prun -n 8 --map-by node hostname`, as
#                      is and with `--stdin none` (many prun runs take about
#                      5 s more before they exit: the range shows it)
#
# Usage: scripts/bench-cluster.sh [RUNS]   (default 10; release build)
# Needs what prrte-cluster.sh needs (root or unprivileged user namespaces).
# Start-up runs RUNS times; the spawns run A, B, C, A, B, C, … RUNS times each
# (after one warm-up of each) against one cluster, every run bounded by
# `timeout 60`, all through the same namespace prefix, stdin /dev/null.
# Prints medians (ms) with their range, the ratio of the medians of prun
# --stdin none and pspawn and the median of their pairwise ratios. Exits
# non-zero if any run fails.
set -euo pipefail

runs="${1:-10}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cluster="$repo/scripts/prrte-cluster.sh"
prrte="${PRRTE_PREFIX:-${PMIX_TOOLS_PEERS:-$repo/.peers}/master/prrte}"
[ -x "$prrte/bin/prun" ] || { echo "bench-cluster: no PRRTE master at $prrte: run scripts/install-peers.sh" >&2; exit 1; }

cargo build --release --bins --quiet --manifest-path "$repo/Cargo.toml"
export PATH="$repo/target/release:$PATH"
export PRRTE_PREFIX="$prrte"
PRRTE_CLUSTER_STATE="$(mktemp -d /tmp/bench-cluster.XXXXXX)"
export PRRTE_CLUSTER_STATE
trap '"$cluster" stop >/dev/null 2>&1 || true; rm -rf "$PRRTE_CLUSTER_STATE"' EXIT

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.1f\n", (a[NR/2]+a[NR/2+1])/2}'; }
minmax() { sort -n | awk 'NR==1{lo=$1} {hi=$1} END{printf "%s-%s", lo, hi}'; }

# Start-up: start, then stop (not timed), RUNS times.
startup=()
for _ in $(seq "$runs"); do
    t0=$(now_ms)
    timeout 60 "$cluster" start -n 4 -s 2 >/dev/null
    t1=$(now_ms)
    startup+=($((t1 - t0)))
    "$cluster" stop >/dev/null
done

"$cluster" start -n 4 -s 2 >/dev/null
uri="file:$PRRTE_CLUSTER_STATE/uri.txt"
ours=(pspawn -n 8 --map-by node hostname)
theirs=("$prrte/bin/prun" --dvm-uri "$uri" -n 8 --map-by node hostname)
quiet=("$prrte/bin/prun" --dvm-uri "$uri" --stdin none -n 8 --map-by node hostname)
one() { timeout 60 "$cluster" run "$@" </dev/null >/dev/null 2>&1; }
one "${ours[@]}" && one "${theirs[@]}" && one "${quiet[@]}"
a=(); b=(); c=(); r=()
for _ in $(seq "$runs"); do
    t0=$(now_ms); one "${ours[@]}"; t1=$(now_ms); one "${theirs[@]}"; t2=$(now_ms)
    one "${quiet[@]}"; t3=$(now_ms)
    a+=($((t1 - t0))); b+=($((t2 - t1))); c+=($((t3 - t2)))
    r+=("$(awk -v x=$((t1 - t0)) -v y=$((t3 - t2)) 'BEGIN{printf "%.3f", (x ? y / x : 0)}')")
done

ms=$(printf '%s\n' "${startup[@]}" | median)
ma=$(printf '%s\n' "${a[@]}" | median)
mb=$(printf '%s\n' "${b[@]}" | median)
mc=$(printf '%s\n' "${c[@]}" | median)
mr=$(printf '%s\n' "${r[@]}" | median)
echo "median of $runs runs, 4 nodes x 2 slots (prrte-cluster.sh), $(nproc) cores, stdin /dev/null"
printf '%-46s %8s ms   (range %s)\n' "cluster start-up (start until DVM ready)" "$ms" "$(printf '%s\n' "${startup[@]}" | minmax)"
printf '%-46s %8s ms   (range %s)\n' "pspawn -n 8 --map-by node hostname" "$ma" "$(printf '%s\n' "${a[@]}" | minmax)"
printf '%-46s %8s ms   (range %s)\n' "prun -n 8 --map-by node hostname" "$mb" "$(printf '%s\n' "${b[@]}" | minmax)"
printf '%-46s %8s ms   (range %s)\n' "prun --stdin none -n 8 --map-by node hostname" "$mc" "$(printf '%s\n' "${c[@]}" | minmax)"
printf '%-46s %8s x (median of pairwise ratios %s x)\n' "prun --stdin none / pspawn" \
    "$(awk -v x="$ma" -v y="$mc" 'BEGIN{printf "%.1f", y / x}')" "$(awk -v x="$mr" 'BEGIN{printf "%.1f", x}')"
