"""What each event's hooks must answer, checked in one place: the table ``CHECKS``, whose checkers
are the parsers of ``i_protocol.events`` (the one owner of each event's types, which every producer
uses too) plus the core's own rules (tool names, the request origin, image parts it can read).

A checker takes a hook's answer and the data that hook was sent, and returns the typed result the
core reads back, or raises ``HookResultError`` whose message completes "worker W ..." (it starts
with the verb: "returned ..."). ``HookRunner.checked`` applies it to each hook's answer, so the
error names the hook that broke the contract. A field the answer leaves out keeps the value that
was sent ("unchanged"); a history the answer leaves untouched (the very object sent, as in the
pass-through of an event nobody handles) is not validated again.

Observers (``after_save``, ``finish``, ``request_retry``, ``after_response``,
``after_compact_commit``) answer nothing the core reads: their checker returns None.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from i_protocol import BudgetVerdict
from i_protocol.events import (
    DECISIONS,
    LIFECYCLE_EVENTS,
    MAX_CHUNKS,
    CompactPlan,
    EventError,
    PreparedSummary,
    RequestChange,
    Revision,
    SummaryRequest,
    ToolResult,
    TurnAdditions,
    parse_answer,
)

from .errors import HookResultError, ModelError

Checker = Callable[[dict[str, Any], dict[str, Any]], Any]

EXTENSION_FIELDS: Mapping[str, tuple[tuple[tuple[str, ...], str], ...]] = {
    "context_budget": (
        (("budget_result", "cut_estimates"), "cut_estimates"),
        (("budget_result", "tool_output_budget"), "tool_output_budget"),
    ),
    "before_compact": ((("chunks",), "chunks"), (("focus_used",), "focus"), (("extends",), "prepared")),
    "after_compact": ((("request",), "after_compact_rounds"),),
}
"""The optional answer fields beyond SPEC §3.5 and the seeds, each with the extension
(``i_protocol.handshake.EXTENSIONS``) that carries it. The core reads one only from a worker that
declared that extension in ``hello`` (``undeclared`` takes it off every other answer); without it
the event's SPEC contract applies: one summary request, a final summary, the latest cut."""


