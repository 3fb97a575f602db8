"""The framing checks every module must pass: the wire contract of SPEC §2, nothing module-specific.

One line per frame, flushed per frame, ids echoed, frames of exactly ``MAX_FRAME_BYTES`` accepted
and one byte more refused with an error frame, nothing but frames on stdout, unknown events
returned unchanged, error frames for bad input, start-up under 2 s; and the ``hello`` handshake
(SPEC §3.4): a worker silent to it passes, one that declares another protocol or names a release
this core cannot use (docs/compatibility.md) fails, as a session would refuse it.
"""

from __future__ import annotations

import time
from typing import Any

from i_protocol import MAX_FRAME_BYTES, CallError, ErrorFrame
from i_protocol.framing import encode_frame
from i_protocol.handshake import UNKNOWN, hello_request, parse_hello
from i_protocol.host import parse_response

from ..__about__ import __version__
from ..handshake import CORE_EXTENSIONS, Handshakes, expected_packages, refusal
from .probe import CALL_TIMEOUT_S, CheckFailed, Probe, Run

UNKNOWN_EVENT = "x_check_unknown_event"
"""An event no module handles (a future one): it must come back unchanged."""
STARTUP_LIMIT_S = 2.0
BIG_TIMEOUT_S = 30.0
_PAD_KEY = b"pad"


def _unknown_data() -> dict[str, Any]:
    return {"text": "héllo ☃ 日本語", "numbers": [0, -1, 2.5, 1e300], "flags": [True, False, None], "deep": {"a": {}}}


def startup(run: Run) -> str:
    """The first answer arrives within 2 s of starting the process."""
    with run.probe() as probe:
        probe.call(UNKNOWN_EVENT, {}, timeout=STARTUP_LIMIT_S + 3)
        elapsed = time.monotonic() - probe.started
    if elapsed > STARTUP_LIMIT_S:
        raise CheckFailed(f"first answer after {elapsed:.2f} s; a worker must answer within {STARTUP_LIMIT_S:g} s")
    return f"first answer after {elapsed * 1000:.0f} ms"


def flushed_lines(run: Run) -> str:
    """Three requests in a row, each answered (one line, flushed) before the next is written."""
    with run.probe() as probe:
        for _ in range(3):
            try:
                probe.call(UNKNOWN_EVENT, _unknown_data())
            except CallError as exc:
                if "deadline" in exc.problem:
                    raise CheckFailed(
                        f"no answer within {CALL_TIMEOUT_S:g} s: write each answer as one line and flush it at once"
                    ) from None
                raise
    return "3 answers, each one line, flushed"


def id_echo(run: Run) -> str:
    """The answer carries the request's id, whatever unsigned integer it is."""
    ids = (0, 7, 2**53 + 1, 2**64 - 1)
    with run.probe() as probe:
        for request_id in ids:
            probe.call(UNKNOWN_EVENT, {}, request_id=request_id)
    return "ids " + ", ".join(map(str, ids)) + " echoed"


def unknown_event(run: Run) -> str:
    """An event the worker does not handle comes back exactly as sent."""
    data = _unknown_data()
    with run.probe() as probe:
        answer = probe.call(UNKNOWN_EVENT, data)
    if answer != data:
        raise CheckFailed(f"event {UNKNOWN_EVENT!r} came back changed: {_diff(data, answer)}")
    return "returned unchanged"


def stdout_purity(run: Run) -> str:
    """Nothing but frames on stdout: before the first answer, between answers, after the last."""
    with run.probe() as probe:
        probe.call(UNKNOWN_EVENT, {"first": 1})
        time.sleep(0.2)  # a log line written after an answer is in the pipe before the next call
        probe.call(UNKNOWN_EVENT, {"second": 2})
        probe.call(UNKNOWN_EVENT, {"last": 3})
    return "every stdout line was the answer to its request"


def _padded_frame(request_id: int, size: int) -> tuple[bytes, int]:
    """A request frame of exactly ``size`` bytes (newline included), padded inside a string of data,
    and the length of that string. Built as bytes: encoding a dict would hold the padding twice."""
    head = b'{"id":%d,"event":"%s","data":{"%s":"' % (request_id, UNKNOWN_EVENT.encode(), _PAD_KEY)
    tail = b'"}}\n'
    pad = size - len(head) - len(tail)
    return b"".join((head, b"a" * pad, tail)), pad


