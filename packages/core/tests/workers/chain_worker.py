"""A well-behaved test worker: appends its label to data["trail"] and echoes its environment."""

from __future__ import annotations

import os
import sys
import time

from i_protocol import Worker

label = sys.argv[1] if len(sys.argv) > 1 else "w"
worker = Worker("chain", "0.0.1", dist_name=f"chain-{label}")


@worker.hook("*")
def every(data: dict, request) -> dict:
    if request.event == "before_turn" and data.get("sleep"):
        time.sleep(float(data["sleep"]))
    data.setdefault("trail", []).append(label)
    data["pid_" + label] = os.getpid()
    if data.get("want_env"):
        data["env_" + label] = dict(os.environ)
        data["cwd_" + label] = os.getcwd()
        data["context_" + label] = {k: v for k, v in request.frame.items() if k not in ("data",)}
    return data


@worker.tool("shout")
def shout(arguments: dict, request) -> str:
    return str(arguments.get("text", "")).upper() + "!"


if __name__ == "__main__":
    sys.exit(worker.main(sys.argv[2:]))