def undeclared(
    event: str, answer: dict[str, Any], declared: Callable[[str], bool]
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """``answer`` without the extension fields (``EXTENSION_FIELDS``) whose extension its worker did
    not declare, and the (field, extension) pairs taken off. ``answer`` itself is never changed."""
    dropped: list[tuple[str, str]] = []
    for path, extension in EXTENSION_FIELDS.get(event, ()):
        *parents, name = path
        holder: Any = answer
        for key in parents:
            holder = holder.get(key) if isinstance(holder, dict) else None
        if not isinstance(holder, dict) or name not in holder or declared(extension):
            continue
        answer = _without(answer, path)
        dropped.append((".".join(path), extension))
    return answer, dropped


def _without(value: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    head, *rest = path
    if not rest:
        return {key: item for key, item in value.items() if key != head}
    return {**value, head: _without(value[head], tuple(rest))}


# -- the typed results (``i_protocol.events``), with the core's own ---------------------------------


@dataclass(frozen=True, slots=True)
class BudgetCheck:
    """One ``context_budget`` answer: the full output (what ``compact_plan`` receives) and its verdict."""

    output: dict[str, Any]
    verdict: BudgetVerdict


def _parsed(event: str) -> Checker:
    """The checker that is ``i_protocol.events``' parser of ``event``, its ``EventError`` made the
    core's ``HookResultError`` (same sentence, same check)."""

    def check(answer: dict[str, Any], sent: dict[str, Any]) -> Any:
        try:
            return parse_answer(event, answer, sent)
        except EventError as exc:
            raise HookResultError(exc.detail, check=exc.check) from exc

    check.__name__ = f"_{event}"
    return check


# -- the core's rules beyond the event's shape ----------------------------------------------------


def _tools_list(answer: dict[str, Any], sent: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    """The announced tools' schemas, each name checked like a manifest tool's and never a built-in's."""
    from .manifest import TOOL_NAME
    from .tools import BUILTIN_NAMES

    schemas: dict[str, dict[str, Any]] = {}
    for index, tool in enumerate(_parsed("tools_list")(answer, sent)):
        name = tool["name"]
        if not TOOL_NAME.fullmatch(name):
            raise HookResultError(
                f"announced tools[{index}] with name {name!r}, not 1-64 characters of A-Z a-z 0-9 _ -"
            )
        if name in BUILTIN_NAMES:
            raise HookResultError(f"announced tool {name!r}, which would shadow the built-in tool of that name")
        if name in schemas:
            raise HookResultError(f"announced tool {name!r} twice")
        schemas[name] = dict(tool)
    return tuple(schemas.values())


def _context_budget(answer: dict[str, Any], sent: dict[str, Any]) -> BudgetCheck:
    verdict: BudgetVerdict = _parsed("context_budget")(answer, sent)
    # A budget provider can never pre-select a cut for the compactor.
    return BudgetCheck({**answer, "cut": None}, verdict)


def _before_compact(answer: dict[str, Any], sent: dict[str, Any]) -> PreparedSummary:
    from .tools import tool_images

    prepared: PreparedSummary = _parsed("before_compact")(answer, sent)
    if not prepared.retained_images:
        return prepared
    try:
        retained = tool_images(prepared.retained_images)
    except Exception as exc:  # ToolError: what is wrong with which image
        raise HookResultError(f"returned invalid retained_images: {exc}", check="invalid_candidate") from exc
    return replace(prepared, retained_images=retained)


def _before_request(answer: dict[str, Any], sent: dict[str, Any]) -> RequestChange:
    from .settings import origin_of

    url = answer.get("url", sent.get("url"))
    if not isinstance(url, str) or origin_of(url) != origin_of(sent["url"]):
        # Not a broken contract but a refused request: hooks may change the body, never the origin.
        raise ModelError(f"a before_request hook tried to change the request origin to {url!r}; refused")
    change: RequestChange = _parsed("before_request")(answer, sent)
    return change


class Decision(str):
    """A ``tool_approval`` decision (allow/ask/deny) and the ``sandbox`` its answer set for the call
    (extension ``sandbox``: ``{"mode": "workspace-write" | "read-only", "network": bool}``), else None."""

    sandbox: dict[str, Any] | None = None


SANDBOX_MODES = ("workspace-write", "read-only")


def _tool_approval(answer: dict[str, Any], sent: dict[str, Any]) -> Decision:
    result = Decision(_parsed("tool_approval")(answer, sent))
    sandbox = answer.get("sandbox")
    if sandbox is not None:
        # Never read loosely: a sandbox the core cannot apply as asked must not become no sandbox.
        if (
            not isinstance(sandbox, dict)
            or sandbox.get("mode") not in SANDBOX_MODES
            or not isinstance(sandbox.get("network", False), bool)
        ):
            raise HookResultError(
                f"answered sandbox {sandbox!r}, not {{mode: workspace-write | read-only, network: true | false}}"
            )
        result.sandbox = {"mode": sandbox["mode"], "network": sandbox.get("network", False)}
    return result


_OWN: Mapping[str, Checker] = {
    "tool_approval": _tool_approval,
    "tools_list": _tools_list,
    "context_budget": _context_budget,
    "before_compact": _before_compact,
    "before_request": _before_request,
}

CHECKS: Mapping[str, Checker] = {event: _OWN.get(event) or _parsed(event) for event in (*LIFECYCLE_EVENTS, "tool")}
"""Every lifecycle event (``events.EVENTS``) and the ``tool`` call, with its checker: the parser of
``i_protocol.events``, plus the core's own rules for five of them."""

__all__ = [
    "CHECKS",
    "DECISIONS",
    "EXTENSION_FIELDS",
    "MAX_CHUNKS",
    "BudgetCheck",
    "Checker",
    "CompactPlan",
    "Decision",
    "PreparedSummary",
    "RequestChange",
    "Revision",
    "SummaryRequest",
    "ToolResult",
    "TurnAdditions",
    "undeclared",
]
