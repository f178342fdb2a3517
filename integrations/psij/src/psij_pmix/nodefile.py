"""Writes PSIJ_NODEFILE inside a `pmix` job: the allocation's nodes, each repeated per process
per node (PBS form, as PSI/J's Slurm template does). Usage: python -m psij_pmix.nodefile OUT PC PPN
"""
import json
import os
import socket
import subprocess
import sys
from typing import List


def node_lines(nodes: List[str], pc: str, ppn: str) -> List[str]:
    """One line per process slot: PPN given, else PC / node count, else one per node."""
    if not nodes:
        nodes = [socket.gethostname()]
    if int(ppn or 0) > 0:
        per = int(ppn)
    elif int(pc or 0) > 0:
        per = max(1, int(pc) // len(nodes))
    else:
        per = 1
    return [n for n in nodes for _ in range(per)]


def allocation_nodes(alloc_id: str) -> List[str]:
    """The nodes of allocation ALLOC_ID, from one `pwatch --status --json`."""
    out = subprocess.run(['pwatch', '--status', '--json', '--what', 'reservations'],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    for r in json.loads(out).get('reservations') or []:
        if r.get('alloc_id') == alloc_id:
            return list(r.get('nodes') or [])
    return []


def main() -> None:
    """Entry point."""
    out, pc, ppn = sys.argv[1], sys.argv[2], sys.argv[3]
    alloc = os.environ.get('PMIX_ALLOC_ID', '')
    nodes = allocation_nodes(alloc) if alloc else []
    with open(out, 'w') as f:
        for line in node_lines(nodes, pc, ppn):
            f.write(line + '\n')


if __name__ == '__main__':
    main()
