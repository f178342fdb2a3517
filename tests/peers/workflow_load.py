#!/usr/bin/env python3
"""A workflow driver as users write them (issue 40). It holds one allocation
(`palloc --parsable`, NODES nodes), runs TASKS tasks WIDE at a time into it
with `pspawn --target`, cancels some of them with `prelease NSPACE` once they
have started, extends the allocation when its timeout warning comes, and
releases it at the end. Every task's stdout and stderr must be byte-exact
and its exit status the one it chose (143 for a cancelled task, whose stderr
is pspawn's word on the cancel). It prints one JSON summary line.

Usage: workflow_load.py NODES TIME WARN     e.g. workflow_load.py 4 30s 25s
"""

import concurrent.futures
import json
import subprocess
import sys
import threading
import time

TASKS = 60
WIDE = 8
CANCEL = {7, 19, 31, 43, 55}
DEADLINE = 180


def run(args):
    p = subprocess.run(args, capture_output=True, timeout=DEADLINE)
    return p.returncode, p.stdout, p.stderr


def expected(i):
    """The script of task i, its stdout, its stderr and its exit status."""
    body = "x" * (i * 53 % 2000)
    script = (
        f"printf 't{i} out {body}\\n'; printf 't{i} err\\n' >&2; "
        f"sleep 0.{5 + i % 5}; printf 'tail {i}'; exit {i % 3}"
    )
    return script, f"t{i} out {body}\ntail {i}".encode(), f"t{i} err\n".encode(), i % 3


def plain_task(i, alloc):
    script, out, err, rc = expected(i)
    got_rc, got_out, got_err = run(["pspawn", "--target", alloc, "sh", "-c", script])
    if (got_rc, got_out, got_err) == (rc, out, err):
        return None
    return {"task": i, "rc": got_rc, "want_rc": rc, "stdout_ok": got_out == out,
            "stderr": got_err.decode(errors="replace")[-400:]}


def cancelled_task(i, alloc):
    p = subprocess.Popen(
        ["pspawn", "--target", alloc, "sh", "-c", 'echo "ns=$PMIX_NAMESPACE"; exec sleep 120'],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    first = p.stdout.readline()
    ns = first.decode().strip().partition("=")[2]
    rel_rc, _, rel_err = run(["prelease", ns]) if ns else (-1, b"", b"no namespace printed")
    try:
        rest, err = p.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        p.kill()
        rest, err = p.communicate()
    if rel_rc == 0 and p.returncode == 143 and rest == b"" and b"cancelled" in err:
        return None
    return {"task": i, "rc": p.returncode, "want_rc": 143, "nspace": ns, "prelease_rc": rel_rc,
            "prelease_stderr": rel_err.decode(errors="replace")[-300:],
            "stdout_after_first_line": rest.decode(errors="replace")[-200:],
            "stderr": err.decode(errors="replace")[-400:]}


def one_task(i, alloc):
    return cancelled_task(i, alloc) if i in CANCEL else plain_task(i, alloc)


def extend_on_warning(alloc, warn, summary):
    """Wait for the allocation's timeout warning, then extend it."""
    w = subprocess.run(
        ["pwatch", "--alloc", alloc, "--event", "timeout-warning", "--warn-timeout", warn,
         "--count", "1", "--json", "--timeout", f"{DEADLINE}s"],
        capture_output=True, text=True, timeout=DEADLINE + 10,
    )
    summary["warned"] = any('"timeout-warning"' in line for line in w.stdout.splitlines())
    if not summary["warned"]:
        summary["errors"].append(f"no warning: rc={w.returncode} {w.stderr.strip()[-300:]}")
        return
    rc, _, err = run(["palloc", "--extend", alloc, "-t", "10m"])
    summary["extended"] = rc == 0
    if rc != 0:
        summary["errors"].append(f"extend rc={rc}: {err.decode().strip()[-300:]}")


def main():
    nodes, limit, warn = sys.argv[1], sys.argv[2], sys.argv[3]
    summary = {"tasks": TASKS, "wrong": [], "errors": [], "warned": False, "extended": False}
    start = time.monotonic()
    rc, out, err = run(["palloc", "--parsable", "-N", nodes, "-t", limit])
    alloc = out.decode().strip()
    if rc != 0 or not alloc:
        summary["errors"].append(f"palloc rc={rc}: {err.decode().strip()}")
        print(json.dumps(summary))
        return
    summary["alloc_id"] = alloc
    watcher = threading.Thread(target=extend_on_warning, args=(alloc, warn, summary))
    watcher.start()
    with concurrent.futures.ThreadPoolExecutor(max_workers=WIDE) as pool:
        for wrong in pool.map(lambda i: one_task(i, alloc), range(TASKS)):
            if wrong:
                summary["wrong"].append(wrong)
    watcher.join(DEADLINE)
    rc, _, err = run(["prelease", alloc])
    summary["released"] = rc == 0
    if rc != 0:
        summary["errors"].append(f"prelease rc={rc}: {err.decode().strip()[-300:]}")
    summary["right"] = TASKS - len(summary["wrong"])
    summary["seconds"] = round(time.monotonic() - start, 1)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
