"""The agent loop: user input -> (budget, compaction) -> model -> tools -> ... -> answer.

The core owns credentials, transport, retries, tool-call pairing, history validation and
checkpoints. A checkpoint is saved only at a complete state (a finished tool batch or a final
answer), so a failed turn leaves the last complete checkpoint on disk.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import orjson

from .budget import Budget, BudgetCheck, tool_output_limit, truncate_utf8
from .compaction import Compactor, Outcome
from .config import ApiConfig
from .errors import BudgetExhausted, ContextTooLong, CoreError, ModelError, SessionError, WorkerFailure
from .history import HistoryError, check_tool_calls, validate_history
from .model import ModelClient
from .runtime import Runtime
from .session import Session
from .snapshot import context_updates

DEFAULT_TOOL_OUTPUT_BYTES = 50_000
MAX_AGENT_STEPS = 200
_DECISIONS = ("allow", "ask", "deny")


@dataclass
class AgentOptions:
    """How the agent interacts: approvals, streaming, where text and progress go."""

    yolo: bool = False
    # The interactive approval prompt, called as ask(summary, preview): True/"y" runs the tool,
    # "a" runs it and allows it for the rest of the session, "d" denies it for the session,
    # anything else declines. None = non-interactive.
    ask: Callable[..., bool | str] | None = None
    preview: Callable[[Any], str | None] | None = None  # what the user sees of a prepared change (a diff)
    stream: bool | None = None
    out: TextIO = field(default_factory=lambda: sys.stdout)
    progress: Callable[[str], None] = lambda _message: None
    max_steps: int = MAX_AGENT_STEPS


@dataclass
class RunStats:
    """What a run did, for the summary line and the main job's report."""

    turns: int = 0
    model_requests: int = 0
    tool_calls: int = 0
    tools_used: list[str] = field(default_factory=list)
    compactions: int = 0
    compact_attempts: int = 0
    last_compaction: str = ""
    last_failure: str = ""
    """The last compaction attempt that failed or was declined, with the refusing component's reason."""
    rejections: int = 0
    """Requests the model server refused as too long (each recovered once, or the turn failed)."""
    last_budget: dict[str, Any] | None = None


