"""N PSI/J jobs of /bin/true submitted at once and waited on, with one executor.

Usage: python bench/jobs.py EXECUTOR [N]  — prints one JSON line: executor, jobs, seconds,
jobs_per_s, p50_s and p99_s of submit-to-COMPLETED, and submit_s (how long the submissions
took). Any job not COMPLETED fails the run.
"""
import json
import sys
import threading
import time
from typing import Dict, List

from psij import Job, JobExecutor, JobSpec, JobState, JobStatus


def main() -> None:
    name = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    ex = JobExecutor.get_instance(name)
    done: Dict[str, float] = {}
    submitted: Dict[str, float] = {}
    lock = threading.Lock()
    all_done = threading.Event()

    def on_status(job: Job, status: JobStatus) -> None:
        if status.state.final:
            with lock:
                done[job.id] = time.monotonic()
                if len(done) == n:
                    all_done.set()

    jobs: List[Job] = [Job(JobSpec(executable='/bin/true')) for _ in range(n)]
    for j in jobs:
        j.set_job_status_callback(on_status)
    t0 = time.monotonic()
    for j in jobs:
        submitted[j.id] = time.monotonic()
        ex.submit(j)
    t_submitted = time.monotonic()
    all_done.wait(timeout=1800)
    t1 = time.monotonic()
    bad = [j.status for j in jobs if j.status.state != JobState.COMPLETED]
    if bad:
        sys.exit('%d of %d jobs did not complete, e.g. %s' % (len(bad), n, bad[0]))
    lat = sorted(done[j.id] - submitted[j.id] for j in jobs)
    print(json.dumps({'executor': name, 'jobs': n, 'seconds': round(t1 - t0, 3),
                      'jobs_per_s': round(n / (t1 - t0), 2),
                      'submit_s': round(t_submitted - t0, 3),
                      'p50_s': round(lat[len(lat) // 2], 3),
                      'p99_s': round(lat[min(len(lat) - 1, int(len(lat) * 0.99))], 3)}))


if __name__ == '__main__':
    main()
