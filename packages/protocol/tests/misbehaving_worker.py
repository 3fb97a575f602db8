"""Raw workers that break the protocol on purpose (no i_protocol), chosen by argv[1]."""

from __future__ import annotations

import json
import os
import sys
import time

mode = sys.argv[1]
out = sys.stdout.buffer
if mode == "banner":
    out.write(b"Worker v1 starting up!\n")
    out.flush()
if mode == "stderr_flood":
    # Far more than any sane limit, while still answering the request.
    chunk = b"e" * 65536
    for _ in range(160):
        os.write(2, chunk)
for raw in sys.stdin.buffer:
    request = json.loads(raw)
    rid = request["id"]
    if mode == "wrong_id":
        out.write(json.dumps({"id": rid + 7, "data": {}}).encode() + b"\n")
    elif mode == "list_data":
        out.write(json.dumps({"id": rid, "data": [1]}).encode() + b"\n")
    elif mode == "huge":
        out.write(b'{"id":%d,"data":{"x":"' % rid)
        block = b"y" * (1 << 20)
        for _ in range(49):
            out.write(block)
        out.write(b'"}}\n')
    elif mode == "hang":
        time.sleep(3600)
    elif mode == "exit_mid":
        out.write(b'{"id":%d,"da' % rid)
        out.flush()
        os._exit(1)
    elif mode == "surrogate_escape":
        # What Python's json.dumps writes for an undecodable file name: the escape \udce9, as ASCII.
        out.write(json.dumps({"id": rid, "data": {"name": "caf\udce9", "echo": request["data"]}}).encode() + b"\n")
    elif mode == "latin1_bytes":
        # A raw ISO-8859-1 byte inside the JSON: not UTF-8, so not a frame.
        out.write(b'{"id":%d,"data":{"name":"caf\xe9"}}\n' % rid)
    elif mode == "broken_json":
        out.write(b'{"id":%d,"data":{"name":}\n' % rid)
    elif mode == "exit_leaving_grandchild":
        import subprocess

        # The helper inherits stdout (and stdin, stderr) and outlives the worker: EOF never comes.
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        with open(os.environ["CHILD_PID_FILE"], "w") as handle:
            handle.write(str(child.pid))
        os._exit(int(request["data"].get("status", 3)))
    elif mode == "spawn_child_and_hang":
        import subprocess

        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        with open(os.environ["CHILD_PID_FILE"], "w") as handle:
            handle.write(str(child.pid))
        time.sleep(3600)
    else:
        out.write(json.dumps({"id": rid, "data": request["data"]}).encode() + b"\n")
    out.flush()
