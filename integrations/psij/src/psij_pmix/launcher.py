"""The `pspawn` launcher: runs a job's ranks through pspawn, as PSI/J's srun launcher does."""
from pathlib import Path
from typing import List, Optional, cast

from psij.job import Job
from psij.job_executor_config import JobExecutorConfig
from psij.launchers.multiple import MultipleLauncher
from psij.resource_spec import ResourceSpecV1


def pspawn_args(res: Optional[ResourceSpecV1]) -> List[str]:
    """The launcher script's extra arguments: process count and processes per node ('' when
    the job names no resources). The computed processes per node is always given, as PSI/J's
    Slurm template gives --ntasks-per-node: PRRTE's default mapping binds ranks to the host's
    cores and refuses more ranks than cores on a node even when its slots allow them."""
    if res is None:
        return ['1', '']
    return [str(res.computed_process_count), str(res.computed_processes_per_node)]


class PspawnLauncher(MultipleLauncher):
    """Launches the ranks of a job with pmix-tools' ``pspawn`` into the job's allocation.

    Inside a `pmix` job the script runs under ``palloc``, so pspawn lands in that allocation
    (PMIX_ALLOC_ID); processes_per_node becomes ``--map-by ppr:N:node``.
    """

    _NAME_ = 'pspawn'

    def __init__(self, config: Optional[JobExecutorConfig] = None):
        """
        Parameters
        ----------
        config
            An optional configuration.
        """
        super().__init__(Path(__file__).parent / 'pspawn_launch.sh', config)

    def get_additional_args(self, job: Job) -> List[str]:
        """The process count and processes per node."""
        assert job.spec is not None
        return pspawn_args(cast(Optional[ResourceSpecV1], job.spec.resources))
