"""One long-lived ``palloc --stdin-requests`` submitting an executor's jobs: one JSON line of
``palloc --no-wait`` arguments per job, answered by one JSON line (the request record, or palloc's
error record with its exit code). A job then costs a round trip over a pipe, not a process start.

The agent also says, unasked, how each job it submitted ended, as soon as the detached palloc
holding it ends: one line holding the job's batch record (``{"type": "batch", ...}``, as
``pwatch --status --all`` lists it). A thread reads the agent's output and hands those records to
the ``on_end`` callback, so the executor learns of an end without polling for it.
"""
import json
import logging
import queue
import subprocess
import threading
from typing import Callable, Dict, IO, List, Optional, cast

from psij import SubmitException

logger = logging.getLogger(__name__)

#: The answer the reader thread queues when the agent's output has ended.
_EOF: Dict[str, object] = {}


class AgentGone(Exception):
    """The agent cannot take this request (it could not start, or it ended before reading it):
    the caller submits the job another way (``palloc --no-wait``)."""


class PallocAgent:
    """A ``palloc --stdin-requests`` started at the first request, shared by the caller's threads."""

    def __init__(self, command: Callable[[], List[str]], cwd: Callable[[], str],
                 env: Callable[[], Dict[str, str]],
                 on_end: Optional[Callable[[Dict[str, object]], None]] = None) -> None:
        """
        Parameters
        ----------
        command
            The agent's command line (palloc, ``--stdin-requests``, connection flags).
        cwd
            Its working directory (where the jobs' palloc-NAME.out logs go).
        env
            Its environment.
        on_end
            Called (from the reader thread) with the batch record of each job whose detached
            palloc has ended.
        """
        self._command = command
        self._cwd = cwd
        self._env = env
        self._on_end = on_end
        self._proc: Optional['subprocess.Popen[str]'] = None
        self._answers: 'queue.Queue[Dict[str, object]]' = queue.Queue()
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
                answer = self._answers.get()
            except (OSError, ValueError):
                answer = _EOF
            if answer is _EOF:
                self._end()
                if not self._answered:
                    raise AgentGone()
                raise SubmitException('pmix: palloc --stdin-requests ended before answering; '
                                      'the job may have been submitted (`pwatch --status`)')
            self._answered = True
        if answer.get('type') == 'error':
            raise SubmitException('palloc: %s' % answer.get('message'))
        return cast(str, answer['request_id'])

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
            threading.Thread(target=self._read, args=(self._proc,), daemon=True,
                             name='pmix palloc agent reader').start()
        return self._proc

    def _read(self, proc: 'subprocess.Popen[str]') -> None:
        """The agent's output: answers to the submitting thread, job ends to ``on_end``."""
        try:
            for line in cast(IO[str], proc.stdout):
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get('type') == 'batch':
                    if self._on_end is not None:
                        try:
                            self._on_end(rec)
                        except Exception:
                            # the status poll still finds this end
                            logger.exception('pmix: a job end could not be applied')
                else:
                    self._answers.put(rec)
        except (OSError, ValueError):
            pass
        self._answers.put(_EOF)

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
