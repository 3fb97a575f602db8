"""A raw worker (no i_protocol) that breaks the protocol in the mode given by argv[1].

It answers the first request of a process according to its mode and every later one
correctly, so a test can tell a fresh worker from a reused one by its pid.
"""

from __future__ import annotations

import json
import os
import sys
import time

mode = sys.argv[1]
out = sys.stdout.buffer
marker_dir = os.environ.get("I_RUNTIME_DIR", "/tmp")
if mode == "banner" and not os.path.exists(os.path.join(marker_dir, "faulty-banner.done")):
    open(os.path.join(marker_dir, "faulty-banner.done"), "w").close()
    out.write(b"FaultyWorker 1.0 ready\n")
    out.flush()
count = 0
for raw in sys.stdin.buffer:
    request = json.loads(raw)
    rid = request["id"]
    count += 1
    first = not os.path.exists(os.path.join(marker_dir, f"faulty-{mode}.done"))
    data = dict(request["data"], pid=os.getpid())
    if first and mode != "banner":
        open(os.path.join(marker_dir, f"faulty-{mode}.done"), "w").close()
        if mode == "hang":
            time.sleep(3600)
        elif mode == "exit_mid":
            out.write(b'{"id":%d,"data":{"half' % rid)
            out.flush()
            os._exit(7)
        elif mode == "wrong_id":
            out.write(json.dumps({"id": rid + 1, "data": data}).encode() + b"\n")
        elif mode == "list_data":
            out.write(json.dumps({"id": rid, "data": ["not", "an", "object"]}).encode() + b"\n")
        elif mode == "huge":
            out.write(b'{"id":%d,"data":{"x":"' % rid)
            for _ in range(49):
                out.write(b"y" * (1 << 20))
            out.write(b'"}}\n')
        elif mode == "stderr_flood":
            for _ in range(200):
                os.write(2, b"E" * 65536)
            out.write(json.dumps({"id": rid, "data": data}).encode() + b"\n")
        out.flush()
        continue
    out.write(json.dumps({"id": rid, "data": data}).encode() + b"\n")
    out.flush()
