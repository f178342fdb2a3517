"""A real OpenPMIx 4.2.2 server (Debian's python3-pmix) for pmix-tools tests.

Usage: /usr/bin/python3 pmix422_server.py TMPDIR
Registers a one-process job `py422-job` and prints the environment its rank 0
gets (`ENV <json>`), then "READY <pid>"; answers queries and allocation
requests through the binding's upcalls, logs each upcall as one line on
stdout, and exits on SIGTERM or after 60 s.

Tools are not served: the 4.2.2 binding's tool-connection upcall raises
before answering (it hands a dict where a list is needed), so a tool's
handshake would hang. A registered client exercises the same server library.
"""
import json
import os
import select
import signal
import sys
import warnings

warnings.simplefilter("ignore")
import pmix  # noqa: E402

tmpdir = sys.argv[1]
granted = []


def query(args, queries):
    keys = [k for q in queries for k in q.get("keys", [])]
    print("QUERY", ",".join(keys), flush=True)
    out = []
    for k in keys:
        if k == "pmix.qry.ns":
            out.append({"key": k, "value": "py422-tool,py422-job", "val_type": pmix.PMIX_STRING})
    return pmix.PMIX_SUCCESS, out


def allocate(args):
    dirs = {d["key"]: d["value"] for d in args.get("directives", [])}
    print("ALLOC", args.get("action"), sorted(dirs.items()), flush=True)
    granted.append(dirs)
    res = [{"key": "pmix.alloc.id", "value": "py422-alloc-%d" % len(granted), "val_type": pmix.PMIX_STRING}]
    if "pmix.alloc.reqid" in dirs:
        res.append({"key": "pmix.alloc.reqid", "value": dirs["pmix.alloc.reqid"], "val_type": pmix.PMIX_STRING})
    return pmix.PMIX_SUCCESS, res


srv = pmix.PMIxServer()
info = [
    {"key": pmix.PMIX_SERVER_TOOL_SUPPORT, "value": True, "val_type": pmix.PMIX_BOOL},
    {"key": pmix.PMIX_SERVER_TMPDIR, "value": tmpdir, "val_type": pmix.PMIX_STRING},
    {"key": pmix.PMIX_SYSTEM_TMPDIR, "value": tmpdir, "val_type": pmix.PMIX_STRING},
]
rc = srv.init(info, {"query": query, "allocate": allocate})
if rc != pmix.PMIX_SUCCESS:
    print("INIT FAILED", rc, flush=True)
    sys.exit(1)
job = [{"key": pmix.PMIX_JOB_SIZE, "value": 1, "val_type": pmix.PMIX_UINT32},
       {"key": pmix.PMIX_UNIV_SIZE, "value": 1, "val_type": pmix.PMIX_UINT32}]
rc = srv.register_nspace("py422-job", 1, job)
rc2 = srv.register_client({"nspace": "py422-job", "rank": 0}, os.getuid(), os.getgid())
env = {}
rc3 = srv.setup_fork({"nspace": "py422-job", "rank": 0}, env)
ok = (pmix.PMIX_SUCCESS, pmix.PMIX_OPERATION_SUCCEEDED)
if rc not in ok or rc2 not in ok or rc3 not in ok:
    print("REGISTER FAILED", rc, rc2, rc3, flush=True)
    sys.exit(1)
print("ENV", json.dumps({k: v for k, v in env.items() if k.startswith("PMIX")}), flush=True)
# SIGTERM, whichever thread the kernel hands it to, wakes the wait below
# through the wakeup pipe; its handler then exits. Otherwise: 60 s.
wake_r, wake_w = os.pipe()
os.set_blocking(wake_w, False)
signal.set_wakeup_fd(wake_w)
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
print("READY", os.getpid(), flush=True)
select.select([wake_r], [], [], 60)