class Agent:
    """One session's agent: a history, the runtime's hooks and tools, and the model client."""

    def __init__(self, runtime: Runtime, config: ApiConfig, session: Session, options: AgentOptions) -> None:
        from .tools import BUILTIN_SCHEMAS, ToolContext, normal_env

        self.runtime = runtime
        self.hooks = runtime.hooks
        self.config = config
        self.session = session
        self.options = options
        self.model = ModelClient(config, self.hooks, stream=options.stream)
        self.budget = Budget(self.hooks, config, session.meta)
        self.tool_context = ToolContext(workspace=Path(runtime.workspace), env=normal_env())
        self.tool_schemas: list[dict[str, Any]] = [*BUILTIN_SCHEMAS, *runtime.manifest.model_tools()]
        self.stats = RunStats()
        self.history: list[dict[str, Any]] = []
        self.session_rules: dict[str, str] = {}  # tool name -> "allow" | "deny", the user's "a" / "d"

    # -- session ------------------------------------------------------------------------

    def start(self) -> None:
        """Load the session (``session_load``) or start it with the system prompt (``system_prompt``)."""
        if self.session.is_new:
            prompt = self._system_prompt()
            self.history = [{"role": "system", "content": prompt}]
            return
        messages = self.session.messages
        try:
            validate_history(messages)
        except HistoryError as exc:
            raise SessionError(f"{self.session.path}: the saved history is invalid: {exc}") from None
        if self.hooks.has("session_load"):
            messages = self.hooks.run("session_load", {"messages": messages, "path": str(self.session.path)}).get(
                "messages", messages
            )
            self._check_hook_history("session_load", messages, "the session was not loaded")
        self.history = list(messages)

    def _check_hook_history(self, event: str, messages: object, consequence: str) -> None:
        """A history a hook returned must be valid; an invalid one names the hook (exit 6)."""
        try:
            validate_history(messages)
        except HistoryError as exc:
            labels = ", ".join(hook.module or hook.exec.argv[0] for hook in self.hooks.subscribers(event))
            raise WorkerFailure(f"{event} hook(s) {labels} returned an invalid history: {exc}; {consequence}") from None

    def _system_prompt(self) -> str:
        from .bundled.prompts import DEFAULT_SYSTEM_PROMPT

        prompt = DEFAULT_SYSTEM_PROMPT.replace("{{workspace}}", self.runtime.workspace)
        if self.hooks.has("system_prompt"):
            result = self.hooks.run("system_prompt", {"prompt": prompt, "workspace": self.runtime.workspace})
            prompt = result.get("prompt")
            if not isinstance(prompt, str) or not prompt.strip():
                raise WorkerFailure("system_prompt returned no non-empty prompt")
        return prompt

    def checkpoint(self, history: list[dict[str, Any]] | None = None) -> None:
        """Save a complete state through ``before_save`` / ``after_save`` (atomically)."""
        messages = self.history if history is None else history
        path = str(self.session.path)
        if self.hooks.has("before_save"):
            messages = self.hooks.run("before_save", {"messages": messages, "path": path}).get("messages", messages)
            self._check_hook_history("before_save", messages, "nothing was saved, the last checkpoint is unchanged")
        validate_history(messages)
        self.session.write(list(messages))
        if self.hooks.has("after_save"):
            self.hooks.run("after_save", {"messages": messages, "path": path})

    # -- a task ---------------------------------------------------------------------------

    def run(self, text: str | None) -> str:
        """Run one user request to its final answer; returns the answer text.

        ``None``: a turn with no input of its own, started from what ``before_turn`` appends (the
        console's queued steering input); nothing is sent when it appends nothing.
        """
        content: Any = text
        if text is not None and self.hooks.has("user_input"):
            content = self.hooks.run("user_input", {"content": text}).get("content", text)
            if not isinstance(content, str | list):
                raise WorkerFailure("user_input returned content that is neither text nor a list of parts")
        working = [*self.history, {"role": "user", "content": content}] if text is not None else list(self.history)
        self.stats.turns += 1
        for step in range(self.options.max_steps):
            working = self._before_turn(working)
            if text is None and step == 0 and not any("_steering" in m for m in working[len(self.history) :]):
                return ""
            working, sent = self._ensure_budget(working)
            working, sent, reply = self._request(working, sent)
            self.stats.model_requests += 1
            self.budget.record_usage(sent, reply.usage)
            message = reply.message
            calls = message.get("tool_calls")
            if not calls:
                if reply.finish_reason not in ("stop", "length"):
                    raise ModelError(f"the model stopped with finish reason {reply.finish_reason!r} and no answer")
                working.append(message)
                self.history = working
                self.checkpoint()
                if self.hooks.has("finish"):
                    self.hooks.run("finish", {"messages": self.history})
                return message.get("content") or ""
            try:
                check_tool_calls(calls, "model reply")
            except HistoryError as exc:
                raise ModelError(f"the model's tool calls are invalid: {exc}") from None
            if reply.finish_reason not in ("tool_calls", "stop"):
                raise ModelError(f"the model's tool-call reply was cut off (finish reason {reply.finish_reason!r})")
            working = [*working, message, *self._run_tools([*working, message], calls)]
            validate_history(working)
            self.history = working
            self.checkpoint()
        raise ModelError(f"stopped after {self.options.max_steps} model requests without a final answer")

    def _on_text(self, text: str) -> None:
        self.options.out.write(text)
        self.options.out.flush()

    def _before_turn(self, working: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not self.hooks.has("before_turn"):
            return working
        data = self.hooks.run("before_turn", {"messages": working, "workspace": self.runtime.workspace})
        injected = self.session.meta.get("context_state", {})
        appended, state = context_updates(data.get("context"), injected)
        self.session.meta["context_state"] = state
        appended = [*appended, *_steering_messages(data.get("append"))]
        return [*working, *appended] if appended else working

    def _request(
        self, working: list[dict[str, Any]], sent: BudgetCheck | None
    ) -> tuple[list[dict[str, Any]], BudgetCheck | None, Any]:
        """Send ``working``; a "context too long" refusal is recovered once (learn, compact, send anew)."""
        on_text = self._on_text if self.model.stream else None
        self.options.progress("model thinking")
        try:
            return working, sent, self.model.complete(working, self.tool_schemas, on_text=on_text)
        except ContextTooLong as exc:
            self.stats.rejections += 1
            if not self.budget.enabled:
                raise ModelError(f"{exc}; enable the budget and compact modules to recover from this") from None
            rejection = {"input_tokens": exc.input_tokens, "limit": exc.limit}
            working, sent = self._ensure_budget(working, rejection=rejection)
        self.options.progress("model thinking (after compaction)")
        try:
            return working, sent, self.model.complete(working, self.tool_schemas, on_text=on_text)
        except ContextTooLong as exc:
            self.stats.rejections += 1
            raise ModelError(
                f"the model server refused the request as too long again after compaction ({exc}); "
                f"the last checkpoint {self.session.path} is unchanged"
            ) from None

    def _ensure_budget(
        self, working: list[dict[str, Any]], *, rejection: dict[str, int | None] | None = None
    ) -> tuple[list[dict[str, Any]], BudgetCheck | None]:
        """The history to send (compacted if needed) and the budget answer of exactly that request."""
        check = self.budget.check(working, self.tool_schemas, rejection=rejection)
        if check is None:
            return working, None
        self.stats.last_budget = check.verdict.raw
        verdict = check.verdict
        if rejection is None and verdict.fits and not verdict.recommend_compact:
            return working, check
        if not self.hooks.has("compact_plan"):
            if verdict.fits and rejection is None:
                return working, check
            raise BudgetExhausted(
                f"the next request does not fit the context budget ({verdict.explain()}) and no compactor is "
                "installed (enable the compact module or start a new session)"
            )
        outcome = self.compact(working, check, force=rejection is not None)
        if outcome.committed and outcome.after is not None:
            self.stats.last_budget = outcome.after.verdict.raw
            return outcome.history, outcome.after
        if verdict.fits and rejection is None:
            return working, check  # over the trigger but still fits: go on, the failure is on record
        unplanned = (
            (verdict.raw.get("images") or {}).get("unplanned") if isinstance(verdict.raw.get("images"), dict) else None
        )
        if verdict.provisional and rejection is None and outcome.check == "declined" and not unplanned:
            # Nothing of this model's density is known yet (the byte estimate is several times the
            # real count) and there is nothing to compact: let the server count. A refusal is
            # recovered (learned, compacted) once; a compaction that failed still fails the turn.
            self.options.progress("the budget has no usage of this model yet; the server counts this request")
            return working, check
        what = (
            "the model server refused the request as too long"
            if rejection is not None
            else f"the next request does not fit the context budget ({verdict.explain()})"
        )
        if outcome.check == "declined":
            hint = self._oversize_hint(working, verdict.capacity)
        else:
            hint = (
                f"The session on disk ({self.session.path}) is unchanged. `i --runtime compact` tries again; "
                '"mode": "local" in compact.json summarises without a model request.'
            )
        raise BudgetExhausted(f"{what}, and compaction did not help: {outcome.reason}. {hint}")

    def compact(
        self, history: list[dict[str, Any]], check: BudgetCheck | None = None, *, force: bool = False
    ) -> Outcome:
        """One compaction attempt over ``history``; a committed one becomes the session's history."""
        compactor = Compactor(
            self.hooks,
            self.budget,
            self.model,
            self.config,
            self.runtime.workspace,
            self.tool_schemas,
            self.session.meta.get("context_state", {}),
            self.options.progress,
        )
        self.stats.compact_attempts += 1
        outcome = compactor.run(history, check, force=force)
        if outcome.committed:
            try:
                outcome.backup = str(self.session.write_backup("precompact", history))
                self.checkpoint(outcome.history)
            except (CoreError, HistoryError, OSError) as exc:
                outcome = outcome.refused("save_failed", f"the compacted history could not be saved: {exc}")
            else:
                self.history = outcome.history
                self.stats.compactions += 1
        warning = compactor.report(outcome)
        if warning:
            self.options.progress(warning)
        self.stats.last_compaction = outcome.reason
        if not outcome.committed:
            self.stats.last_failure = f"{outcome.check}: {outcome.reason}"
        return outcome

    def _oversize_hint(self, working: list[dict[str, Any]], capacity: int | None) -> str:
        """Which message makes the newest request too big, and how to continue."""
        newest = max(
            (
                index
                for index, message in enumerate(working)
                if message.get("role") == "user" and index > 0 and "_compaction" not in message
            ),
            default=0,
        )
        sizes = [(_size(message), index) for index, message in enumerate(working[newest:], start=newest)]
        total = sum(size for size, _index in sizes)
        biggest, where = max(sizes) if sizes else (0, newest)
        room = f"the input capacity is {capacity} tokens" if capacity is not None else "the capacity is unknown"
        return (
            f"The newest request (history[{newest}:], {len(sizes)} message(s), {total} bytes) must stay whole; its "
            f"largest message is history[{where}] ({working[where].get('role')}, {biggest} bytes) and {room}. "
            f"The session on disk ({self.session.path}) is unchanged: send a shorter request, raise "
            "budget.context_window if the model allows more, or continue in a new session."
        )

    # -- tools ----------------------------------------------------------------------------

    def _run_tools(self, working: list[dict[str, Any]], calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # Images go into a user-role message after the results: only checked image_url parts, rebuilt
        # to hold nothing but their URL, may enter it. Anything else makes that call's result a tool
        # error (its text kept); the rest of the batch stands.
        from .tools import MAX_IMAGES_PER_BATCH, ToolError, tool_images

        check = self.budget.check(working, self.tool_schemas, pending_tool_calls=len(calls), compact=False)
        limit = tool_output_limit(check, DEFAULT_TOOL_OUTPUT_BYTES)
        results: list[dict[str, Any]] = []
        images: list[dict[str, Any]] = []
        attached = 0
        for call in calls:
            output, call_images = self._run_tool(call)
            output = truncate_utf8(output, limit)
            parts: list[dict[str, Any]] = []
            problem = None
            if call_images:
                try:
                    parts = tool_images(call_images)
                except ToolError as exc:
                    problem = str(exc)
                if attached + len(parts) > MAX_IMAGES_PER_BATCH:
                    problem = (
                        f"{len(parts)} images, over the limit of {MAX_IMAGES_PER_BATCH} per batch "
                        f"({attached} already attached); they were dropped"
                    )
                    parts = []
            if problem is not None:
                name = call["function"]["name"]
                output += f"\n\nerror: tool {name} returned {problem}; its text output is kept above"
            results.append({"role": "tool", "tool_call_id": call["id"], "content": output})
            if parts:
                attached += len(parts)
                images.append({"type": "text", "text": f"Images returned by tool call {call['id']}:"})
                images.extend(parts)
        if images:
            results.append({"role": "user", "content": images})
        return results

    def _run_tool(self, call: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        """One tool call to (output text, images); every failure becomes a tool error for the model."""
        from .tools import BUILTIN_NAMES, FREE_TOOLS, ToolError, execute, prepare

        name = call["function"]["name"]
        raw_arguments = call["function"]["arguments"]
        self.stats.tool_calls += 1
        self.stats.tools_used.append(name)
        try:
            if self.hooks.has("before_tool"):
                changed = self.hooks.run("before_tool", {"name": name, "arguments": raw_arguments, "id": call["id"]})
                name, raw_arguments = changed.get("name", name), changed.get("arguments", raw_arguments)
                if not isinstance(name, str) or not isinstance(raw_arguments, str):
                    raise WorkerFailure("before_tool must return name and arguments as strings")
            try:
                arguments = orjson.loads(raw_arguments) if raw_arguments.strip() else {}
            except orjson.JSONDecodeError as exc:
                return self._after_tool(call, name, f"error: arguments of {name} are not valid JSON: {exc}", [], True)
            if not isinstance(arguments, dict):
                return self._after_tool(call, name, f"error: arguments of {name} must be a JSON object", [], True)
            builtin = name in BUILTIN_NAMES
            external = self.runtime.manifest.tool(name) is not None
            if not builtin and not external:
                known = ", ".join(schema["name"] for schema in self.tool_schemas)
                return self._after_tool(call, name, f"error: unknown tool {name!r}; available tools: {known}", [], True)
            prepared = prepare(name, arguments, self.tool_context) if builtin else None
            summary = getattr(prepared, "summary", None) or f"{name} {raw_arguments[:200]}"
            default = "allow" if (builtin and name in FREE_TOOLS) or self.options.yolo else "ask"
            refusal = self._approve(name, arguments, not builtin, default, summary, prepared)
            if refusal is not None:
                return self._after_tool(call, name, refusal, [], True)
            self.options.progress(f"running {name}")
            if prepared is not None:
                result = execute(prepared, self.tool_context)
                return self._after_tool(call, name, result.output, list(result.images), result.is_error)
            answer = self.hooks.call_tool(name, arguments)
            output = answer.get("output")
            if not isinstance(output, str):
                return self._after_tool(call, name, f"error: tool {name} returned no text output", [], True)
            images = answer.get("images")  # checked (and refused unless image parts) by _run_tools
            return self._after_tool(call, name, output, [] if images is None else images, False)
        except ToolError as exc:
            return self._after_tool(call, name, f"error: {exc}", [], True)
        except WorkerFailure as exc:
            return self._after_tool(call, name, f"error: {exc}", [], True)

    def _approve(
        self, name: str, arguments: dict[str, Any], external: bool, default: str, summary: str, prepared: Any = None
    ) -> str | None:
        """The approval gate; returns None to run, or the refusal the model gets.

        The user's "deny for this session" refuses at once; "allow for this session" only turns
        the core's proposal into allow: the ``tool_approval`` policy still has the last word.
        """
        rule = self.session_rules.get(name)
        if rule == "deny":
            return f"the user denied {name} for this session; it was not run"
        if rule == "allow" and default == "ask":
            default = "allow"
        decision = default
        if self.hooks.has("tool_approval"):
            try:
                answer = self.hooks.run(
                    "tool_approval", {"name": name, "arguments": arguments, "external": external, "decision": default}
                )
                decision = answer.get("decision")
            except WorkerFailure as exc:
                return f"denied: the approval policy failed ({exc}); nothing was run"
            if decision not in _DECISIONS:
                return (
                    f"denied: the approval policy answered {decision!r}, which is not allow/ask/deny; nothing was run"
                )
        if decision == "allow":
            return None
        if decision == "deny":
            return f"denied by the approval policy: {name} was not run"
        if self.options.ask is None:
            return (
                f"not run: {name} needs the user's approval and this run is non-interactive; the user can "
                "rerun with --yolo or allow the tool in approval.json"
            )
        detail = None
        if self.options.preview is not None and prepared is not None:
            detail = self.options.preview(prepared)
        reply = self.options.ask(summary, detail)
        if reply in ("a", "d"):
            self.session_rules[name] = "allow" if reply == "a" else "deny"
        if reply is True or reply in ("y", "a"):
            return None
        return f"the user declined {name}; it was not run"

    def _after_tool(
        self, call: dict[str, Any], name: str, output: str, images: list[dict[str, Any]], is_error: bool
    ) -> tuple[str, list[dict[str, Any]]]:
        if self.hooks.has("after_tool"):
            data = self.hooks.run(
                "after_tool", {"name": name, "id": call["id"], "output": output, "images": images, "is_error": is_error}
            )
            output = data.get("output", output)
            images = data.get("images", images) or []
            if not isinstance(output, str):
                output = "error: after_tool returned no text output"
                images = []
        return output, images

    def close(self) -> None:
        """Release the model client."""
        self.model.close()


def _size(message: dict[str, Any]) -> int:
    """Wire bytes of one message (a lone surrogate, kept losslessly in sessions, is measured too)."""
    try:
        return len(orjson.dumps(message))
    except TypeError:
        return len(repr(message).encode("utf-8", "surrogatepass"))


def _steering_messages(value: object) -> list[dict[str, Any]]:
    """``before_turn``'s ``append``: queued user input (the console's steering), as user messages.

    Only ``{"role": "user", "content": str, "_steering": id}`` is accepted, so a hook can add the
    user's words at a request boundary but never a tool result or an assistant turn.
    """
    if value is None:
        return []
    if not isinstance(value, list):
        raise WorkerFailure("before_turn returned append that is not a list of user messages")
    messages = []
    for item in value:
        if not (
            isinstance(item, dict)
            and item.get("role") == "user"
            and isinstance(item.get("content"), str)
            and item["content"].strip()
            and isinstance(item.get("_steering"), str)
        ):
            raise WorkerFailure("before_turn's append must hold user messages with text content and a _steering id")
        messages.append({"role": "user", "content": item["content"], "_steering": item["_steering"]})
    return messages
