"""``--output-format stream-json``: the run as events on stdout, one JSON object per line, flushed.

The schema is ``i-stream/1`` (``packages/core/docs/stream-json.schema.json``, described in
``docs/stream-json.md``). The first event names it; consumers ignore event types and fields they do
not know: an additive change keeps the number, a removal or a changed meaning bumps it. Logs,
progress and the summary stay on stderr. Strings with undecodable bytes (lone surrogates) are
written as ``i_protocol.jsonsafe`` writes them (``\\udcXX`` escapes); error and warning text is
scrubbed of secrets (``redaction``) like every failure line.

Events: ``start`` (schema, version), ``session``, ``request`` (the user's words starting a turn),
``model_request``, ``delta`` (streamed answer text), ``assistant`` (a whole reply), ``tool_call``,
``approval``, ``tool_result`` (with ``diff`` for ``write`` and ``edit``), ``compaction``, ``usage``,
``warning``, ``turn_end``, ``error`` and ``final`` (with the exit code), the last event of a run.
``id`` ties a tool call to its approval and its result.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

from i_protocol.jsonsafe import dumps_safe

from .__about__ import __version__
from .diffs import change_diff
from .redaction import Redactor
from .screen import answer_turn

if TYPE_CHECKING:
    from .agent import Agent
    from .providers import ModelReply
    from .screen import Screen

SCHEMA = "i-stream/1"
MAX_DIFF_LINES = 2000


class EventStream:
    """Writes the events of a run; also the agent's ``out`` (``delta``) and a ``ReplyObserver`` of its
    model client (``model_request``, ``assistant``, ``usage``)."""

    def __init__(self, out: IO[bytes] | None = None, redactor: Redactor | None = None) -> None:
        self.out = out if out is not None else sys.stdout.buffer
        self.redactor = redactor if redactor is not None else Redactor()
        self.lock = threading.Lock()
        self.requests = 0
        self.total: dict[str, int] = {}
        self.last_reply: ModelReply | None = None
        self.closed = False
        self.session: str | None = None
        self.diffs: dict[str, str] = {}
        self.answer: str | None = None

    def emit(self, kind: str, **fields: Any) -> None:
        """One event line, flushed (nothing after ``final``)."""
        with self.lock:
            if self.closed:
                return
            self.out.write(dumps_safe({"type": kind, **fields}) + b"\n")
            self.out.flush()
            self.closed = kind == "final"

    def start(self) -> None:
        """The first event: the schema's name and the core's version."""
        self.emit("start", schema=SCHEMA, version=__version__)

    def event(self, kind: str, data: dict[str, Any]) -> None:
        """An event the agent reports (``AgentOptions.events``); an allowed ``write`` or ``edit``
        gets its diff, taken before it runs, on its ``tool_result``."""
        data = dict(data)
        prepared = data.pop("_prepared", None)
        if prepared is not None:
            lines = change_diff(prepared, MAX_DIFF_LINES)
            if lines is not None:
                self.diffs[data["id"]] = "\n".join(lines)
        if kind == "tool_result":
            diff = self.diffs.pop(data["id"], None)
            if diff is not None and not data.get("is_error"):
                data["diff"] = diff
        self.emit(kind, **data)

    def warning(self, line: str) -> None:
        """A notice the user must see (``AgentOptions.notice``), secrets scrubbed."""
        self.emit("warning", message=self.redactor.scrub(line))

    def error(self, message: str, code: int) -> None:
        """What ended the run, secrets scrubbed."""
        self.emit("error", message=self.redactor.scrub(message), exit=code)

    # -- TextOut: streamed answer text ----------------------------------------------------------

    def write(self, text: str) -> int:
        """Streamed answer text as a ``delta``."""
        if text:
            self.emit("delta", text=text)
        return len(text)

    def flush(self) -> None:
        """Every event is flushed as it is written."""

    # -- ReplyObserver ----------------------------------------------------------------------------

    def request_started(self) -> None:
        """A model request is about to be sent."""
        self.requests += 1
        self.emit("model_request", n=self.requests)

    def reply_received(self, reply: ModelReply) -> None:
        """The reply as a whole (its text, the ids of its tool calls) and its usage."""
        self.last_reply = reply
        message = reply.message
        calls = message.get("tool_calls") or []
        text = message.get("content")
        self.emit(
            "assistant",
            text=text if isinstance(text, str) else None,
            tool_call_ids=[call.get("id") for call in calls if isinstance(call, dict)],
            finish_reason=reply.finish_reason,
        )
        usage = {k: v for k, v in (reply.usage or {}).items() if isinstance(v, int) and not isinstance(v, bool)}
        for key, value in usage.items():
            self.total[key] = self.total.get(key, 0) + value
        self.emit("usage", usage=usage if reply.usage is not None else None, total=dict(self.total))

    # -- the run ----------------------------------------------------------------------------------

    def opened(self, agent: Agent, *, continued: bool) -> None:
        """The session the run works in (after it was loaded or started)."""
        session = agent.session
        self.session = str(session.path)
        self.emit(
            "session",
            path=str(session.path),
            messages=len(agent.history),
            continued=continued and len(agent.history) > 1,
            model=agent.config.model,
            workspace=agent.runtime.workspace,
        )

    def turn(self, agent: Agent, text: str, screen: Screen, *, attached: Sequence[dict[str, Any]] = ()) -> str:
        """One turn: ``request`` (the user's words), its events, then ``turn_end`` with the answer."""
        self.emit("request", text=text)
        self.last_reply = None
        answer = answer_turn(agent, text, screen, show=False, attached=attached)
        reply = self.last_reply
        self.emit(
            "turn_end",
            answer=answer,
            truncated=reply is not None and reply.finish_reason == "length",
            refusal=reply is not None and bool(reply.meta.get("refusal")),
        )
        self.answer = answer
        return answer

    def end(self, code: int) -> None:
        """The last event: the exit code, the last answer, the session and the run's usage."""
        self.emit(
            "final",
            exit=code,
            answer=self.answer,
            session=self.session,
            usage={"requests": self.requests, **self.total},
        )
