#!/bin/sh
# Regenerate the golden wire vectors from a real OpenPMIx, using our own
# generator program tests/golden/gen_vectors.c.
#
# Usage: scripts/gen-golden.sh [v41|v61] [OUTDIR]
#   v41 (default)  Debian's OpenPMIx 4.2.2 (libpmix-dev, found by pkg-config);
#                  its native bfrops component is v41.
#   v61            OpenPMIx master (7.0.0a1) installed by scripts/install-peers.sh
#                  at $PMIX_TOOLS_PEERS/master/pmix (default <repo>/.peers);
#                  master carries both v51 and v61 components: v61 is selected
#                  explicitly (PMIX_MCA_bfrops=v61).
#   OUTDIR         where to write <case>.hex/.txt (default tests/golden/<target>);
#                  its old vectors are removed first.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
target=${1:-v41}
out=${2:-"$root/tests/golden/$target"}
peers=${PMIX_TOOLS_PEERS:-"$root/.peers"}

case "$target" in
    v41)
        pcpath=${PKG_CONFIG_PATH:-}
        ;;
    v61)
        pcdir="$peers/master/pmix/lib/pkgconfig"
        if [ ! -f "$pcdir/pmix.pc" ]; then
            echo "gen-golden: $pcdir/pmix.pc not found: OpenPMIx master is not installed (run scripts/install-peers.sh)" >&2
            exit 1
        fi
        # only master's pmix.pc: never fall back to Debian's 4.2.2
        pcpath=$pcdir
        ;;
    *)
        echo "gen-golden: unknown target '$target' (v41 or v61)" >&2
        exit 2
        ;;
esac
command -v gcc >/dev/null 2>&1 || { echo "gen-golden: gcc not found" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cflags=$(PKG_CONFIG_PATH=$pcpath pkg-config --cflags pmix)
# hwloc: the cpuset vector is built from an hwloc bitmap (libhwloc-dev)
libs="$(PKG_CONFIG_PATH=$pcpath pkg-config --libs pmix) -lhwloc"
libdir=$(PKG_CONFIG_PATH=$pcpath pkg-config --variable=libdir pmix)
# the run path makes the program load the libpmix it was compiled against
# shellcheck disable=SC2086
gcc -Wall -Werror -O1 -o "$tmp/gen_vectors" "$root/tests/golden/gen_vectors.c" $cflags $libs \
    -Wl,-rpath,"$libdir"

mkdir -p "$out"
rm -f "$out"/*.hex "$out"/*.txt
# keep the library quiet and self-contained: no server, no rendezvous files
if [ "$target" = v41 ]; then
    PMIX_MCA_ptl=^usock PMIX_MCA_gds=hash TMPDIR="$tmp" "$tmp/gen_vectors" "$out" v41
else
    PMIX_MCA_bfrops=v61 PMIX_MCA_gds=hash TMPDIR="$tmp" "$tmp/gen_vectors" "$out" v61
fi
echo "wrote $(ls "$out"/*.hex | wc -l) $target vectors to $out"
