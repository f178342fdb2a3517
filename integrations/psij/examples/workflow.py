#!/usr/bin/env python3
"""A workflow written against PSI/J's API (issue 42). It runs on pmix-tools with the
executor `pmix` (`integrations/psij`); with `slurm` instead, the same code runs on Slurm.

    pip install psij-python ./integrations/psij
    pdvm --nodes 1 --slots 4 --scheduler-nodes 4 --daemonize
    python3 integrations/psij/examples/workflow.py            # or: ... slurm
"""
import sys
from datetime import timedelta

from psij import Job, JobAttributes, JobExecutor, JobSpec, ResourceSpecV1

executor = JobExecutor.get_instance(sys.argv[1] if len(sys.argv) > 1 else 'pmix')

# 2 nodes × 2 ranks through the DVM's launcher (pspawn here, srun for slurm)
ranks = Job(JobSpec(executable='/bin/sh',
                    arguments=['-c', 'echo "rank $PMIX_RANK${SLURM_PROCID} on $(hostname)"'],
                    launcher='pspawn' if executor.name == 'pmix' else 'srun',
                    resources=ResourceSpecV1(node_count=2, processes_per_node=2),
                    attributes=JobAttributes(duration=timedelta(minutes=5))))
# a plain one-process job, and one that fails
ok = Job(JobSpec(executable='/bin/date'))
bad = Job(JobSpec(executable='/bin/false'))

for job in (ranks, ok, bad):
    executor.submit(job)
for name, job in (('ranks', ranks), ('date', ok), ('false', bad)):
    status = job.wait()
    print('%-6s %-10s native id %s, exit code %s'
          % (name, status.state, job.native_id, status.exit_code))
