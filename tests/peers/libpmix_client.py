"""A client written against Debian's OpenPMIx 4.2.2 Python binding (python3-pmix).

Usage (as a process launched by a PMIx server):
    /usr/bin/python3 -W ignore libpmix_client.py
PMIx_Init from the environment, a one-node allocation request, finalize;
prints one JSON object: env_ns ($PMIX_NAMESPACE), init, me, alloc (status),
alloc_info (the returned infos by key), finalize.
"""
import json
import os

import pmix

c = pmix.PMIxClient()
out = {'env_ns': os.environ.get('PMIX_NAMESPACE')}
rc, me = c.init([])
out['init'] = rc
out['me'] = me
if rc == 0:
    rc, res = c.allocation_request(pmix.PMIX_ALLOC_NEW, [
        {'key': pmix.PMIX_ALLOC_NUM_NODES, 'value': 1, 'val_type': pmix.PMIX_UINT64}])
    out['alloc'] = rc
    out['alloc_info'] = {r['key']: r['value'] for r in res}
    out['finalize'] = c.finalize([])
print(json.dumps(out, default=str))