def largest_frame(run: Run) -> str:
    """A request of exactly MAX_FRAME_BYTES is a frame like any other: answered with its data."""
    frame, pad = _padded_frame(1, MAX_FRAME_BYTES)
    with run.probe() as probe:
        line = probe.send(frame, timeout=BIG_TIMEOUT_S)
        del frame
        data = parse_response(line, 1)
        del line
    value = data.get(_PAD_KEY.decode())
    if not isinstance(value, str) or len(value) != pad:
        raise CheckFailed(f"a {MAX_FRAME_BYTES}-byte frame came back without its data unchanged")
    return f"{MAX_FRAME_BYTES}-byte frame answered"


def oversized_frame(run: Run) -> str:
    """A request of MAX_FRAME_BYTES + 1 is refused with an error frame for its id."""
    frame, _ = _padded_frame(2, MAX_FRAME_BYTES + 1)
    with run.probe() as probe:
        line = probe.send(frame, timeout=BIG_TIMEOUT_S)
        del frame
        try:
            parse_response(line, 2)
        except ErrorFrame:
            return f"{MAX_FRAME_BYTES + 1}-byte frame refused with an error frame"
    raise CheckFailed(f"a {MAX_FRAME_BYTES + 1}-byte frame was answered with data; it must be refused with an error")


def _expect_error(probe: Probe, frame: bytes, request_id: int, what: str) -> None:
    try:
        parse_response(probe.send(frame), request_id)
    except ErrorFrame:
        return
    raise CheckFailed(f"{what} was answered with data; it must get an error frame")


def bad_input(run: Run) -> str:
    """Non-object data and invalid JSON get error frames; the worker goes on serving."""
    with run.probe() as probe:
        _expect_error(probe, encode_frame({"id": 5, "event": UNKNOWN_EVENT, "data": [1, 2]}), 5, "data [1, 2]")
        _expect_error(probe, b'{"id":6,"event":"x","data":{"a":}}\n', 6, "a request that is not valid JSON")
        try:
            probe.call(UNKNOWN_EVENT, {"after": "errors"})
        except CallError as exc:
            raise CheckFailed(f"after two bad requests the worker stopped serving: {exc.problem}") from None
    return "error frames for non-object data and invalid JSON, then served on"


def handshake(run: Run) -> str:
    """``hello``: what the worker says it is, judged as a session judges it (``i_core.handshake``)."""
    sent = hello_request("i-core", __version__, CORE_EXTENSIONS)
    with run.probe() as probe:
        try:
            hello = parse_hello(probe.call("hello", sent), sent)
        except ErrorFrame:
            hello = UNKNOWN
    expected = expected_packages().get(run.module)
    if not hello.known and expected is not None:
        hello = Handshakes.from_version_line(run.target.argv, run.target.cwd, expected)
    problem = refusal(hello, run.module)
    if problem is not None:
        raise CheckFailed(problem)
    if not hello.known:
        named = f" ({hello.package} {hello.version} by --version)" if hello.version else ""
        return f"silent: unknown, protocol 1, no extensions{named}"
    extensions = ", ".join(sorted(hello.extensions)) or "none"
    return (
        f"{hello.package} {hello.version}, protocol {hello.protocol}, library {hello.library}; extensions: {extensions}"
    )


def _diff(sent: dict[str, Any], answer: dict[str, Any]) -> str:
    missing = sorted(set(sent) - set(answer))
    extra = sorted(set(answer) - set(sent))
    changed = sorted(k for k in set(sent) & set(answer) if sent[k] != answer[k])
    parts = [
        f"{label} {', '.join(keys)}"
        for label, keys in (("dropped", missing), ("added", extra), ("changed", changed))
        if keys
    ]
    return "; ".join(parts) or "different"


CHECKS = (
    ("start-up under 2 s", startup),
    ("one line per frame, flushed", flushed_lines),
    ("id echoed", id_echo),
    ("stdout carries only frames", stdout_purity),
    ("unknown event returned unchanged", unknown_event),
    ("error frames for bad input", bad_input),
    ("48 MiB frame accepted", largest_frame),
    ("48 MiB + 1 byte refused", oversized_frame),
    ("hello: a protocol and release this core can use", handshake),
)
"""The framing checks, in the order they are shown."""
