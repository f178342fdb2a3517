"""`pwatch --status --all --json` → PSI/J states (pure functions, unit-tested without a DVM)."""
import json
from typing import Dict, Iterable, Optional, Set

from psij import JobState, JobStatus

#: Why palloc stopped a batch script (`stopped_by`) → message for a FAILED status.
STOP_MESSAGES = {
    'time-limit': 'pmix: the allocation reached its time limit',
    'ended': 'pmix: the DVM ended the allocation',
    'signalled': 'pmix: the palloc holding the job was told to end',
}


def parse_status(out: str, native_ids: Iterable[str],
                 canceled: Optional[Set[str]] = None) -> Dict[str, JobStatus]:
    """Map one status snapshot to the state of each job asked about.

    A job that pwatch does not list is left out (the caller decides: a job just submitted is
    still QUEUED; see PmixJobExecutor).
    """
    canceled = canceled or set()
    doc = json.loads(out)
    batch = {b['request_id']: b for b in doc.get('batch_jobs') or []}
    reservations = {r.get('request_id'): r for r in doc.get('reservations') or []}
    result: Dict[str, JobStatus] = {}
    for nid in native_ids:
        rec = batch.get(nid)
        if rec is not None:
            result[nid] = batch_status(rec, nid in canceled)
        elif nid in reservations:
            result[nid] = JobStatus(JobState.QUEUED)
        elif nid in canceled:
            result[nid] = JobStatus(JobState.CANCELED)
    return result


def batch_status(rec: Dict[str, object], canceled: bool) -> JobStatus:
    """One `batch_jobs` record → JobStatus (exit code set when it exited)."""
    state = rec.get('state')
    if state == 'queued':
        return JobStatus(JobState.QUEUED)
    if state == 'running':
        return JobStatus(JobState.ACTIVE)
    if state == 'exited':
        code = rec.get('exit_code')
        assert isinstance(code, int)
        return JobStatus(JobState.COMPLETED if code == 0 else JobState.FAILED, exit_code=code)
    if state == 'killed':
        stop = rec.get('stopped_by')
        if stop == 'released' or canceled:
            return JobStatus(JobState.CANCELED)
        return JobStatus(JobState.FAILED, message=STOP_MESSAGES.get(
            str(stop), 'pmix: the job was killed by %s' % rec.get('signal')))
    if state == 'lost':
        return JobStatus(JobState.FAILED,
                         message='pmix: its palloc ended without saying how the job ended')
    raise ValueError('pmix: unknown batch state %r' % state)
