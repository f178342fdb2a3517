#!/usr/bin/env bash
# Side-by-side timings of the pmix-tools habits against Slurm's on this
# machine: our tools against a daemonized pdvm (4 scheduler nodes), Slurm's
# against a running local Slurm (slurmctld + slurmd; `sinfo` must answer).
#
#   salloc -N1 true     vs  palloc -N 1 -- true
#   srun -n1 true       vs  pspawn -n 1 true
#   squeue              vs  pwatch --status
#
# Usage: scripts/bench-slurm.sh [RUNS]   (default 20; release build)
# Prints median wall times, the ratio of the medians and the median pairwise
# ratio (pmix-tools / Slurm). Exits non-zero if Slurm is not running or any
# run fails or times out.
set -euo pipefail

runs="${1:-20}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
timeout 10 sinfo >/dev/null 2>&1 || { echo "bench-slurm: no running Slurm here (sinfo does not answer)" >&2; exit 1; }

cargo build --release --bins --quiet --manifest-path "$repo/Cargo.toml"
bin="$repo/target/release"
dir="$(mktemp -d /tmp/bench-slurm.XXXXXX)"
export TMPDIR="$dir"
unset PMIX_NAMESPACE PMIX_RANK PMIX_TOOLS_HOLDER PMIX_ALLOC_ID
"$bin/pdvm" --nodes 2 --slots 2 --scheduler-nodes 4 --daemonize >/dev/null 2>&1
cleanup() {
    "$bin/pdvm" --terminate >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT

# shellcheck source=scripts/bench-lib.sh
. "$repo/scripts/bench-lib.sh"

echo "pmix-tools against pdvm vs Slurm $(sinfo --version | awk '{print $2}') on this host, $runs runs each, wall time"
echo "| ours | median | Slurm | median | ratio of medians | median pairwise ratio |"
echo "|---|---|---|---|---|---|"
pair "palloc -N 1 -- true" "salloc -N1 true" \
    ::: "$bin/palloc" -N 1 -- true \
    ::: salloc -N1 true
pair "pspawn -n 1 true" "srun -n1 true" \
    ::: "$bin/pspawn" -n 1 true \
    ::: srun -n1 true
pair "pwatch --status" "squeue" \
    ::: "$bin/pwatch" --status \
    ::: squeue
