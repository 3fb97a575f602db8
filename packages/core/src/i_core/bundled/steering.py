"""The bundled `steering` worker: lines typed while the model works, delivered at the next request.

Run as ``i --runtime worker steering --queue PATH``; the console injects it (whatever the profile)
and a binding in bindings.json (``"steering"``) replaces it, receiving the same appended
``--queue PATH``. The queue contract (also in packages/core/README.md):

- ``PATH`` is NDJSON the console appends to, one ``{"id": str, "text": str, "at": ISO-8601}`` per
  queued input, each line written whole with one ``O_APPEND`` write. A last line without its
  newline is still being written and is ignored until it is complete; an unparsable line is skipped.
- ``before_turn`` (called before every model request, so after a whole tool batch, never inside
  one) returns ``append``: a user message ``{"role": "user", "content": text, "_steering": id}``
  for every queued entry that is neither acknowledged nor already in ``messages``.
- ``after_save`` appends the ids of the ``_steering`` messages that the saved history holds to
  ``PATH.ack`` (one id per line). Delivery is at least once: an entry is acknowledged only once
  a checkpoint holds it, so a crash or a cancelled turn delivers it again; the ``_steering`` ids
  in the history and in the ack file make a repeat harmless (deduplicated by id).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import orjson

from i_protocol import Request, Worker, WorkerError
from i_protocol.errors import FileError, FileTooLarge
from i_protocol.files import read_bytes, read_text

from ..__about__ import __version__

worker = Worker("steering", __version__, dist_name="i-core steering")

_queue: Path | None = None
MAX_QUEUE_BYTES = 16 * 1024 * 1024


def read_queue(path: Path) -> list[dict[str, str]]:
    """The complete, valid entries of a queue file (missing: none)."""
    try:
        raw = read_bytes(path, MAX_QUEUE_BYTES, what="the steering queue")
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise WorkerError(f"{path}: cannot read the steering queue: {exc.strerror or exc}") from None
    except FileTooLarge as exc:
        raise WorkerError(str(exc)) from exc
    entries = []
    complete = raw[: raw.rfind(b"\n") + 1]
    for line in complete.splitlines():
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if (
            isinstance(entry, dict)
            and isinstance(entry.get("id"), str)
            and entry["id"]
            and isinstance(entry.get("text"), str)
            and entry["text"].strip()
        ):
            entries.append({"id": entry["id"], "text": entry["text"], "at": str(entry.get("at", ""))})
    return entries


def read_acks(path: Path) -> set[str]:
    """The acknowledged ids (``PATH.ack``, one a line)."""
    try:
        text = read_text(ack_path(path), MAX_QUEUE_BYTES, what="the steering acknowledgements")
    except FileNotFoundError:
        return set()
    except OSError as exc:
        raise WorkerError(f"{ack_path(path)}: cannot read the steering acknowledgements: {exc}") from None
    except FileError as exc:
        raise WorkerError(str(exc)) from None
    return {line.strip() for line in text.splitlines() if line.strip()}


def ack_path(path: Path) -> Path:
    """``PATH.ack`` beside the queue."""
    return path.with_name(path.name + ".ack")


def _ids_in(messages: object) -> set[str]:
    if not isinstance(messages, list):
        return set()
    return {m["_steering"] for m in messages if isinstance(m, dict) and isinstance(m.get("_steering"), str)}


def _require_queue() -> Path:
    if _queue is None:
        raise WorkerError("steering: no --queue PATH was given")
    return _queue


@worker.hook("before_turn")
def before_turn(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Append every pending queued input as a user message (after any earlier hook's append)."""
    queue = _require_queue()
    done = read_acks(queue) | _ids_in(data.get("messages"))
    append = list(data.get("append") or [])
    done |= _ids_in(append)
    for entry in read_queue(queue):
        if entry["id"] not in done:
            done.add(entry["id"])
            append.append({"role": "user", "content": entry["text"], "_steering": entry["id"]})
    if append:
        data["append"] = append
    return data


@worker.hook("after_save")
def after_save(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Acknowledge the queued inputs the saved history now holds."""
    queue = _require_queue()
    new = sorted(_ids_in(data.get("messages")) - read_acks(queue))
    if new:
        try:
            fd = os.open(ack_path(queue), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, "".join(f"{ident}\n" for ident in new).encode("utf-8"))
            finally:
                os.close(fd)
        except OSError as exc:
            raise WorkerError(f"{ack_path(queue)}: cannot write the acknowledgement: {exc.strerror or exc}") from None
    return data


def main(argv: list[str]) -> int:
    """``--queue PATH`` (required, taken out), the rest as for every worker (--version, --config)."""
    global _queue
    args = list(argv)
    if "--queue" in args:
        index = args.index("--queue")
        if index + 1 >= len(args):
            print("i-core steering: --queue needs a PATH", file=sys.stderr)
            return 2
        _queue = Path(args[index + 1]).absolute()
        del args[index : index + 2]
    elif not any(a in ("--version", "-h", "--help") for a in args):
        print("i-core steering: usage: i --runtime worker steering --queue PATH", file=sys.stderr)
        return 2
    return worker.main(args)
