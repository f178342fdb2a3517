"""Unit tests of the `pmix` plugin without a DVM: spec → palloc command line, state parsing."""
import json
import os
from datetime import timedelta
from pathlib import Path

import pytest

from psij import Job, JobAttributes, JobExecutor, JobSpec, JobState, ResourceSpecV1, Launcher
from psij_pmix.executor import PmixExecutorConfig, _uri_from_url
from psij_pmix.launcher import pspawn_args
from psij_pmix.nodefile import node_lines
from psij_pmix.spec_args import SpecError, format_duration, palloc_args, flag_lines
from psij_pmix.status import parse_status


def _job(**kw: object) -> Job:
    return Job(JobSpec(executable='/bin/true', **kw))  # type: ignore


def test_plugins_are_found_by_name() -> None:
    ex = JobExecutor.get_instance('pmix', config=PmixExecutorConfig(bin_dir='/nonexistent'))
    assert type(ex).__name__ == 'PmixJobExecutor'
    assert type(Launcher.get_instance('pspawn')).__name__ == 'PspawnLauncher'


def test_resources_and_attributes_become_palloc_flags() -> None:
    job = _job(resources=ResourceSpecV1(node_count=2, processes_per_node=2,
                                        cpu_cores_per_process=3, memory=100 * 1024 * 1024),
               attributes=JobAttributes(duration=timedelta(seconds=3700.5), queue_name='debug',
                                        account='proj', reservation_id='resv1',
                                        custom_attributes={'pmix.inherit': 'child',
                                                           'pmix.share': True,
                                                           'pmix.warning': '30s',
                                                           'slurm.constraint': 'ignored'}))
    assert palloc_args(job, 'psij-1') == [
        '-J', 'psij-1', '-N', '2', '-c', '12', '--mem', '100M', '-t', '01:01:41',
        '-p', 'debug', '-A', 'proj', '--reservation', 'resv1',
        '--inherit', 'child', '--share', '--warn-timeout', '30s']


def test_project_name_is_the_account_when_no_account() -> None:
    job = _job(attributes=JobAttributes(project_name='p7'))
    assert palloc_args(job, 'x')[-2:] == ['-A', 'p7']


def test_an_unknown_pmix_attribute_is_passed_on_for_palloc_to_judge() -> None:
    job = _job(attributes=JobAttributes(custom_attributes={'pmix.qos': 'high'}))
    assert palloc_args(job, 'x')[-2:] == ['--qos', 'high']


def test_gpus_are_a_spec_error() -> None:
    with pytest.raises(SpecError):
        palloc_args(_job(resources=ResourceSpecV1(gpu_cores_per_process=1)), 'x')


def test_durations() -> None:
    assert format_duration(timedelta(minutes=10)) == '00:10:00'
    assert format_duration(timedelta(days=1, hours=2, seconds=1)) == '1-02:00:01'
    assert format_duration(timedelta(seconds=0.2)) == '00:00:01'


def test_flag_lines_group_values() -> None:
    assert flag_lines(['-J', 'a', '--share', '-N', '2']) == ['-J a', '--share', '-N 2']


def test_pspawn_launcher_args() -> None:
    assert pspawn_args(None) == ['1', '']
    assert pspawn_args(ResourceSpecV1(node_count=2, processes_per_node=2)) == ['4', '2']
    assert pspawn_args(ResourceSpecV1(process_count=4)) == ['4', '4']


def test_nodefile_lines() -> None:
    assert node_lines(['a', 'b'], '4', '0') == ['a', 'a', 'b', 'b']
    assert node_lines(['a', 'b'], '0', '3') == ['a'] * 3 + ['b'] * 3
    assert node_lines(['a'], '0', '0') == ['a']


def test_url_names_the_uri_file() -> None:
    assert _uri_from_url('pmix://file:/x/uri') == 'file:/x/uri'
    assert _uri_from_url('pmix:///x/uri') == 'file:/x/uri'


def _snapshot(batch: list, reservations: list) -> str:
    return json.dumps({'type': 'status', 'batch_jobs': batch, 'reservations': reservations})


def _batch(rid: str, state: str, **kw: object) -> dict:
    rec = {'type': 'batch', 'request_id': rid, 'state': state, 'exit_code': None,
           'signal': None, 'stopped_by': None}
    rec.update(kw)
    return rec


