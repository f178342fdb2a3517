"""A tool written against Debian's OpenPMIx 4.2.2 Python binding (python3-pmix).

Usage: /usr/bin/python3 -W ignore libpmix_tool.py URI [REQID]
Connects to the server at URI as a tool, queries its namespaces, asks for a
one-node allocation (with request id REQID when given) and finalizes; prints
one JSON object: init, me, query, namespaces, alloc (status), alloc_name,
alloc_info (the returned infos by key), finalize.
"""
import json
import sys

import pmix

t = pmix.PMIxTool()
out = {}
rc, me = t.init([{'key': pmix.PMIX_SERVER_URI, 'value': sys.argv[1],
                  'val_type': pmix.PMIX_STRING}])
out['init'] = rc
out['me'] = me
if rc == 0:
    rc, res = t.query([{'keys': [pmix.PMIX_QUERY_NAMESPACES], 'qualifiers': []}])
    out['query'] = rc
    key = pmix.PMIX_QUERY_NAMESPACES
    key = key.decode() if isinstance(key, bytes) else key
    out['namespaces'] = [r['value'] for r in res if r.get('key') == key]
    directives = [{'key': pmix.PMIX_ALLOC_NUM_NODES, 'value': 1, 'val_type': pmix.PMIX_UINT64}]
    if len(sys.argv) > 2:
        directives.append({'key': 'pmix.alloc.reqid', 'value': sys.argv[2],
                           'val_type': pmix.PMIX_STRING})
    rc, res = t.allocation_request(pmix.PMIX_ALLOC_NEW, directives)
    out['alloc'] = rc
    out['alloc_name'] = t.error_string(rc)
    out['alloc_info'] = {r['key']: r['value'] for r in (res or [])}
    out['finalize'] = t.finalize()
print(json.dumps(out, default=str))
