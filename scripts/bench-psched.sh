#!/bin/bash
# N simultaneous `palloc -N 1 -t 10m --parsable` against PRRTE master with
# psched owning N nodes (scripts/prrte-cluster.sh start --psched N): how many
# were granted, grant latency (p50, p99: each palloc from start to exit,
# through the namespace prefix), psched CPU time per request (schedstat,
# including its periodic reconcile queries), whether a node was granted
# twice, and how many prted daemons PRRTE master runs at the end.
# Usage: scripts/bench-psched.sh [N]   (release build: cargo build --release)
set -u
N=${1:-30}
cd "$(dirname "$0")/.."
export PATH=$PWD/target/release:$PATH PSCHED=$PWD/target/release/psched PRRTE_CLUSTER_STATE=${TMPDIR:-/tmp}/psched-bench-$$/cl PMIX_TOOLS_PEERS=${PMIX_TOOLS_PEERS:-$PWD/.peers}
R=scripts/prrte-cluster.sh
# Stop the cluster however the script ends (an interrupt, a failed start).
trap '$R stop >/dev/null 2>&1; rm -rf "${TMPDIR:-/tmp}/psched-bench-$$"' EXIT
trap 'exit 130' INT TERM
$R start --psched $N >/dev/null 2>&1 || { echo start failed; exit 1; }
pp=$(cat $PRRTE_CLUSTER_STATE/psched.pid)
cpu0=$(awk "{print \$1}" /proc/$pp/schedstat)
out=${TMPDIR:-/tmp}/psched-bench-$$/out; rm -rf $out; mkdir -p $out
for i in $(seq $N); do
  ( s=$(date +%s%N); timeout 300 $R run palloc -N 1 -t 10m --parsable >$out/$i.id 2>$out/$i.err; rc=$?; e=$(date +%s%N); echo "$rc $(( (e-s)/1000000 ))" >$out/$i.t ) &
done
wait
cpu1=$(awk "{print \$1}" /proc/$pp/schedstat)
ok=$(cat $out/*.t | awk '$1==0' | wc -l)
echo "granted ok: $ok / $N"
cat $out/*.t | awk '{print $2}' | sort -n | awk '{a[NR]=$1} END{print "latency ms p50", a[int(NR*0.5+0.5)], "p99", a[int(NR*0.99+0.5)], "max", a[NR]}'
echo "psched cpu us total $(( (cpu1-cpu0)/1000 )), per request $(( (cpu1-cpu0)/1000/N ))"
$PSCHED --status --nodes "node[02-$(printf %02d $((N+1)))]" --ledger $PRRTE_CLUSTER_STATE/psched-ledger.json | python3 -c '
import json,sys; d=json.load(sys.stdin); nodes=[n for g in d["grants"] for n in g["nodes"]]
print("grants", len(d["grants"]), "nodes held", len(nodes), "distinct", len(set(nodes)))'
echo "prted running: $(pgrep -c -f "^/[^ ]*/prted .*ess_base_nspace prte-node01-$(cat $PRRTE_CLUSTER_STATE/prte.pid)@0")"
