#!/usr/bin/env bash
# The main job: pdvm, the embedded reference DVM, running the spec's
# workflows with the four tools.
#
#   1. examples/reservation-workflow.sh — a reservation with CHILD inheritance,
#      spawn targeting (the reservation, then reservation + default pool), a
#      timeout warning answered by an EXTEND, status, and release;
#   2. examples/child-drain.sh — an orchestrator that reserves with
#      --inherit child, launches a worker and a grandchild into the
#      reservation and exits early; the reservation drains and returns to the
#      scheduler when the last descendant ends;
#   3. an MPI program with MPI_Allreduce, 4 ranks on 2 simulated nodes, and
#      one with MPI_Comm_spawn (its children's lines shown by pspawn).
#
# pdvm runs each script as its session leader (every tool in it acts for the
# script's job), with simulated time 60x faster, in a private TMPDIR, and
# exits with the script's status.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

echo "== building the tools (release)"
cargo build --release --bins --quiet
export PATH="$PWD/target/release:$PATH"

run() {
    local dir status
    dir=$(mktemp -d "${TMPDIR:-/tmp}/pmix-tools-demo.XXXXXX")
    echo
    echo "== pdvm --nodes 2 --slots 2 --scheduler-nodes 4 --time-scale 60 -- $*"
    set +e
    TMPDIR="$dir" pdvm --nodes 2 --slots 2 --scheduler-nodes 4 --time-scale 60 -- "$@"
    status=$?
    set -e
    rm -rf "$dir"
    return "$status"
}

run examples/reservation-workflow.sh
run examples/child-drain.sh

# 3. An MPI program (tests/mpi/hello_allreduce.c) on two simulated nodes,
#    when Open MPI's mpicc is at hand (the wheel of scripts/install-peers.sh).
venv="${PMIX_TOOLS_PEERS:-$PWD/.peers}/venv"
mpicc=$(command -v mpicc || true)
if [ -x "$venv/bin/mpicc" ]; then
    mpicc="$venv/bin/mpicc"
    export OPAL_PREFIX="$venv" PRTE_PREFIX="$venv" PMIX_INSTALL_PREFIX="$venv"
fi
if [ -n "$mpicc" ]; then
    hello=$(mktemp -d "${TMPDIR:-/tmp}/pmix-tools-mpi.XXXXXX")
    "$mpicc" -o "$hello/hello" tests/mpi/hello_allreduce.c
    echo
    echo "== pdvm --nodes 2 --slots 2 -- pspawn -n 4 hello (MPI_Allreduce)"
    TMPDIR="$hello" pdvm --nodes 2 --slots 2 -- pspawn -n 4 "$hello/hello"
    "$mpicc" -o "$hello/spawn" tests/mpi/spawn.c
    echo
    echo "== pdvm --nodes 2 --slots 2 -- pspawn -n 2 spawn (MPI_Comm_spawn, 2 children)"
    TMPDIR="$hello" pdvm --nodes 2 --slots 2 -- pspawn -n 2 "$hello/spawn"
    rm -rf "$hello"
else
    echo
    echo "== no mpicc: the MPI step is left out (scripts/install-peers.sh installs one)"
fi
echo
echo "== demo complete"
