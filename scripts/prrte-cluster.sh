#!/usr/bin/env bash
# A multi-node PRRTE master DVM on one machine, for trying workflows on the
# real engine across nodes (as `flux start --test-size=N` does for Flux).
#
#   scripts/prrte-cluster.sh start [-n NODES] [-s SLOTS]   start node01..NODES
#   scripts/prrte-cluster.sh start --psched M [-s SLOTS]   node01 + psched owning
#                                                          node02..node(M+1)
#   scripts/prrte-cluster.sh run CMD [ARG...]              run CMD next to it
#   scripts/prrte-cluster.sh shell                         a shell next to it
#   scripts/prrte-cluster.sh prefix                        the prefix `run` uses
#   scripts/prrte-cluster.sh stop                          stop it, leave nothing
#
# Each node is a real `prted` in its own UTS namespace named after the node
# (scripts/prrte-node-agent.sh is PRRTE's ssh), with its own TMPDIR. The DVM
# and its jobs live in a private network namespace (loopback plus a veth pair
# with 10.213.0.1/24): PRRTE's out-of-band channel needs an interface other
# than loopback, and this one never reaches the host's network. Tools must
# run inside that namespace: use `run`, `shell`, or the printed prefix.
#
# Needs: root, or unprivileged user namespaces (then the cluster runs as
# root of a user namespace mapped to you); `unshare`, `nsenter` (util-linux)
# and `ip` (iproute2); PRRTE master (scripts/install-peers.sh, or --prrte DIR,
# or PRRTE_PREFIX, holding bin/prte).
#
# With --psched M, prte runs its ras/pmix component (`--prtemca
# ras_pmix_system_scheduler 1`: the hostfile is then ignored, the DVM starts
# with node01 only) and psched attaches to it as its scheduler, owning M more
# nodes, each with SLOTS slots (psched --slots); PRRTE starts a daemon on a
# node when psched grants it. psched is
# $PSCHED, else `psched` on PATH, else target/{release,debug}/psched; its
# ledger is $state/psched-ledger.json, its log $state/psched.log;
# $PSCHED_ARGS adds flags (e.g. PSCHED_ARGS='--time-scale 60').
#
# prte runs with `--prtemca prte_num_worker_threads 0` (fork/exec on its main
# progress thread): with PRRTE master's worker threads a process that ends
# before its launch is reported can make prte abort (docs/conformance.md, D9).
#
# PRRTE_CLUSTER_USERNS=1 uses a user namespace even as root.
# Options: -n NODES (default 4), -s SLOTS per node (default 2),
# -d DIR the cluster's state directory (default $PRRTE_CLUSTER_STATE or
# ${XDG_RUNTIME_DIR:-/tmp}/prrte-cluster-$UID), --prrte DIR PRRTE's prefix.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
agent="$repo/scripts/prrte-node-agent.sh"
state="${PRRTE_CLUSTER_STATE:-${XDG_RUNTIME_DIR:-/tmp}/prrte-cluster-$(id -u)}"
nodes=4
slots=2
psched_nodes=0
prrte="${PRRTE_PREFIX:-${PMIX_TOOLS_PEERS:-$repo/.peers}/master/prrte}"

