"""The `pmix` executor: PSI/J jobs as palloc batch jobs on a PMIx DVM (pdvm, PRRTE + psched).

submit = ``palloc --no-wait -J NATIVE_ID [resources] -- bash SCRIPT`` (a line to one long-lived
``palloc --stdin-requests``, which also says each job's end as it happens); status of every job =
one ``pwatch --status --all --json`` (polled besides); cancel = ``prelease NATIVE_ID``; list = the
same status query. The DVM is found by the config's ``uri``/``tmpdir`` (or the executor url
``pmix://file:PATH`` / ``pmix:///PATH``), else by the tools' own discovery (PMIX_TOOLS_URI,
rendezvous files under $TMPDIR).
"""
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import IO, Collection, Dict, List, Optional, Set, cast

from psij import Job, JobStatus, JobState, SubmitException, ResourceSpecV1
from psij.executors.batch.batch_scheduler_executor import (
    BatchSchedulerExecutor, BatchSchedulerExecutorConfig, check_status_exit_code)
from psij.executors.batch.script_generator import TemplatedScriptGenerator

from psij_pmix.agent import AgentGone, PallocAgent
from psij_pmix.spec_args import SpecError, connection_args, flag_lines, palloc_args
from psij_pmix.status import batch_status, parse_status

#: palloc/prelease exit code for "not found" (docs: EXIT STATUS).
EXIT_NOT_FOUND = 5


class PmixExecutorConfig(BatchSchedulerExecutorConfig):
    """Configuration of the `pmix` executor.

    Parameters (besides BatchSchedulerExecutorConfig's)
    ----------
    uri
        The DVM's URI or ``file:PATH`` (palloc ``--uri``); None: the tools' discovery.
    tmpdir
        Where to look for rendezvous files (``--tmpdir``); None: $TMPDIR.
    bin_dir
        Directory holding palloc, pspawn, pwatch, prelease; None: $PATH.
    """

    def __init__(self, uri: Optional[str] = None, tmpdir: Optional[str] = None,
                 bin_dir: Optional[str] = None, queue_polling_interval: float = 0.5,
                 initial_queue_polling_delay: float = 0.1, **kwargs: object) -> None:
        super().__init__(queue_polling_interval=queue_polling_interval,  # type: ignore
                         initial_queue_polling_delay=initial_queue_polling_delay,  # type: ignore
                         **kwargs)  # type: ignore
        self.uri = uri
        self.tmpdir = tmpdir
        self.bin_dir = bin_dir


