"""The tool-call pipeline: one batch of the model's tool calls to their results.

Per call: ``before_tool`` (may rename or rewrite the raw arguments) -> parse the arguments ->
built-in or external tool -> the approval gate -> run -> ``after_tool``. Every failure becomes a
tool error the model reads; nothing here ends the turn. Per batch: outputs are cut to the
budget's per-call allowance (which each built-in call is told, ``ToolContext.output_bytes``, so
``recall`` can answer in parts that are never cut), and images go into one user-role message after
the results.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from i_protocol.history import is_image_part

from .approval import ApprovalGate
from .budget import Budget, tool_output_limit, truncate_utf8
from .errors import HookResultError, ToolError, WorkerFailure
from .hooks import HookRunner
from .manifest import Manifest
from .tools import BUILTIN_NAMES, FREE_TOOLS, MAX_IMAGES_PER_BATCH, execute, prepare, tool_images

DEFAULT_TOOL_OUTPUT_BYTES = 50_000


@dataclass
class CallResult:
    """What one call produced: its text, its images (unchecked yet), and whether it failed."""

    output: str
    images: list[Any] = field(default_factory=list)
    is_error: bool = False


@dataclass
class ToolCallCounts:
    """The tool calls of a run, each list in call order: the one definition the summary, ``--json``
    and every report read.

    ``asked``: every call the model asked for. ``run``: the calls that ran (a tool was executed,
    whatever its result). ``refused``: the calls the approval gate refused (denied, declined, or no
    one to ask). The rest of ``asked`` never reached the gate: bad arguments, an unknown tool, a
    ``before_tool`` failure.
    """

    asked: list[str] = field(default_factory=list)
    run: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, int]:
        """``{"asked", "run", "refused"}`` counts."""
        return {"asked": len(self.asked), "run": len(self.run), "refused": len(self.refused)}


@dataclass
class ToolPipeline:
    """Runs tool-call batches with what they need: hooks, tools, the gate, the budget."""

    hooks: HookRunner
    manifest: Manifest
    context: Any
    """The built-in tools' ``ToolContext`` (workspace, environment)."""
    schemas: list[dict[str, Any]]
    gate: ApprovalGate
    budget: Budget
    yolo: bool = False
    progress: Callable[[str], None] = lambda _message: None
    notice: Callable[[str], None] = lambda _message: None
    """A line a hook asked to show the user before a call runs (``before_tool``'s ``notice``)."""
    turn: dict[str, Any] = field(default_factory=dict)
    """``{"session", "turn"}`` of the calls being run: what a worker that declared ``turn_context`` gets."""
    counts: ToolCallCounts = field(default_factory=ToolCallCounts)
    """The run's tool calls, asked / run / refused (for the run's summary)."""
    events: Callable[[str, dict[str, Any]], None] | None = None
    """Told of each ``tool_call``, ``approval`` and ``tool_result`` (the event stream), by call id; an
    allowed built-in call's approval carries its prepared call as ``_prepared`` (for a diff of it)."""

    def run_batch(self, working: list[dict[str, Any]], calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The messages that answer ``calls``: one tool result per call, then any image message.

        Only checked image_url parts, rebuilt to hold nothing but their URL, enter the image
        message; anything else makes that call's result a tool error (its text kept) and the rest
        of the batch stands.
        """
        check = self.budget.check(working, self.schemas, pending_tool_calls=len(calls), compact=False)
        limit = tool_output_limit(check, DEFAULT_TOOL_OUTPUT_BYTES)
        results: list[dict[str, Any]] = []
        images: list[dict[str, Any]] = []
        for call in calls:
            result = self.run_call(call, limit)
            output = truncate_utf8(result.output, limit)
            parts: list[dict[str, Any]] = []
            problem = None
            if result.images:
                try:
                    parts = tool_images(result.images)
                except ToolError as exc:
                    problem = str(exc)
                attached = sum(1 for part in images if is_image_part(part))
                if attached + len(parts) > MAX_IMAGES_PER_BATCH:
                    problem = (
                        f"{len(parts)} images, over the limit of {MAX_IMAGES_PER_BATCH} per batch "
                        f"({attached} already attached); they were dropped"
                    )
                    parts = []
            if problem is not None:
                output += (
                    f"\n\nerror: tool {call['function']['name']} returned {problem}; its text output is kept above"
                )
            results.append(tool_message(call["id"], output, result.is_error or problem is not None))
            if self.events is not None:
                self._result_event(call, results[-1], len(parts))
            if parts:
                images.append({"type": "text", "text": f"Images returned by tool call {call['id']}:"})
                images.extend(parts)
        if images:
            results.append({"role": "user", "content": images})
        return results

    def run_call(self, call: dict[str, Any], output_bytes: int | None = None) -> CallResult:
        """One tool call to its result; every failure becomes a tool error for the model.

        ``output_bytes``: the call's tool-output budget, which a built-in tool may plan for (``recall``).
        """
        name = call["function"]["name"]
        self.counts.asked.append(name)
        if self.events is not None:
            self.events("tool_call", {"id": call["id"], "name": name, "arguments": call["function"]["arguments"]})
        try:
            return self._after(call, *self._run(call, output_bytes))
        except (ToolError, WorkerFailure) as exc:
            return self._after(call, name, CallResult(f"error: {exc}", is_error=True))

    def _run(self, call: dict[str, Any], output_bytes: int | None) -> tuple[str, CallResult]:
        name, raw = call["function"]["name"], call["function"]["arguments"]
        name, raw = self._tool_hook("before_tool", {"name": name, "arguments": raw, "id": call["id"]})
        try:
            arguments = orjson.loads(raw) if raw.strip() else {}
        except orjson.JSONDecodeError as exc:
            return name, _error(f"arguments of {name} are not valid JSON: {exc}")
        if not isinstance(arguments, dict):
            return name, _error(f"arguments of {name} must be a JSON object")
        builtin = name in BUILTIN_NAMES
        if not builtin and self.manifest.tool(name) is None:
            known = ", ".join(schema["name"] for schema in self.schemas)
            return name, _error(f"unknown tool {name!r}; available tools: {known}")
        prepared = prepare(name, arguments, self.context) if builtin else None
        summary = getattr(prepared, "summary", None) or f"{name} {raw}"  # whole: the prompt cuts and says so
        default = "allow" if (builtin and name in FREE_TOOLS) or self.yolo else "ask"
        refusal = self.gate.decide(name, arguments, not builtin, default, summary, prepared)
        if self.events is not None:
            self._approval_event(call["id"], name, default, refusal, prepared)
        if refusal is not None:
            self.counts.refused.append(name)
            return name, CallResult(refusal, is_error=True)
        self.counts.run.append(name)
        self.progress(f"running {name}")
        if prepared is not None:
            context = self.context if output_bytes is None else replace(self.context, output_bytes=output_bytes)
            if self.gate.sandbox is not None:
                context = replace(context, sandbox=self.gate.sandbox)
            done = execute(prepared, context)
            return name, CallResult(done.output, list(done.images), done.is_error)
        answer = self.hooks.tool(name, arguments)  # its images are checked (image parts only) by run_batch
        return name, CallResult(answer.output, answer.images, answer.is_error)

    def _tool_hook(self, event: str, data: dict[str, Any]) -> Any:
        """``before_tool`` / ``after_tool``: with the turn's session and turn for ``turn_context``
        workers when a turn is running (each ``notice`` shown to the user at once)."""
        if not self.turn:
            return self.hooks.checked(event, data)
        result, notices = self.hooks.checked_with(event, data, "turn_context", self.turn)
        for line in notices:
            self.notice(line)
        return result

    def _approval_event(self, call_id: str, name: str, default: str, refusal: str | None, prepared: Any) -> None:
        assert self.events is not None
        decision = "allow" if refusal is None else "deny"
        event = {"id": call_id, "name": name, "asked": default == "ask", "decision": decision, "reason": refusal}
        if refusal is None and prepared is not None:
            event["_prepared"] = prepared
        self.events("approval", event)

    def _result_event(self, call: dict[str, Any], message: dict[str, Any], images: int) -> None:
        assert self.events is not None
        event: dict[str, Any] = {
            "id": call["id"],
            "name": call["function"]["name"],
            "output": message["content"],
            "is_error": bool(message.get("_is_error")),
            "images": images,
        }
        self.events("tool_result", event)

    def _after(self, call: dict[str, Any], name: str, result: CallResult) -> CallResult:
        sent = {"name": name, "id": call["id"], "output": result.output, "images": result.images}
        try:
            changed = self._tool_hook("after_tool", {**sent, "is_error": result.is_error})
        except HookResultError as exc:
            return _error(str(exc))
        return CallResult(changed.output, changed.images, result.is_error)


ERROR_MARKER = "error: "
"""How a failed call's text starts on every wire (Anthropic also gets ``tool_result.is_error``)."""


def tool_message(call_id: str, output: str, is_error: bool) -> dict[str, Any]:
    """The history's tool message; a failed call is marked ``_is_error: true`` and its text has a line
    starting with ``error: `` (the marker of built-in errors; added in front when none has it), so
    wires without an error flag carry the failure too."""
    if not is_error:
        return {"role": "tool", "tool_call_id": call_id, "content": output}
    if not any(line.startswith(ERROR_MARKER) for line in output.splitlines()):
        output = ERROR_MARKER + output
    return {"role": "tool", "tool_call_id": call_id, "content": output, "_is_error": True}


def _error(text: str) -> CallResult:
    return CallResult(f"{ERROR_MARKER}{text}", is_error=True)