die() { echo "prrte-cluster: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit "${1:-0}"; }

# How this user can enter a namespace it creates: "root" or "userns";
# dies with what is missing.
privilege() {
    for t in unshare nsenter ip; do
        command -v "$t" >/dev/null || die "needs '$t' (util-linux / iproute2), not found on PATH"
    done
    if [ "$(id -u)" -eq 0 ] && [ -z "${PRRTE_CLUSTER_USERNS:-}" ]; then echo root; return; fi
    if unshare --user --map-root-user --net --uts true 2>/dev/null; then echo userns; return; fi
    die "needs root, or unprivileged user namespaces, to create a private network namespace:
  'unshare --user --map-root-user --net true' failed for $(id -un).
  Run as root, or enable them (e.g. sysctl kernel.unprivileged_userns_clone=1,
  user.max_user_namespaces > 0, or an AppArmor profile allowing userns)."
}

holder_pid() { cat "$state/holder.pid" 2>/dev/null || true; }

# The command prefix that enters the cluster's namespaces (as a list).
enter_args() {
    local h
    h="$(holder_pid)"
    [ -n "$h" ] && [ -e "/proc/$h/ns/net" ] || die "no cluster running (state in $state); start one: $0 start"
    if [ "$(cat "$state/mode")" = userns ]; then
        printf '%s\n' nsenter "--target=$h" --user --net --preserve-credentials --
    else
        printf '%s\n' nsenter "--net=/proc/$h/ns/net" --
    fi
}

# Pids of every process in the cluster's network namespace but the holder.
ns_pids() {
    local h me p pid
    h="$(holder_pid)"
    [ -n "$h" ] || return 0
    me="$(readlink "/proc/$h/ns/net" 2>/dev/null)" || return 0
    for p in /proc/[0-9]*; do
        pid="${p#/proc/}"
        [ "$pid" = "$h" ] && continue
        [ "$(readlink "$p/ns/net" 2>/dev/null)" = "$me" ] && echo "$pid"
    done
    return 0
}

start() {
    while [ $# -gt 0 ]; do
        case "$1" in
            -n) nodes="$2"; shift 2 ;;
            -s) slots="$2"; shift 2 ;;
            --psched) psched_nodes="$2"; shift 2 ;;
            -d) state="$2"; shift 2 ;;
            --prrte) prrte="$2"; shift 2 ;;
            -h | --help) usage ;;
            *) die "unknown option '$1' (see $0 --help)" ;;
        esac
    done
    [[ "$nodes" =~ ^[1-9][0-9]?$ ]] || die "-n takes 1..99 nodes, not '$nodes'"
    [[ "$slots" =~ ^[1-9][0-9]*$ ]] || die "-s takes a positive number of slots, not '$slots'"
    [[ "$psched_nodes" =~ ^[0-9]{1,3}$ ]] && [ "$psched_nodes" -le 998 ] ||
        die "--psched takes 1..998 nodes, not '$psched_nodes'"
    local sched_args=() psched_bin=""
    if [ "$psched_nodes" -gt 0 ]; then
        psched_bin="${PSCHED:-$(command -v psched || true)}"
        for b in "$psched_bin" "$repo/target/release/psched" "$repo/target/debug/psched"; do
            [ -n "$b" ] && [ -x "$b" ] && { psched_bin="$b"; break; }
        done
        [ -x "$psched_bin" ] || die "no psched binary: cargo build, or set PSCHED"
        sched_args=(--prtemca ras_pmix_system_scheduler 1)
        nodes=1
    fi
    local mode
    mode="$(privilege)"
    [ -x "$prrte/bin/prte" ] || die "no PRRTE at $prrte (bin/prte): run scripts/install-peers.sh, or give --prrte DIR"
    if [ -n "$(holder_pid)" ] && [ -e "/proc/$(holder_pid)/ns/net" ]; then
        die "a cluster is already running (state in $state); stop it first: $0 stop"
    fi
    rm -rf "$state"
    mkdir -p "$state/hnp" "$state/nodes"
    echo "$mode" >"$state/mode"
    for i in $(seq "$nodes"); do printf 'node%02d slots=%s\n' "$i" "$slots"; done >"$state/hosts"

    local userns=()
    [ "$mode" = userns ] && userns=(--user --map-root-user)
    # The holder keeps the namespace alive; it only sleeps.
    setsid unshare "${userns[@]}" --net -- sh -c '
        ip link set lo up && ip link add pmt0 type veth peer name pmt1 &&
        ip addr add 10.213.0.1/24 dev pmt0 && ip link set pmt0 up && ip link set pmt1 up &&
        touch "$1/ready" && exec sleep infinity' holder "$state" \
        </dev/null >"$state/holder.log" 2>&1 &
    echo $! >"$state/holder.pid"
    for _ in $(seq 100); do [ -e "$state/ready" ] && break; sleep 0.05; done
    [ -e "$state/ready" ] || { cat "$state/holder.log" >&2; stop >/dev/null 2>&1; die "could not set up the network namespace"; }

    local enter root_flag
    prefix_lines="$(enter_args)" # dies (set -e) when no cluster runs
    mapfile -t enter <<<"$prefix_lines"
    # Inside a user namespace we are its root, too.
    root_flag=(--allow-run-as-root)
    local t0 t1
    t0=$(date +%s.%N)
    setsid env -u PMIX_SERVER_URI41 PRRTE_CLUSTER_DIR="$state" TMPDIR="$state/hnp" \
        "${enter[@]}" unshare --uts sh -c 'hostname node01 && exec "$@"' sh \
        "$prrte/bin/prte" "${root_flag[@]}" --leave-session-attached \
        --report-uri "$state/uri.txt" --hostfile "$state/hosts" \
        --prtemca plm_ssh_agent "$agent" --prtemca plm_ssh_no_tree_spawn 1 \
        --prtemca prte_num_worker_threads 0 \
        "${sched_args[@]}" </dev/null >"$state/prte.log" 2>&1 &
    echo $! >"$state/prte.pid"
    for _ in $(seq 600); do
        grep -q "DVM ready" "$state/prte.log" 2>/dev/null && [ -s "$state/uri.txt" ] && break
        kill -0 "$(cat "$state/prte.pid")" 2>/dev/null || break
        sleep 0.05
    done
    if ! grep -q "DVM ready" "$state/prte.log" 2>/dev/null; then
        cat "$state/prte.log" >&2
        stop >/dev/null 2>&1 || true
        die "PRRTE did not start"
    fi
    if [ "$psched_nodes" -gt 0 ]; then
        setsid env TMPDIR="$state/hnp" "${enter[@]}" "$psched_bin" \
            --nodes "node[02-$(printf '%02d' $((psched_nodes + 1)))]" \
            --ledger "$state/psched-ledger.json" --uri "file:$state/uri.txt" \
            --slots "$slots" ${PSCHED_ARGS:-} </dev/null >"$state/psched.log" 2>&1 &
        echo $! >"$state/psched.pid"
        for _ in $(seq 200); do grep -q "attached to" "$state/psched.log" 2>/dev/null && break; sleep 0.05; done
        grep -q "attached to" "$state/psched.log" || { cat "$state/psched.log" >&2; die "psched did not attach"; }
        # psched starts its nodes' daemons as it attaches: users come after.
        for _ in $(seq 1200); do
            [ "$(grep -c "daemons up on" "$state/psched.log" 2>/dev/null)" -ge "$psched_nodes" ] && break
            sleep 0.05
        done
        [ "$(grep -c "daemons up on" "$state/psched.log")" -ge "$psched_nodes" ] ||
            { cat "$state/psched.log" >&2; die "psched's nodes did not come up"; }
        echo "psched attached: owns node[02-$(printf '%02d' $((psched_nodes + 1)))] (ledger $state/psched-ledger.json)"
    fi
    t1=$(date +%s.%N)
    local me="$0"
    cat <<EOF