class PmixJobExecutor(BatchSchedulerExecutor):
    """PSI/J executor running jobs through pmix-tools (palloc, pwatch, prelease)."""

    def __init__(self, url: Optional[str] = None, config: Optional[PmixExecutorConfig] = None):
        """
        Parameters
        ----------
        url
            Optional ``pmix://file:PATH`` or ``pmix:///PATH`` naming the DVM's URI file.
        config
            An optional PmixExecutorConfig.
        """
        if config is None:
            config = PmixExecutorConfig()
        elif not isinstance(config, BatchSchedulerExecutorConfig):
            base = config
            config = PmixExecutorConfig()
            config.work_directory = base.work_directory
            config.launcher_log_file = base.launcher_log_file
        # PSI/J loads this module under its own name, so a PmixExecutorConfig made by the
        # caller may be another class object: read its settings by name.
        self._uri: Optional[str] = getattr(config, 'uri', None)
        self._tmpdir: Optional[str] = getattr(config, 'tmpdir', None)
        self._bin_dir: Optional[str] = getattr(config, 'bin_dir', None)
        if url and not self._uri:
            self._uri = _uri_from_url(url)
        self._canceled: Set[str] = set()
        # the jobs submitted through the agent and not ended yet, and the ends the agent said
        # before their submission was done
        self._ends_lock = threading.Lock()
        self._through_agent: Dict[str, Job] = {}
        self._early_ends: Dict[str, Dict[str, object]] = {}
        self._status_lock = threading.RLock()
        super().__init__(url=url, config=config)  # type: ignore
        self._agent = PallocAgent(
            lambda: [self._tool('palloc'), '--stdin-requests'] + self._conn(),
            lambda: str(self.work_directory), self._tool_env, on_end=self._job_ended)
        self.generator = TemplatedScriptGenerator(config, Path(__file__).parent / 'pmix.mustache')

    # -- tools ---------------------------------------------------------------------------
    def _tool(self, name: str) -> str:
        if self._bin_dir:
            return str(Path(self._bin_dir) / name)
        return shutil.which(name) or name

    def _conn(self) -> List[str]:
        return connection_args(self._uri, self._tmpdir)

    def _tool_env(self) -> Dict[str, str]:
        env = dict(os.environ)
        if self._bin_dir:
            env['PATH'] = self._bin_dir + os.pathsep + env.get('PATH', '')
        return env

    def _run_command(self, cmd: List[str]) -> str:
        # palloc writes a batch job's log (palloc-NAME.out) in its working directory
        self._ensure_work_dir()
        try:
            res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, cwd=str(self.work_directory), env=self._tool_env())
        except FileNotFoundError as ex:
            raise subprocess.CalledProcessError(127, cmd, output='pmix: %s' % ex) from None
        if res.returncode != 0:
            # the tool's own message is on stderr (palloc --no-wait prints the request id on
            # stdout even when it is refused)
            msg = res.stderr.strip() or res.stdout.strip()
            raise subprocess.CalledProcessError(res.returncode, cmd,
                                                output=msg or 'pmix: %s failed' % cmd[0])
        return res.stdout

    # -- submit --------------------------------------------------------------------------
    def submit(self, job: Job) -> None:
        """See :func:`~psij.JobExecutor.submit`; a bad spec is a SubmitException.

        The job goes to one long-lived ``palloc --stdin-requests`` (see :mod:`psij_pmix.agent`):
        one line and its answer per job instead of a palloc started for each; should that palloc
        not run, ``palloc --no-wait`` submits it instead."""
        try:
            self._native_for(job)
            if self._agent.usable():
                self._submit_through_agent(job)
            else:
                super().submit(job)
        except SpecError as ex:
            raise SubmitException(str(ex)) from None

    def _submit_through_agent(self, job: Job) -> None:
        """BatchSchedulerExecutor.submit, the request sent to the agent."""
        self._ensure_work_dir()
        self._check_job(job)
        context = self._create_script_context(job)
        script = self.work_directory / (job.id + '.job')
        with script.open('w') as f:
            self.generate_submit_script(job, context, f)
        args = palloc_args(job, self._native_for(job)) + ['--', '/bin/bash', str(script)]
        try:
            nid = self._agent.submit(args)
        except AgentGone:
            super().submit(job)
            return
        job._native_id = nid
        self._set_job_status(job, JobStatus(JobState.QUEUED, metadata={'native_id': nid}))
        self._queue_poll_thread.register_job(job)
        with self._ends_lock:
            early = self._early_ends.pop(nid, None)
            if early is None:
                self._through_agent[nid] = job
        if early is not None:
            self._job_ended(early)

    def _job_ended(self, rec: Dict[str, object]) -> None:
        """The agent said job ``rec['request_id']`` ended (its batch record): its final status
        now, without waiting for the next status poll (which keeps the job until it sees the
        end too, and is what finds the ends of jobs submitted otherwise)."""
        nid = str(rec.get('request_id'))
        with self._ends_lock:
            job = self._through_agent.pop(nid, None)
            if job is None:
                self._early_ends[nid] = rec
                return
        self._set_job_status(job, batch_status(rec, nid in self._canceled))

    def _set_job_status(self, job: Job, status: JobStatus) -> None:
        # the status poll and the agent's reader both set statuses: one at a time, so that a
        # final state is reported once
        with self._status_lock:
            super()._set_job_status(job, status)

    def _native_for(self, job: Job) -> str:
        nid = getattr(job, '_pmix_native', None)
        if nid is None:
            nid = 'psij-' + uuid.uuid4().hex[:16]
            setattr(job, '_pmix_native', nid)
        return cast(str, nid)

    def _create_script_context(self, job: Job) -> Dict[str, object]:
        ctx = super()._create_script_context(job)
        assert job.spec is not None
        res = job.spec.resources
        pc = ppn = 0
        if isinstance(res, ResourceSpecV1):
            pc = res.computed_process_count
            ppn = res.processes_per_node or 0
        nid = self._native_for(job)
        ctx.update({'native_id': nid, 'python': sys.executable,
                    'nodefile_py': str(Path(__file__).parent / 'nodefile.py'),
                    'process_count': pc, 'processes_per_node': ppn,
                    'palloc_flags': flag_lines(palloc_args(job, nid))})
        ctx.update(_sourced_launcher(cast(Dict[str, object], ctx['psij'])))
        return ctx

    def generate_submit_script(self, job: Job, context: Dict[str, object],
                               submit_file: IO[str]) -> None:
        """See :meth:`~.BatchSchedulerExecutor.generate_submit_script`."""
        self.generator.generate_submit_script(job, context, submit_file)

    def get_submit_command(self, job: Job, submit_file_path: Path) -> List[str]:
        """``palloc --no-wait -J NATIVE_ID [resources] -- /bin/bash SCRIPT``."""
        return ([self._tool('palloc'), '--no-wait'] + self._conn()
                + palloc_args(job, self._native_for(job))
                + ['--', '/bin/bash', str(submit_file_path.absolute())])

    def job_id_from_submit_output(self, out: str) -> str:
        """palloc --no-wait prints the request id, our native id."""
        return out.strip().split()[-1]

    # -- cancel --------------------------------------------------------------------------
    def get_cancel_command(self, native_id: str) -> List[str]:
        """``prelease NATIVE_ID`` withdraws a queued request or stops the running script."""
        self._canceled.add(native_id)
        return [self._tool('prelease')] + self._conn() + [native_id]

    def process_cancel_command_output(self, exit_code: int, out: str) -> None:
        """A job already gone is not an error for PSI/J's cancel."""
        if exit_code == EXIT_NOT_FOUND:
            return
        raise SubmitException('pmix: cancel failed: %s' % out)

    def cancel(self, job: Job) -> None:
        """See :func:`~psij.JobExecutor.cancel`."""
        if job.native_id is None:
            self._set_job_status(job, JobStatus(JobState.CANCELED))
            return
        try:
            self._run_command(self.get_cancel_command(job.native_id))
        except subprocess.CalledProcessError as ex:
            if self._ended(job.native_id):
                # the release took effect although prelease did not hear the answer (on PRRTE
                # master the holding palloc may end with its allocation before relaying it)
                return
            self.process_cancel_command_output(ex.returncode, ex.output)

    def _ended(self, native_id: str) -> bool:
        """Whether one status query shows the job ended."""
        for _ in range(20):
            try:
                out = self._run_command(self.get_status_command([native_id]))
            except subprocess.CalledProcessError:
                return False
            st = parse_status(out, [native_id], self._canceled).get(native_id)
            if st is not None and st.state.final:
                return True
            if st is None or st.state != JobState.ACTIVE:
                return False
            time.sleep(0.1)
        return False

    # -- status --------------------------------------------------------------------------
    def get_status_command(self, native_ids: Collection[str]) -> List[str]:
        """One query for every job: ``pwatch --status --all --json --what reservations``."""
        return ([self._tool('pwatch'), '--status', '--all', '--json', '--what', 'reservations']
                + self._conn())

    def parse_status_output(self, exit_code: int, out: str) -> Dict[str, JobStatus]:
        """See :mod:`psij_pmix.status`; jobs pwatch does not list stay as they are."""
        check_status_exit_code('pwatch', exit_code, out)
        with self._queue_poll_thread._jobs_lock:
            ids = list(self._queue_poll_thread._jobs.keys())
        result = parse_status(out, ids, self._canceled)
        for nid in ids:
            if nid not in result:
                # not listed yet (its palloc writes its record once it has asked)
                result[nid] = JobStatus(JobState.QUEUED)
        return result

    def get_list_command(self) -> List[str]:
        """The same status query."""
        return self.get_status_command([])

    def parse_list_output(self, out: str) -> List[str]:
        """Native ids of this user's batch jobs and queued requests."""
        import json
        doc = json.loads(out)
        ids = [b['request_id'] for b in doc.get('batch_jobs') or []]
        ids += [r['request_id'] for r in doc.get('reservations') or []
                if r.get('request_id') and r['request_id'] not in ids]
        # A request the scheduler still queues is held by this user's detached palloc; the DVM
        # lists it only where it queues requests itself (pdvm), not where psched does (PRRTE
        # master): add this executor's own jobs not yet ended.
        with self._queue_poll_thread._jobs_lock:
            ids += [nid for nid in self._queue_poll_thread._jobs if nid not in ids]
        return ids

    def _clean_submit_script(self, job: Job) -> None:
        super()._clean_submit_script(job)
        self._delete_aux_file(job, '.nodefile')
        self._delete_aux_file(path=self.work_directory / ('palloc-%s.out' % job.native_id))


def _sourced_launcher(psij_ctx: Dict[str, object]) -> Dict[str, object]:
    """The job script's way to run a bash launcher script (``/bin/bash SCRIPT ARGS``, as PSI/J's
    script-based launchers are) in its own shell instead of a second bash: ``launch_script``
    and ``launch_args``; nothing for any other launch command, which the script ``exec``s."""
    cmd = [str(a) for a in cast(List[object], psij_ctx.get('launch_command') or [])]
    if len(cmd) >= 2 and cmd[0] == '/bin/bash' and not cmd[1].startswith('-'):
        return {'launch_script': cmd[1], 'launch_args': cmd[2:]}
    return {}


def _uri_from_url(url: str) -> str:
    """``pmix://file:PATH`` → ``file:PATH``; ``pmix:///PATH`` → ``file:/PATH``."""
    rest = url.split('://', 1)[1] if '://' in url else url
    if rest.startswith('/'):
        return 'file:' + rest
    return rest
