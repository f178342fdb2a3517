#!/bin/bash

source $(dirname "$0")/launcher_lib.sh

_PSI_J_PROCESS_COUNT="$1"
_PSI_J_PPN="$2"
shift 2

pre_launch

_PSI_J_MAP=()
if [ "$_PSI_J_PPN" != "" ]; then
    _PSI_J_MAP=(--map-by "ppr:$_PSI_J_PPN:node")
fi

set +e
pspawn -n "$_PSI_J_PROCESS_COUNT" "${_PSI_J_MAP[@]}" -D "$PWD" -- "$@" \
    1>$_PSI_J_STDOUT 2>$_PSI_J_STDERR <$_PSI_J_STDIN
_PSI_J_EC=$?
set -e

log "Command done: $_PSI_J_EC"

post_launch

echo "_PSI_J_LAUNCHER_DONE"
exit $_PSI_J_EC
