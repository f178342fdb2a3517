#!/bin/sh
# PRRTE's ssh stand-in for a cluster of "nodes" on one machine (used by
# scripts/prrte-cluster.sh and by the test harness, tests/support/cluster.rs).
#
# PRRTE runs `AGENT [ssh options] HOST COMMAND...` to start a daemon on HOST
# (`--prtemca plm_ssh_agent AGENT`). This agent drops the ssh options and runs
# COMMAND on this machine in a new UTS namespace whose host name is HOST, with
# TMPDIR=$PRRTE_CLUSTER_DIR/nodes/HOST, so PRRTE names the node HOST and each
# daemon keeps its files apart. It needs to be root in its user namespace
# (unshare --uts).
set -eu
: "${PRRTE_CLUSTER_DIR:?PRRTE_CLUSTER_DIR is not set (the cluster's directory)}"
while [ $# -gt 0 ]; do
  case "$1" in
    -o | -i | -l | -p | -F | -E | -J) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || { echo "usage: $0 [ssh options] HOST COMMAND..." >&2; exit 255; }
host=$1
shift
case "$host" in
  *[!A-Za-z0-9._-]* | '') echo "$0: bad host name '$host'" >&2; exit 255 ;;
esac
node_tmp="$PRRTE_CLUSTER_DIR/nodes/$host"
mkdir -p "$node_tmp"
# shellcheck disable=SC2016 # expanded by the inner shell
exec unshare --uts sh -c 'hostname "$1" && TMPDIR=$2 && export TMPDIR && shift 2 && exec sh -c "$*"' \
  node-agent "$host" "$node_tmp" "$@"
