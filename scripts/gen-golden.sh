#!/bin/sh
# Regenerate the v41 golden wire vectors from the installed OpenPMIx
# (Debian libpmix-dev, native bfrops v41) using our own generator program.
# Usage: scripts/gen-golden.sh   (run from the repository root)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/tests/golden/v41"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck disable=SC2046
gcc -Wall -O1 -o "$tmp/gen_vectors" "$root/tests/golden/gen_vectors.c" $(pkg-config --cflags --libs pmix)
mkdir -p "$out"
rm -f "$out"/*.hex "$out"/*.txt
# keep the library quiet and self-contained: no server, no rendezvous files
PMIX_MCA_ptl=^usock PMIX_MCA_gds=hash TMPDIR="$tmp" "$tmp/gen_vectors" "$out"
echo "wrote $(ls "$out"/*.hex | wc -l) vectors to $out"