PRRTE master cluster up in $(awk "BEGIN{printf \"%.2f\", $t1 - $t0}") s: $nodes nodes x $slots slots (node01..$(printf 'node%02d' "$nodes"); node01 runs prte), DVM $(head -n 1 "$state/uri.txt" | cut -d';' -f1)
The tools must run inside its network namespace:
  $me run pspawn -n $nodes --map-by node hostname
  $me run pwatch --status
  $me shell            # a shell in which every tool finds this DVM
or prefix any command with:
  TMPDIR=$state/hnp $(enter_args | tr '\n' ' ')
PRRTE's own: $me run $prrte/bin/prun --dvm-uri file:$state/uri.txt -n 2 hostname
Stop: $me stop
EOF
}

run() {
    [ $# -gt 0 ] || die "run: give a command"
    local enter
    prefix_lines="$(enter_args)" # dies (set -e) when no cluster runs
    mapfile -t enter <<<"$prefix_lines"
    TMPDIR="$state/hnp" PRTE_ALLOW_RUN_AS_ROOT=1 PRTE_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        exec "${enter[@]}" "$@"
}

stop() {
    local h p
    h="$(holder_pid)"
    [ -n "$h" ] || { echo "prrte-cluster: no cluster (state in $state)"; rm -rf "$state"; return 0; }
    p="$(cat "$state/psched.pid" 2>/dev/null || true)"
    [ -n "$p" ] && kill -TERM "$p" 2>/dev/null || true
    if [ -e "/proc/$h/ns/net" ] && [ -s "$state/uri.txt" ]; then
        local enter root_flag
        prefix_lines="$(enter_args)"
        mapfile -t enter <<<"$prefix_lines"
        root_flag=(--allow-run-as-root)
        timeout 20 env TMPDIR="$state/hnp" "${enter[@]}" "$prrte/bin/pterm" "${root_flag[@]}" \
            --dvm-uri "file:$state/uri.txt" >/dev/null 2>&1 || true
    fi
    p="$(cat "$state/prte.pid" 2>/dev/null || true)"
    for _ in $(seq 100); do [ -n "$p" ] && kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
    [ -n "$p" ] && kill -TERM "$p" 2>/dev/null || true
    # Whatever is left in the namespace (by pid), then the holder.
    for _ in 1 2 3 4 5; do
        local left
        left="$(ns_pids)"
        [ -z "$left" ] && break
        # shellcheck disable=SC2086 # one pid per word
        kill -KILL $left 2>/dev/null || true
        sleep 0.2
    done
    kill -KILL "$h" 2>/dev/null || true
    rm -rf "$state"
    echo "prrte-cluster: stopped"
}

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
    start) start "$@" ;;
    run) run "$@" ;;
    shell) run "${SHELL:-/bin/sh}" ;;
    prefix)
        prefix_lines="$(enter_args)"
        echo "TMPDIR=$state/hnp $(tr '\n' ' ' <<<"$prefix_lines")"
        ;;
    stop) stop ;;
    -h | --help | help) usage ;;
    *) usage 2 >&2 ;;
esac
