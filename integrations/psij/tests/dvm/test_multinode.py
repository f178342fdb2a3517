"""Needs a DVM (run by tests/integration/psij_suite.rs): node_count 2 × processes_per_node 2
through launcher pspawn lands on 2 nodes with ranks 0–3, 2 on each (PSI/J's own
test_resources.py::test_nodes runs only for slurm, pbs, lsf)."""
from collections import Counter
from pathlib import Path

from psij import Job, JobExecutor, JobSpec, JobState, ResourceSpecV1


def test_two_nodes_two_ranks_each(tmp_path: Path) -> None:
    out = tmp_path / 'out.txt'
    job = Job(JobSpec(executable='/bin/sh',
                      arguments=['-c', 'echo "$PMIX_RANK ${PMIX_HOSTNAME:-$(hostname)}"'],
                      stdout_path=out, launcher='pspawn',
                      resources=ResourceSpecV1(node_count=2, processes_per_node=2)))
    ex = JobExecutor.get_instance('pmix')
    ex.submit(job)
    status = job.wait()
    assert status is not None and status.state == JobState.COMPLETED, \
        (status, status and status.message, status and status.exit_code,
         out.read_text() if out.exists() else '')
    lines = [ln.split() for ln in out.read_text().splitlines() if ln.strip()]
    print('ranks and nodes:', sorted(lines))
    assert sorted(int(r) for r, _ in lines) == [0, 1, 2, 3], lines
    per_node = Counter(n for _, n in lines)
    assert len(per_node) == 2 and set(per_node.values()) == {2}, lines
