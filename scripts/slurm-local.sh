#!/usr/bin/env bash
# A private Slurm on this machine, on loopback only, for the benchmarks when
# no Slurm runs here: its own munged (own key and socket), a slurmctld and
# two slurmd (node01, node02, 2 CPUs each), all under one directory. The
# programs are Debian's Slurm (scripts/install-peers.sh installs it) unless
# SLURM_PREFIX names another install (e.g. .peers/slurm-26.05.3).
#
#   scripts/slurm-local.sh start DIR   start it, wait until both nodes are
#                                      idle, print `export SLURM_CONF=…`
#   scripts/slurm-local.sh stop DIR    stop every daemon it started
#
# Slurm's commands reach it with SLURM_CONF=DIR/slurm.conf.
set -euo pipefail

cmd="${1:?usage: slurm-local.sh start|stop DIR}"
dir="${2:?usage: slurm-local.sh start|stop DIR}"
prefix="${SLURM_PREFIX:-/usr}"
sbin="$prefix/sbin"
bin="$prefix/bin"
[ -x "$sbin/slurmctld" ] || sbin="$prefix/bin"

stop() {
    for p in "$dir"/slurmd-*.pid "$dir"/slurmctld.pid "$dir"/munged.pid; do
        [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null || true
    done
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

start() {
    mkdir -p "$dir/state" "$dir/spool/node01" "$dir/spool/node02"
    head -c 1024 /dev/urandom >"$dir/munge.key"
    chmod 600 "$dir/munge.key"
    : >"$dir/plugstack.conf"
    local host
    host="$(hostname -s)"
    {
        echo "ClusterName=benchlocal$$"
        echo "SlurmctldHost=$host(127.0.0.1)"
        echo "SlurmctldPort=$(free_port)"
        echo "SlurmUser=$(id -un)"
        echo "SlurmdUser=$(id -un)"
        echo "AuthType=auth/munge"
        echo "AuthInfo=socket=$dir/munge.sock"
        echo "CredType=cred/munge"
        echo "StateSaveLocation=$dir/state"
        echo "SlurmdSpoolDir=$dir/spool/%n"
        echo "SlurmctldPidFile=$dir/slurmctld.pid"
        echo "SlurmdPidFile=$dir/slurmd-%n.pid"
        echo "SlurmctldLogFile=$dir/slurmctld.log"
        echo "SlurmdLogFile=$dir/slurmd-%n.log"
        echo "SlurmdParameters=config_overrides"
        echo "ProctrackType=proctrack/linuxproc"
        echo "TaskPlugin=task/none"
        echo "SelectType=select/linear"
        echo "SchedulerType=sched/backfill"
        echo "JobAcctGatherType=jobacct_gather/none"
        echo "AccountingStorageType=accounting_storage/none"
        echo "MpiDefault=none"
        echo "ReturnToService=2"
        echo "PlugStackConfig=$dir/plugstack.conf"
        # Each node its own NodeHostname (a Slurm built without
        # --enable-multiple-slurmd keeps only one per name); NodeAddr gives
        # the address, the names need not resolve.
        for n in node01 node02; do
            echo "NodeName=$n NodeHostname=$n NodeAddr=127.0.0.1 Port=$(free_port) CPUs=2 RealMemory=512 State=UNKNOWN"
        done
        echo "PartitionName=batch Nodes=node01,node02 Default=YES MaxTime=INFINITE State=UP"
    } >"$dir/slurm.conf"
    export SLURM_CONF="$dir/slurm.conf"
    /usr/sbin/munged -f --socket="$dir/munge.sock" --key-file="$dir/munge.key" \
        --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munged.seed"
    "$sbin/slurmctld" -i -f "$SLURM_CONF"
    for n in node01 node02; do
        "$sbin/slurmd" -f "$SLURM_CONF" -N "$n"
    done
    for _ in $(seq 1 300); do
        if [ "$("$bin/sinfo" -h -o '%t %D' 2>/dev/null)" = "idle 2" ]; then
            echo "export SLURM_CONF=$SLURM_CONF"
            return 0
        fi
        sleep 0.1
    done
    echo "slurm-local: the private Slurm did not come up; its logs are in $dir" >&2
    stop
    return 1
}

case "$cmd" in
start) start ;;
stop) stop ;;
*)
    echo "usage: slurm-local.sh start|stop DIR" >&2
    exit 2
    ;;
esac