def test_states_from_one_status_snapshot() -> None:
    out = _snapshot([_batch('bq', 'queued'),
                     _batch('run', 'running'),
                     _batch('ok', 'exited', exit_code=0),
                     _batch('bad', 'exited', exit_code=3),
                     _batch('rel', 'killed', signal='SIGTERM', stopped_by='released'),
                     _batch('tl', 'killed', signal='SIGTERM', stopped_by='time-limit'),
                     _batch('lost', 'lost')],
                    [{'request_id': 'q', 'state': 'queued'}])
    s = parse_status(out, ['bq', 'run', 'ok', 'bad', 'rel', 'tl', 'lost', 'q', 'gone', 'wd'], {'wd'})
    assert s['bq'].state == JobState.QUEUED
    assert s['run'].state == JobState.ACTIVE
    assert s['ok'].state == JobState.COMPLETED and s['ok'].exit_code == 0
    assert s['bad'].state == JobState.FAILED and s['bad'].exit_code == 3
    assert s['rel'].state == JobState.CANCELED
    assert s['tl'].state == JobState.FAILED and 'time limit' in (s['tl'].message or '')
    assert s['lost'].state == JobState.FAILED
    assert s['q'].state == JobState.QUEUED
    assert 'gone' not in s
    assert s['wd'].state == JobState.CANCELED


def test_the_submit_script_names_the_flags(tmp_path: Path) -> None:
    ex = JobExecutor.get_instance('pmix', config=PmixExecutorConfig(bin_dir='/nonexistent'))
    job = _job(resources=ResourceSpecV1(node_count=2), launcher='pspawn',
               attributes=JobAttributes(queue_name='debug'))
    with open(tmp_path / 's', 'w+') as f:
        ex.generate_submit_script(job, ex._create_script_context(job), f)  # type: ignore
        f.seek(0)
        text = f.read()
    assert '#PALLOC -N 2' in text and '#PALLOC -p debug' in text
    assert 'pspawn_launch.sh' in text


def test_the_launcher_runs_in_the_submit_scripts_shell_and_no_ec_file_is_written(
        tmp_path: Path) -> None:
    # one bash a job, as PSI/J's `local` (its exit status, palloc's batch record, is the
    # launcher's): a bash launcher script is sourced with $0 its own path, nothing runs after
    ex = JobExecutor.get_instance('pmix', config=PmixExecutorConfig(bin_dir='/nonexistent'))
    for launcher in ('single', 'multiple', 'pspawn'):
        job = _job(launcher=launcher)
        with open(tmp_path / 's', 'w+') as f:
            ex.generate_submit_script(job, ex._create_script_context(job), f)  # type: ignore
            f.seek(0)
            lines = [ln for ln in f.read().splitlines() if ln.strip() and not ln.startswith('#')]
        assert lines[-1] == 'exit', lines[-3:]
        assert lines[-2].startswith('source ') and '_launch.sh' in lines[-2], lines[-3:]
        assert lines[-4] == 'BASH_ARGV0=' + lines[-2][len('source '):], lines[-4:]
        assert not any(ln.startswith('exec /bin/bash') for ln in lines), lines
        assert not any('.ec' in ln for ln in lines), lines


def test_a_launch_command_that_is_not_a_bash_script_replaces_the_shell() -> None:
    from psij_pmix.executor import _sourced_launcher
    assert _sourced_launcher({'launch_command': ['/usr/bin/env', 'true']}) == {}
    assert _sourced_launcher({'launch_command': ['/bin/bash', '-c', 'true']}) == {}
    assert _sourced_launcher({'launch_command': ['/bin/bash', '/l.sh', 'a', '']}) == {
        'launch_script': '/l.sh', 'launch_args': ['a', '']}


def test_a_sourced_launcher_sees_its_own_path_and_arguments(tmp_path: Path) -> None:
    import subprocess
    launcher = tmp_path / 'dir' / 'my_launch.sh'
    launcher.parent.mkdir()
    launcher.write_text('echo "$(dirname "$0") $# [$2]"\nexit 7\n')
    ex = JobExecutor.get_instance('pmix', config=PmixExecutorConfig(bin_dir='/nonexistent'))
    job = _job()
    ctx = ex._create_script_context(job)  # type: ignore
    ctx['psij'] = dict(ctx['psij'], launch_command=['/bin/bash', str(launcher), 'a b', '', 'c'])
    ctx.update({'launch_script': str(launcher), 'launch_args': ['a b', '', 'c']})
    text = ex.generator.renderer.render(ex.generator.template, ctx)  # type: ignore
    body = text[text.index('BASH_ARGV0='):]
    res = subprocess.run(['/bin/bash', '-c', body], capture_output=True, text=True)
    assert res.returncode == 7, res
    assert res.stdout == '%s 3 []\n' % launcher.parent, res.stdout


