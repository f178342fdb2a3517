#!/usr/bin/env bash
# Side-by-side timings of the pmix-tools habits against Slurm's on this
# machine: our tools against a daemonized pdvm (4 scheduler nodes), Slurm's
# against the local Slurm when one runs (`sinfo` answers), else against a
# private one started for the run (scripts/slurm-local.sh: Debian's Slurm,
# its own munge, loopback only; SLURM_PREFIX picks another install).
#
#   salloc -N1 true     vs  palloc -N 1 -- true
#   srun -n1 true       vs  pspawn -n 1 true
#   squeue              vs  pwatch --status
#
# Usage: scripts/bench-slurm.sh [RUNS]   (default 20; release build)
# Prints median wall times, the ratio of the medians and the median pairwise
# ratio (pmix-tools / Slurm). Exits non-zero if no Slurm can be reached or
# started, or any run fails or times out.
set -euo pipefail

runs="${1:-20}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cargo build --release --bins --quiet --manifest-path "$repo/Cargo.toml"
bin="$repo/target/release"
dir="$(mktemp -d /tmp/bench-slurm.XXXXXX)"
private=""
if ! timeout 10 sinfo >/dev/null 2>&1; then
    private="$dir/slurm"
    mkdir -p "$private"
    eval "$("$repo/scripts/slurm-local.sh" start "$private")"
fi
export TMPDIR="$dir"
unset PMIX_NAMESPACE PMIX_RANK PMIX_TOOLS_HOLDER PMIX_ALLOC_ID
"$bin/pdvm" --nodes 2 --slots 2 --scheduler-nodes 4 --daemonize >/dev/null 2>&1
cleanup() {
    "$bin/pdvm" --terminate >/dev/null 2>&1 || true
    [ -z "$private" ] || "$repo/scripts/slurm-local.sh" stop "$private"
    rm -rf "$dir"
}
trap cleanup EXIT

# shellcheck source=scripts/bench-lib.sh
. "$repo/scripts/bench-lib.sh"

echo "pmix-tools against pdvm vs Slurm $(sinfo --version | awk '{print $2}') on this host${private:+ (a private one, scripts/slurm-local.sh)}, $runs runs each, wall time"
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
