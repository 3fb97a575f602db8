"""The ``hello`` handshake (SPEC §3.4) and the one registry of extension names.

At a worker process's first exchange the host may send ``hello`` naming itself and the extensions
it understands::

    {"id":1,"event":"hello","data":{"package":"i-core","version":"0.3.2","protocol":"1","extensions":["problems", …]}}

A worker that knows the handshake answers who it is and the extensions it uses::

    {"id":1,"data":{"package":"i-worker-budget","version":"0.2.3","protocol":"1","library":"0.2.4",
                    "extensions":["cut_estimates","rejection","tool_output_budget"]}}

A worker that returns the data unchanged (the rule for any unknown event, so every worker written
before the handshake) is *unknown*: protocol 1, no extensions, never refused for that. The host
refuses only a declared protocol it does not speak, or a version its compatibility table marks
incompatible. Extensions are negotiated by name (``EXTENSIONS``); the protocol number changes
only with a frame rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .__about__ import PROTOCOL_VERSION

HELLO_EVENT = "hello"

EXTENSIONS: dict[str, str] = {
    # SPEC §3.4, each optional for a third-party worker.
    "previous_attempt": "compact_plan receives {cut, reason} when its candidate did not fit",
    "chunks": "before_compact may return chunks [{prompt, messages}, …] instead of one prompt",
    "after_compact_rounds": "after_compact may return one further prepared request instead of a summary",
    "after_compact_commit": "after_compact_commit {committed, reason, cut, comparable_before, comparable_after}",
    "rejection": "context_budget receives rejection {input_tokens?, limit?} after a too-long refusal",
    "tools_list": "tools_list announces tool schemas found at run time (MCP)",
    "provider_request": "one complete model exchange through a bound provider worker",
    "progress": "progress frames before the answer of a request that sets progress: true",
    "config_kind": 'error frames may carry "kind": "config"',
    "focus": "compact_plan and before_compact carry focus (/compact FOCUS); focus_used in the answer",
    "summary_request_overhead": "before_compact carries summary_request_overhead {bytes, tokens}",
    "prepared": "compact_plan may carry prepared {cut, summary_ref}",
    "problems": "tools_list answers may carry problems [{server, reason, stderr_tail}]",
    "turn_context": "before_tool and after_tool carry session and turn",
    "undo": "the undo event {session, turn, dry_run}",
    "exact_count": "a request's exact token count measured by the model's server anchors the budget",
    # Beyond the seeds: what our own workers exchange.
    "cut_estimates": "the budget answer carries cut_estimates, one comparable estimate per candidate cut",
    "tool_output_budget": "the budget answer carries per-call tool-output budgets",
    "plan_mode": "tool_approval carries plan: true while the session is in plan mode",
    "sandbox": "a shell call's tool_approval answer may carry sandbox {mode, network}, which the core applies",
}
"""Every extension name, with what it adds. A name not here is no extension."""


@dataclass(frozen=True)
class Hello:
    """What a worker said about itself; ``known`` is False for a worker silent to ``hello``."""

    package: str | None = None
    version: str | None = None
    protocol: str = PROTOCOL_VERSION
    library: str | None = None
    extensions: frozenset[str] = frozenset()
    known: bool = False

    def as_json(self) -> dict[str, Any]:
        """The plain-JSON form (what the host keeps between runs)."""
        return {
            "package": self.package,
            "version": self.version,
            "protocol": self.protocol,
            "library": self.library,
            "extensions": sorted(self.extensions),
            "known": self.known,
        }


UNKNOWN = Hello()
"""A worker silent to ``hello``: protocol 1, no extensions."""


def hello_request(package: str, version: str, extensions: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """The ``hello`` data a host sends, naming itself and the extensions it understands."""
    unknown = sorted(set(extensions) - set(EXTENSIONS))
    if unknown:
        raise ValueError(f"not registered extension names: {', '.join(unknown)}")
    return {"package": package, "version": version, "protocol": PROTOCOL_VERSION, "extensions": sorted(extensions)}


def hello_answer(package: str, version: str, library: str, extensions: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """The ``hello`` answer of a worker."""
    unknown = sorted(set(extensions) - set(EXTENSIONS))
    if unknown:
        raise ValueError(f"not registered extension names: {', '.join(unknown)}")
    return {
        "package": package,
        "version": version,
        "protocol": PROTOCOL_VERSION,
        "library": library,
        "extensions": sorted(set(extensions)),
    }


def parse_hello(answer: Any, sent: dict[str, Any] | None = None) -> Hello:
    """The ``Hello`` of a worker's answer to ``sent``: ``UNKNOWN`` for the data returned unchanged
    (or for anything that is no hello answer: the host never refuses a worker for being silent).

    A declared ``protocol`` is kept whatever it is, so the host can refuse one it does not speak.
    """
    if not isinstance(answer, dict) or answer == sent or "library" not in answer:
        return _declared_protocol(answer, sent)
    package, version, library = answer.get("package"), answer.get("version"), answer.get("library")
    protocol, extensions = answer.get("protocol"), answer.get("extensions", [])
    if not isinstance(extensions, list) or not all(isinstance(name, str) for name in extensions):
        extensions = []
    return Hello(
        package if isinstance(package, str) and package else None,
        version if isinstance(version, str) and version else None,
        _protocol_text(protocol) or PROTOCOL_VERSION,
        library if isinstance(library, str) and library else None,
        frozenset(name for name in extensions if name in EXTENSIONS),
        True,
    )


def _declared_protocol(answer: Any, sent: dict[str, Any] | None) -> Hello:
    """A changed answer without ``library`` that still declares another protocol is not silent about it."""
    if not isinstance(answer, dict) or sent is None or answer == sent:
        return UNKNOWN
    protocol = _protocol_text(answer.get("protocol"))
    if protocol is None or protocol == _protocol_text(sent.get("protocol")):
        return UNKNOWN
    package, version = answer.get("package"), answer.get("version")
    named = isinstance(package, str) and package != sent.get("package")
    return Hello(
        package if named else None,
        version if named and isinstance(version, str) else None,
        protocol,
        known=True,
    )


def _protocol_text(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def speaks(hello: Hello) -> bool:
    """True when the worker speaks this library's wire protocol."""
    return hello.protocol == PROTOCOL_VERSION
