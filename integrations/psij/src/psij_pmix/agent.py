"""One long-lived ``palloc --stdin-requests`` submitting an executor's jobs: one JSON line of
``palloc --no-wait`` arguments per job, answered by one JSON line (the request record, or palloc's
error record with its exit code). A job then costs a round trip over a pipe, not a process start.
"""
import json
import subprocess
import threading
from typing import Callable, Dict, IO, List, Optional, cast

from psij import SubmitException


class AgentGone(Exception):
    """The agent cannot take this request (it could not start, or it ended before reading it):
    the caller submits the job another way (``palloc --no-wait``)."""


class PallocAgent:
    """A ``palloc --stdin-requests`` started at the first request, shared by the caller's threads."""

    def __init__(self, command: Callable[[], List[str]], cwd: Callable[[], str],
                 env: Callable[[], Dict[str, str]]) -> None:
        """
        Parameters
        ----------
        command
            The agent's command line (palloc, ``--stdin-requests``, connection flags).
        cwd
            Its working directory (where the jobs' palloc-NAME.out logs go).
        env
            Its environment.
        """
        self._command = command
        self._cwd = cwd
        self._env = env
        self._proc: Optional['subprocess.Popen[str]'] = None
        self._answered = False
        self._gone = False
        self._lock = threading.Lock()

    def usable(self) -> bool:
        """False once the agent could not start or ended: submit with ``palloc --no-wait``."""
        return not self._gone

    def submit(self, args: List[str]) -> str:
        """Submit one batch job (palloc's arguments after ``--no-wait``); its request id.

        Raises SubmitException with palloc's own message when the request is refused, and
        AgentGone when the agent could not take it."""
        line = json.dumps(args) + '\n'
        with self._lock:
            proc = self._started()
            try:
                cast(IO[str], proc.stdin).write(line)
                cast(IO[str], proc.stdin).flush()
                answer = cast(IO[str], proc.stdout).readline()
            except (OSError, ValueError):
                answer = ''
            if not answer:
                self._end()
                if not self._answered:
                    raise AgentGone()
                raise SubmitException('pmix: palloc --stdin-requests ended before answering; '
                                      'the job may have been submitted (`pwatch --status`)')
            self._answered = True
        rec = json.loads(answer)
        if rec.get('type') == 'error':
            raise SubmitException('palloc: %s' % rec.get('message'))
        return cast(str, rec['request_id'])

    def _started(self) -> 'subprocess.Popen[str]':
        if self._proc is None:
            try:
                self._proc = subprocess.Popen(self._command(), stdin=subprocess.PIPE,
                                              stdout=subprocess.PIPE,
                                              stderr=subprocess.DEVNULL, text=True,
                                              cwd=self._cwd(), env=self._env())
            except OSError:
                self._gone = True
                raise AgentGone() from None
        return self._proc

    def _end(self) -> None:
        self._gone = True
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                cast(IO[str], proc.stdin).close()
            except OSError:
                pass
            proc.wait()

    def close(self) -> None:
        """End the agent (end of its input); the jobs it submitted go on."""
        with self._lock:
            self._end()
