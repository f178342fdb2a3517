"""JobSpec → palloc command line (pure functions, unit-tested without a DVM)."""
from datetime import timedelta
from typing import Dict, List, Optional

from psij import Job, ResourceSpecV1

#: Custom attributes `pmix.<key>` and the palloc flag each becomes.
CUSTOM_FLAGS = {'inherit': '--inherit', 'warning': '--warn-timeout', 'share': '--share'}


class SpecError(ValueError):
    """A JobSpec this executor cannot express."""


def format_duration(d: timedelta) -> str:
    """PSI/J duration → palloc's `[D-]HH:MM:SS` (seconds rounded up: never less than asked)."""
    total = int(d.total_seconds())
    if total < d.total_seconds():
        total += 1
    days, rest = divmod(total, 86400)
    hh, rest = divmod(rest, 3600)
    mm, ss = divmod(rest, 60)
    body = '%02d:%02d:%02d' % (hh, mm, ss)
    return '%d-%s' % (days, body) if days else body


def connection_args(uri: Optional[str], tmpdir: Optional[str]) -> List[str]:
    """The tools' connection flags from the executor's config (none: the tools' discovery)."""
    args: List[str] = []
    if uri:
        args += ['--uri', uri]
    if tmpdir:
        args += ['--tmpdir', tmpdir]
    return args


def palloc_args(job: Job, native_id: str) -> List[str]:
    """palloc flags (after `palloc --no-wait`) for this job's resources and attributes."""
    spec = job.spec
    assert spec is not None
    args = ['-J', native_id]
    res = spec.resources
    if res is not None:
        if not isinstance(res, ResourceSpecV1):
            raise SpecError('pmix: only ResourceSpecV1 is supported, not version %s'
                            % res.version)
        args += ['-N', str(res.computed_node_count)]
        if res.cpu_cores_per_process is not None:
            args += ['-c', str(res.cpu_cores_per_process * res.computed_process_count)]
        if res.memory is not None:
            args += ['--mem', '%dM' % max(1, -(-res.memory // (1024 * 1024)))]
        if res.gpu_cores_per_process:
            raise SpecError('pmix: gpu_cores_per_process is not supported by palloc')
    attrs = spec.attributes
    if attrs is not None:
        if attrs.duration is not None:
            args += ['-t', format_duration(attrs.duration)]
        if attrs.queue_name:
            args += ['-p', attrs.queue_name]
        account = attrs.account or getattr(attrs, 'project_name', None)
        if account:
            args += ['-A', account]
        if attrs.reservation_id:
            args += ['--reservation', attrs.reservation_id]
        args += custom_args(attrs._custom_attributes or {})
    return args


def custom_args(custom: Dict[str, object]) -> List[str]:
    """Custom attributes `pmix.<key>` → palloc `--<key> VALUE`, as PSI/J's Slurm executor turns
    `slurm.<key>` into `#SBATCH --<key>=VALUE`: `pmix.inherit` (--inherit RULE), `pmix.share`
    (True: --share), `pmix.warning` (--warn-timeout DURATION), any other palloc long option by
    its name (palloc refuses an unknown one, and submit raises its message). A True value is a
    bare flag, False leaves it out. Other executors' prefixes are ignored."""
    args: List[str] = []
    for key, value in sorted(custom.items()):
        prefix, _, name = key.partition('.')
        if prefix.lower() != 'pmix' or not name:
            continue
        flag = CUSTOM_FLAGS.get(name, '--' + name)
        if value is True or (name == 'share' and str(value).lower() in ('true', '1', 'yes')):
            args.append(flag)
        elif value is False or (name == 'share' and str(value).lower() in ('false', '0', 'no')):
            continue
        else:
            args += [flag, str(value)]
    return args


def flag_lines(args: List[str]) -> List[str]:
    """palloc flags grouped one option a line (with its value), for the script's header."""
    lines: List[str] = []
    for a in args:
        if a.startswith('-') or not lines:
            lines.append(a)
        else:
            lines[-1] += ' ' + a
    return lines
