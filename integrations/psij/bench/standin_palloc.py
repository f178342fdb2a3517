#!/usr/bin/env python3
"""A stand-in for ``palloc --stdin-requests`` that asks no DVM: the ceiling of the `pmix`
executor's own path (the benchmark's row "pmix, palloc stand-in (no DVM)").

Each line (``palloc --no-wait`` arguments, ``-J NAME ... -- SCRIPT...``) is answered at once as
submitted, and its script started at once, as palloc would run it in a one-node grant (its log
``palloc-NAME.out``, ``PMIX_ALLOC_NODELIST``), with no allocation, no detached palloc and no
record; its end is said as palloc's agent says it (a batch record line). What the executor costs
beside `local` is then PSI/J's script per job, the line and its answer, and the script's shell.
"""
import json
import os
import sys
import threading
from typing import Dict

_names: Dict[int, str] = {}
_names_lock = threading.Lock()
_out_lock = threading.Lock()
#: One release per script started: the reaper waits for a child only when there is one.
_started = threading.Semaphore(0)


def _say(rec: Dict[str, object]) -> None:
    with _out_lock:
        sys.stdout.write(json.dumps(rec) + '\n')
        sys.stdout.flush()


def _reap() -> None:
    """Says each script's end, as the agent does."""
    while True:
        _started.acquire()
        pid, status = os.wait()
        with _names_lock:
            name = _names.pop(pid, None)
        if name is not None:
            _say({'type': 'batch', 'request_id': name, 'state': 'exited',
                  'exit_code': os.waitstatus_to_exitcode(status)})


def main() -> None:
    threading.Thread(target=_reap, daemon=True).start()
    for line in sys.stdin:
        args = json.loads(line)
        name = args[args.index('-J') + 1]
        cmd = args[args.index('--') + 1:]
        env = dict(os.environ, PMIX_ALLOC_NODELIST='node01', PMIX_ALLOC_ID='standin')
        log = 'palloc-%s.out' % name
        actions = [(os.POSIX_SPAWN_OPEN, 0, '/dev/null', os.O_RDONLY, 0),
                   (os.POSIX_SPAWN_OPEN, 1, log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
                   (os.POSIX_SPAWN_DUP2, 1, 2)]
        with _names_lock:
            _names[os.posix_spawn(cmd[0], cmd, env, file_actions=actions)] = name
        _started.release()
        _say({'type': 'request', 'request_id': name, 'state': 'submitted'})


if __name__ == '__main__':
    main()
