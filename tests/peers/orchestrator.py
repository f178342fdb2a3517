#!/usr/bin/env python3
"""An orchestrator as users write them (issue 14): it drives the pmix-tools
and reads their JSON. It holds an allocation, runs JOBS jobs PARALLEL at a
time into it, extends the allocation when its timeout warning comes, and
releases it at the end. The DVM is chosen by PMIX_TOOLS_URI (`env URI`) or by
`--tmpdir DIR --pid PID` (`pid DIR:PID`). It prints one JSON summary line.

Usage: orchestrator.py env URI | orchestrator.py pid DIR:PID
"""

import concurrent.futures
import ctypes
import json
import os
import select
import subprocess
import sys
import time

JOBS = 40
PARALLEL = 6
DEADLINE = 120


def run(args, env):
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=DEADLINE)
    return p.returncode, p.stdout, p.stderr


def records(text):
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def one_job(i, alloc, flags, env):
    line = f"job-{i}-" + "x" * (i * 37)
    want = line + "\n"
    rc, out, err = run(
        ["pspawn", *flags, "--target", alloc, "sh", "-c", f"printf '%s\\n' '{line}'"],
        env,
    )
    return i, rc, out == want, err


def sockets_once_gone(registry, limit):
    """The holder sockets left in `registry` once there are none, or after
    `limit` seconds: each removal from the directory wakes the wait
    (inotify), no polling."""
    libc = ctypes.CDLL(None, use_errno=True)
    in_nonblock, in_cloexec = os.O_NONBLOCK, os.O_CLOEXEC
    # IN_MOVED_FROM | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
    mask = 0x40 | 0x200 | 0x400 | 0x800
    fd = libc.inotify_init1(in_nonblock | in_cloexec)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "inotify_init1")
    try:
        watched = libc.inotify_add_watch(fd, os.fsencode(registry), mask) >= 0
        end = time.monotonic() + limit
        while True:
            left = [n for n in os.listdir(registry) if n.endswith(".sock")] if os.path.isdir(registry) else []
            rest = end - time.monotonic()
            if not left or not watched or rest <= 0:
                return left
            if select.select([fd], [], [], rest)[0]:
                try:
                    os.read(fd, 65536)
                except BlockingIOError:
                    pass
    finally:
        os.close(fd)


def main():
    mode, value = sys.argv[1], sys.argv[2]
    env = dict(os.environ)
    flags = []
    if mode == "env":
        env["PMIX_TOOLS_URI"] = value
    else:
        tmpdir, pid = value.rsplit(":", 1)
        flags = ["--tmpdir", tmpdir, "--pid", pid]
    summary = {"mode": mode, "refusals": 0, "crosstalk": 0, "jobs_ok": 0, "errors": []}

    rc, out, err = run(["palloc", *flags, "-N", "1", "-t", "5m", "--json"], env)
    grant = [r for r in records(out) if r.get("type") == "allocation"]
    if rc != 0 or not grant:
        summary["errors"].append(f"palloc rc={rc}: {err.strip()}")
        print(json.dumps(summary))
        return
    alloc = grant[0]["alloc_id"]
    summary["alloc_id"] = alloc

    watch = subprocess.Popen(
        ["pwatch", *flags, "--alloc", alloc, "--event", "timeout-warning",
         "--warn-timeout", "4m", "--count", "1", "--json", "--timeout", "60s"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )

    with concurrent.futures.ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        for i, rc, exact, err in pool.map(lambda i: one_job(i, alloc, flags, env), range(JOBS)):
            if rc != 0:
                summary["refusals"] += 1
                summary["errors"].append(f"job {i} rc={rc}: {err.strip()}")
            elif not exact:
                summary["crosstalk"] += 1
            else:
                summary["jobs_ok"] += 1

    try:
        wout, werr = watch.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        watch.kill()
        wout, werr = watch.communicate()
    warned = [r for r in records(wout) if r.get("event") == "timeout-warning"]
    summary["warned"] = bool(warned)
    if not warned:
        summary["errors"].append(f"no warning: rc={watch.returncode} {werr.strip()}")
    rc, out, err = run(["palloc", *flags, "--extend", alloc, "-t", "30m", "--json"], env)
    summary["extended"] = rc == 0
    if rc != 0:
        summary["refusals"] += 1
        summary["errors"].append(f"extend rc={rc}: {err.strip()}")

    rc, out, err = run(["prelease", *flags, alloc, "--json"], env)
    summary["released"] = rc == 0
    if rc != 0:
        summary["refusals"] += 1
        summary["errors"].append(f"prelease rc={rc}: {err.strip()}")

    # Every holder gone: the private registry empties.
    registry = os.path.join(env.get("XDG_RUNTIME_DIR", "/nonexistent"), "pmix-tools-holders")
    summary["holders_left"] = sockets_once_gone(registry, 30)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