def test_a_missing_dvm_is_a_submit_exception_with_the_tools_message(tmp_path: Path) -> None:
    import shutil
    from psij import SubmitException
    assert shutil.which('palloc'), 'palloc must be on PATH (target/debug)'
    ex = JobExecutor.get_instance('pmix', config=PmixExecutorConfig(tmpdir=str(tmp_path)))
    with pytest.raises(SubmitException) as e:
        ex.submit(_job())
    # palloc's own words (exit 3, cannot connect), not a Python error
    assert str(e.value).startswith('palloc'), str(e.value)


def _fake_agent(tmp_path: Path, answers: list) -> 'object':
    """A PallocAgent whose palloc answers `answers` (JSON records), one per line read."""
    import sys
    from psij_pmix.agent import PallocAgent
    code = ('import sys, json\nanswers = %r\nfor a in answers:\n'
            '    if not sys.stdin.readline():\n        break\n'
            '    print(json.dumps(a), flush=True)\n' % (answers,))
    return PallocAgent(lambda: [sys.executable, '-c', code], lambda: str(tmp_path),
                       lambda: dict(os.environ))


def test_the_agent_answers_a_request_id_or_pallocs_refusal(tmp_path: Path) -> None:
    from psij import SubmitException
    agent = _fake_agent(tmp_path, [
        {'type': 'request', 'request_id': 'j1', 'state': 'submitted'},
        {'type': 'error', 'status': 'PMIX_ERR_OUT_OF_RESOURCE', 'rule': None,
         'message': 'request j2 was refused: too big', 'exit_code': 4}])
    assert agent.submit(['-J', 'j1', '--', 'x']) == 'j1'  # type: ignore
    with pytest.raises(SubmitException) as e:
        agent.submit(['-J', 'j2', '--', 'x'])  # type: ignore
    assert str(e.value) == 'palloc: request j2 was refused: too big'
    agent.close()  # type: ignore


def test_an_agent_that_cannot_start_or_ends_unheard_leaves_submit_to_palloc_no_wait(
        tmp_path: Path) -> None:
    from psij_pmix.agent import AgentGone, PallocAgent
    missing = PallocAgent(lambda: ['/nonexistent/palloc'], lambda: str(tmp_path),
                          lambda: dict(os.environ))
    with pytest.raises(AgentGone):
        missing.submit(['--', 'x'])
    assert not missing.usable()
    mute = _fake_agent(tmp_path, [])
    with pytest.raises(AgentGone):
        mute.submit(['--', 'x'])  # type: ignore
    assert not mute.usable()  # type: ignore


def test_the_agents_job_ends_go_to_on_end_and_answers_to_submit(tmp_path: Path) -> None:
    import queue
    import sys
    from psij_pmix.agent import PallocAgent
    from psij_pmix.status import batch_status
    end = {'type': 'batch', 'request_id': 'j1', 'state': 'exited', 'exit_code': 3}
    # after the first line: its answer, then j1's end unasked; after the second: its answer
    said = [[{'type': 'request', 'request_id': 'j1', 'state': 'submitted'}, end],
            [{'type': 'request', 'request_id': 'j2', 'state': 'submitted'}]]
    code = ('import sys, json\nsaid = %r\nfor recs in said:\n'
            '    if not sys.stdin.readline():\n        break\n'
            '    for r in recs:\n        print(json.dumps(r), flush=True)\n'
            'sys.stdin.readline()\n' % (said,))
    ends: 'queue.Queue[dict]' = queue.Queue()
    agent = PallocAgent(lambda: [sys.executable, '-c', code], lambda: str(tmp_path),
                        lambda: dict(os.environ), on_end=ends.put)
    assert agent.submit(['-J', 'j1', '--', 'x']) == 'j1'
    assert ends.get(timeout=60) == end
    assert agent.submit(['-J', 'j2', '--', 'x']) == 'j2'
    agent.close()
    st = batch_status(end, False)
    assert st.state == JobState.FAILED and st.exit_code == 3
