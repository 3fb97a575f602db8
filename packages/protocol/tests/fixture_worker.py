"""A worker used by the tests: real i_protocol serve loop plus misbehaviours selected by argv."""

from __future__ import annotations

import os
import sys
import time

from i_protocol import Worker, WorkerError

worker = Worker("fixture", "9.9.9", dist_name="i-fixture")


@worker.hook("before_turn")
def before_turn(data: dict, request) -> dict:
    data["turns"] = data.get("turns", 0) + 1
    return data


@worker.hook("context", extension=True)
def context(data: dict, request) -> dict:
    paths = request.paths
    data["paths"] = paths.as_dict()
    data["config"] = request.config().data
    data["config_path"] = request.config().path
    if request.workspace is not None:
        data["workspace_id"] = request.workspace_id()
    return data


@worker.hook("fail", extension=True)
def fail(data: dict, request) -> dict:
    raise WorkerError("this failure was expected")


@worker.hook("crash", extension=True)
def crash(data: dict, request) -> dict:
    raise ZeroDivisionError("boom")


@worker.hook("not_object", extension=True)
def not_object(data: dict, request):
    return [1, 2, 3]


@worker.hook("print", extension=True)
def noisy(data: dict, request) -> dict:
    print("a stray print that must not reach stdout")
    os.write(1, b"raw write to fd 1\n")
    return data


@worker.hook("progress", extension=True)
def progress(data: dict, request) -> dict:
    """``count`` progress frames ``every`` seconds apart, then the answer (late reports afterwards drop)."""
    sent = []
    for step in range(int(data.get("count", 3))):
        time.sleep(float(data.get("every", 0.0)))
        sent.append(request.report_progress(f"step {step + 1}", step + 1, data.get("count", 3)))
    time.sleep(float(data.get("then", 0.0)))
    return {"sent": sent, "wants": request.wants_progress}


@worker.hook("bad_settings", extension=True)
def bad_settings(data: dict, request) -> dict:
    from i_protocol.errors import SettingsError

    raise SettingsError("fixture.json: field x must be a number")


@worker.hook("sleep", extension=True)
def sleep(data: dict, request) -> dict:
    time.sleep(float(data.get("seconds", 60)))
    return data


@worker.hook("exit", extension=True)
def hard_exit(data: dict, request) -> dict:
    if data.get("stderr"):
        os.write(2, data["stderr"].encode())
    os._exit(3)


@worker.hook("complain_and_fail", extension=True)
def complain_and_fail(data: dict, request) -> dict:
    os.write(2, b"a note on stderr\n")
    raise WorkerError("budget.json: 'threshold' must be a number")


@worker.hook("big", extension=True)
def big(data: dict, request) -> dict:
    return {"blob": "x" * int(data["size"])}


@worker.hook("surrogate", extension=True)
def surrogate(data: dict, request) -> dict:
    return {"text": "bad \udcff"}


@worker.hook("strict", extension=True)
def strict(data: dict, request) -> dict:
    # What most JSON libraries do: refuse a lone surrogate. The host must never send one.
    import orjson

    orjson.dumps(data)
    return {"kept": data["messages"], "changed": data["messages"][0]["content"] + "!", "seen": ascii(data)}


@worker.tool("echo")
def echo(arguments: dict, request) -> str:
    return str(arguments.get("text", ""))


@worker.tool("image")
def image(arguments: dict, request) -> dict:
    return {
        "output": "see image",
        "images": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}],
    }


if __name__ == "__main__":
    sys.exit(worker.main())
