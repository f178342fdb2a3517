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
#      scheduler when the last descendant ends.
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
echo
echo "== demo complete"
