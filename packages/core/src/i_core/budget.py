"""The core's side of budgeting: ask the ``context_budget`` hook, keep the usage anchor.

The core has no capacity table and no estimator of its own: with no budget worker installed
there is no budget check (the model's own limit applies). The usage anchor — the last valid
usage, the model and the history prefix it covered — is kept in the session metadata.

A reported count is checked before it is stored, so every budget worker sees only plausible
anchors (``implausible``): a request's input cannot cost more tokens than its wire bytes (history
and tool schemas: a token covers at least one byte) plus its planned image tokens plus
``MARGIN_TOKENS`` (template tokens the bytes do not show), nor more than ``WINDOW_FACTOR`` times
the context window; an answer's output cannot exceed ``WINDOW_FACTOR`` times the larger of the
context window and ``max_tokens``. The anchor also records digests of the tool schemas and the
system message it covered (``tools_digest``, ``system_digest``) and is dropped when either
changes: a server that offered 20,000 tools made a legitimately huge anchor that must not outlive
it. An anchor already on disk is checked the same way at load and before every budget check
(``usable_anchor``), so a session poisoned before this check answers its next turn.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, Protocol

import orjson

from i_protocol import BudgetVerdict
from i_protocol.history import is_image_part, is_summary, wire_bytes

from .errors import BudgetExhausted
from .exact_count import ExactCounter, tools_fingerprint
from .hook_results import BudgetCheck
from .hooks import HookRunner
from .settings import ApiConfig
from .unplanned_images import leave_out

MARGIN_TOKENS = 4096
"""Tokens a request may cost beyond its wire bytes: chat templates, role markers, reply priming."""
WINDOW_FACTOR = 4
"""No server counts more than a few context windows for one request or answer."""


class CompactResult(Protocol):
    """What ``enforce`` reads of a compaction attempt (``compaction.Outcome`` has these)."""

    @property
    def committed(self) -> bool: ...
    @property
    def history(self) -> list[dict[str, Any]]: ...
    @property
    def after(self) -> BudgetCheck | None: ...
    @property
    def check(self) -> str | None: ...
    @property
    def reason(self) -> str: ...


Compact = Callable[[list[dict[str, Any]], "BudgetCheck", bool], CompactResult]
"""Runs one compaction attempt: ``compact(history, check, force)``; a committed outcome is applied."""


class Budget:
    """Calls ``context_budget`` with the policy of the API config and the current anchor."""

    def __init__(self, hooks: HookRunner, config: ApiConfig, meta: dict[str, Any]) -> None:
        self.hooks = hooks
        self.config = config
        self.meta = meta  # the session's metadata: the anchor lives there so it survives restarts
        scheme, netloc = config.origin
        self.origin = f"{scheme}://{netloc}"
        self.warn: Callable[[str], None] = lambda _message: None
        """Where a dropped anchor is said (stderr through the console), once per process."""
        self._warned = False
        self._fixed_checked = False
        self.counter: ExactCounter | None = None
        """Asks the server for exact counts (``budget.exact_count``), made at the first check that may."""

    @property
    def enabled(self) -> bool:
        """True when a budget worker is subscribed."""
        return self.hooks.has("context_budget")

    def check(
        self,
        history: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        pending_tool_calls: int = 0,
        compact: bool | None = None,
        force: bool = False,
        rejection: dict[str, int | None] | None = None,
        anchored: bool = True,
    ) -> BudgetCheck | None:
        """The budget worker's answer for ``history`` (None when no budget worker runs).

        ``compact`` tells the worker whether a compactor could act on its recommendation
        (default: whether one is installed); ``force`` that a compaction runs whatever it says;
        ``rejection`` that the model server refused exactly this history as too long (sent only to
        a budget that declared the ``rejection`` extension; any other still sees the forced check);
        ``anchored=False`` leaves the usage anchor out, so the history is measured the way a
        compaction candidate is (like with like, SPEC §3.5 step 6).
        """
        if not self.enabled:
            return None
        if compact is None:
            compact = self.hooks.has("compact_plan")
        history = leave_out(history, self.config.budget)[0]  # what the model would be sent
        data: dict[str, Any] = {
            "model": self.config.model,
            "protocol": self.config.protocol,
            "origin": self.origin,
            "budget": {key: value for key, value in self.config.budget.items() if key != "exact_count"},
            "max_tokens": self.config.max_tokens,
            "history": history,
            "tools": tools,
            "pending_tool_calls": pending_tool_calls,
            "compact": compact,
            "usage": self.usable_anchor(history, tools) if anchored else None,
            "cut": None,
        }
        exact = self._exact_count(history, tools)
        if exact is not None:
            data["exact_count"] = exact
        if force:
            data["force"] = True
        if rejection is not None and self.hooks.declared("context_budget", "rejection"):
            data["rejection"] = {key: value for key, value in rejection.items() if value is not None}
        check: BudgetCheck = self.hooks.checked("context_budget", data)
        return check

    def _exact_count(self, history: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The server's count of this request (``budget.exact_count: "tokenize"``), for a budget worker
        that declared the ``exact_count`` extension; checked for plausibility like any usage."""
        if self.config.budget.get("exact_count") != "tokenize":
            return None
        if self.counter is None:
            self.hooks.greet("context_budget")  # what it declared must be known before its first call
        if not self.hooks.declared("context_budget", "exact_count"):
            return None
        if self.counter is None:
            self.counter = ExactCounter(self.config, lambda message: self.warn(message))
        tokens = self.counter.count(history, tools)
        if tokens is None:
            return None
        problem = self.implausible({"input_tokens": tokens}, history, tools)
        if problem is not None:
            self._say(f"the model server counted {problem}; that count is impossible and is not used for the budget")
            return None
        return {
            "tokens": tokens,
            "origin": self.origin,
            "model": self.config.model,
            "tools_fingerprint": tools_fingerprint(tools),
        }

    def close(self) -> None:
        """Close the counting connection, if one was opened."""
        if self.counter is not None:
            self.counter.close()

    def enforce(
        self,
        working: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        compact: Compact,
        *,
        rejection: dict[str, int | None] | None = None,
        progress: Callable[[str], None] = lambda _message: None,
        where: str = "the session",
    ) -> tuple[list[dict[str, Any]], BudgetCheck | None]:
        """The history to send (compacted if needed) and the budget answer of exactly that request.

        ``rejection``: the server refused ``working`` as too long, so a compaction is forced.
        Raises ``BudgetExhausted`` when the request cannot fit and compaction did not help;
        ``where`` (the session file) is named in that message as unchanged.
        """
        check = self.check(working, tools, rejection=rejection)
        if check is None:
            return working, None
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
        self._say_fixed_cost(working, tools, check)
        if not has_cut(working):
            return self._nothing_to_compact(working, check, rejection, progress, where)
        outcome = compact(working, check, rejection is not None)
        if outcome.committed and outcome.after is not None:
            return outcome.history, outcome.after
        if verdict.fits and rejection is None:
            return working, check  # over the trigger but still fits: go on, the failure is on record
        unplanned = _unplanned_images(verdict)
        if verdict.provisional and rejection is None and outcome.check == "declined" and not unplanned:
            # Nothing of this model's density is known yet (the byte estimate is several times the
            # real count) and there is nothing to compact: let the server count. A refusal is
            # recovered (learned, compacted) once; a compaction that failed still fails the turn.
            progress("the budget has no usage of this model yet; the server counts this request")
            return working, check
        what = _what_does_not_fit(verdict, rejection)
        if outcome.check == "declined":
            hint = oversize_hint(working, verdict.capacity, where)
        else:
            hint = (
                f"The session on disk ({where}) is unchanged. `i --runtime compact` tries again; "
                '"mode": "local" in compact.json summarises without a model request.'
            )
        raise BudgetExhausted(f"{what}, and compaction did not help: {outcome.reason}. {hint}")

    def _nothing_to_compact(
        self,
        working: list[dict[str, Any]],
        check: BudgetCheck,
        rejection: dict[str, int | None] | None,
        progress: Callable[[str], None],
        where: str,
    ) -> tuple[list[dict[str, Any]], BudgetCheck | None]:
        """No cut can pass SPEC §3.5 step 3: nothing to compact yet, which is no compaction attempt."""
        verdict = check.verdict
        if verdict.fits and rejection is None:
            return working, check
        unplanned = _unplanned_images(verdict)
        if verdict.provisional and rejection is None and not unplanned:
            progress("the budget has no usage of this model yet; the server counts this request")
            return working, check
        what = _what_does_not_fit(verdict, rejection)
        hint = oversize_hint(working, verdict.capacity, where)
        raise BudgetExhausted(f"{what}, and there is nothing to compact yet. {hint}")

    def _say_fixed_cost(self, working: list[dict[str, Any]], tools: list[dict[str, Any]], check: BudgetCheck) -> None:
        """Once per process (the first time it is known): the line that says the system prompt, the
        tool schemas and the output reserve alone exceed the compaction trigger (no compaction can
        make room for a conversation)."""
        raw = check.verdict.raw
        trigger, reserve, window = raw.get("trigger"), raw.get("output_reserve"), raw.get("context_window")
        if self._fixed_checked or not working:
            return
        if not isinstance(trigger, int) or not isinstance(reserve, int) or not isinstance(window, int):
            return
        fixed = self.check(working[:1], tools, compact=False, anchored=False)
        if fixed is None or fixed.verdict.provisional:
            return  # a byte count of text never observed is several times the real one: no alarm on it
        self._fixed_checked = True
        tokens = fixed.verdict.estimate
        if tokens is None or tokens + reserve <= trigger:
            return
        self.warn(
            f"the system prompt and {len(tools)} tool schemas take {tokens} tokens and the output reserve {reserve}: "
            f"{tokens + reserve} tokens, over the compaction trigger {trigger} of the {window}-token window before "
            'any conversation, so compaction cannot make room; choose fewer tools ("profile": "small" in plugins.json) '
            "or a larger budget.context_window if the server allows it"
        )

    def record_usage(
        self,
        sent: BudgetCheck | None,
        usage: dict[str, Any] | None,
        history: list[dict[str, Any]] | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> None:
        """Anchor the next estimate on this response's usage, with the template of the request sent.

        ``sent`` is the budget answer of the request actually sent (``history`` with ``tools``);
        without it, or without valid and plausible usage, the old anchor is dropped so nothing
        stale or impossible is trusted.
        """
        template = sent.verdict.raw.get("anchor") if sent is not None else None
        valid = usage and all(
            isinstance(usage.get(k), int) and not isinstance(usage.get(k), bool)
            for k in ("input_tokens", "output_tokens")
        )
        if not isinstance(template, dict) or not valid:
            self.meta.pop("usage_anchor", None)
            return
        assert usage is not None
        anchor = {
            **template,
            "input_tokens": usage["input_tokens"],
            "output_tokens": usage["output_tokens"],
        }
        if history is not None:
            problem = self.implausible(anchor, history, tools or [])
            if problem is not None:
                self.meta.pop("usage_anchor", None)
                self._say(
                    f"the model server reported {problem}; that count is impossible and is not used for the budget"
                )
                return
            anchor["tools_digest"] = digest(tools or [])
            anchor["system_digest"] = digest(history[:1])
        self.meta["usage_anchor"] = anchor

    def usable_anchor(self, history: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The stored anchor when it still holds for ``history`` and ``tools``; else it is dropped.

        Dropped when the tool schemas or the system message changed since it was recorded, or when
        its counts are impossible for the prefix it covers (an anchor poisoned before the check).
        """
        anchor = self.meta.get("usage_anchor")
        if anchor is None:
            return None
        if not isinstance(anchor, dict):
            self.meta.pop("usage_anchor", None)
            return None
        changed = ("tools_digest" in anchor and anchor["tools_digest"] != digest(tools)) or (
            "system_digest" in anchor and anchor["system_digest"] != digest(history[:1])
        )
        if changed:  # nothing wrong was reported: the anchor covers another request than the next ones
            self.meta.pop("usage_anchor", None)
            return None
        if "tools_digest" in anchor and "system_digest" in anchor:
            return anchor  # checked when it was recorded, for these very tools and system message
        # An anchor an older core stored: checked once against what it covers, then stamped.
        problem: str | None = None
        prefix = anchor.get("prefix_messages")
        if isinstance(prefix, int) and not isinstance(prefix, bool) and 0 < prefix <= len(history):
            problem = self.implausible(anchor, history[:prefix], tools)
        if problem is not None:
            self.meta.pop("usage_anchor", None)
            self._say(f"the session's usage anchor holds {problem}; it was dropped")
            return None
        anchor.update(tools_digest=digest(tools), system_digest=digest(history[:1]))
        return anchor

    def implausible(
        self, usage: dict[str, Any], history: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> str | None:
        """Why ``usage`` cannot be the count of a request of ``history`` and ``tools`` (None: plausible)."""
        input_tokens, output_tokens = usage.get("input_tokens"), usage.get("output_tokens")
        window = self.config.budget.get("context_window")
        window = window if isinstance(window, int) and not isinstance(window, bool) and window > 0 else None
        if isinstance(input_tokens, int):
            request_bytes = sum(wire_bytes(message) for message in history) + wire_bytes(tools)
            bound = request_bytes + planned_image_tokens(history, self.config.budget) + MARGIN_TOKENS
            if input_tokens > bound:
                return f"{input_tokens} input tokens for a request of {request_bytes} bytes (at most {bound})"
            if window is not None and input_tokens > WINDOW_FACTOR * window:
                return f"{input_tokens} input tokens, over {WINDOW_FACTOR} x the context window {window}"
        if isinstance(output_tokens, int):
            limits = [value for value in (window, self.config.max_tokens) if isinstance(value, int) and value > 0]
            if limits and output_tokens > WINDOW_FACTOR * max(limits):
                return f"{output_tokens} output tokens, over {WINDOW_FACTOR} x {max(limits)}"
        return None

    def _say(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            self.warn(message)


def digest(value: Any) -> str:
    """A short digest of JSON-shaped ``value`` (tool schemas, the system message)."""
    try:
        raw = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        raw = repr(value).encode("utf-8", "surrogatepass")
    return hashlib.sha256(raw).hexdigest()[:32]


def planned_image_tokens(history: list[dict[str, Any]], budget: dict[str, Any]) -> int:
    """``budget.image_tokens`` for each image part in ``history`` (0 when no cost is planned)."""
    cost = budget.get("image_tokens")
    if not isinstance(cost, int) or isinstance(cost, bool) or cost <= 0:
        return 0
    count = sum(
        1
        for message in history
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if is_image_part(part)
    )
    return count * cost


def has_cut(history: list[dict[str, Any]]) -> bool:
    """True when some cut could pass SPEC §3.5 step 3: ``2 <= cut < len(history)`` on a user or
    assistant message. Without one there is nothing to compact yet, and no compactor is asked."""
    return any(message.get("role") in ("user", "assistant") for message in history[2:])


def oversize_hint(working: list[dict[str, Any]], capacity: int | None, where: str) -> str:
    """Which message makes the newest request too big, and how to continue."""
    newest = max(
        (
            index
            for index, message in enumerate(working)
            if message.get("role") == "user" and index > 0 and not is_summary(message)
        ),
        default=0,
    )
    sizes = [(wire_bytes(message), index) for index, message in enumerate(working[newest:], start=newest)]
    total = sum(size for size, _index in sizes)
    biggest, at = max(sizes) if sizes else (0, newest)
    room = f"the input capacity is {capacity} tokens" if capacity is not None else "the capacity is unknown"
    return (
        f"The newest request (history[{newest}:], {len(sizes)} message(s), {total} bytes) must stay whole; its "
        f"largest message is history[{at}] ({working[at].get('role')}, {biggest} bytes) and {room}. "
        f"The session on disk ({where}) is unchanged: send a shorter request, raise "
        "budget.context_window if the model allows more, or continue in a new session."
    )


def tool_output_limit(check: BudgetCheck | None, default_bytes: int) -> int:
    """UTF-8 bytes each pending tool call may return, from the budget answer (else the default)."""
    if check is None or check.verdict.per_call_bytes is None:
        return default_bytes
    return check.verdict.per_call_bytes


def truncate_utf8(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes at a character boundary, with a marker."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    kept = data[:limit].decode("utf-8", "ignore")
    cut = len(text) - len(kept)
    return kept + f"\n[... {cut} characters ({len(data) - limit} bytes) cut by the tool-output budget ...]"


def _unplanned_images(verdict: BudgetVerdict) -> Any:
    """The budget answer's ``images.unplanned`` (images it found no cost for), if any."""
    images = verdict.raw.get("images")
    return images.get("unplanned") if isinstance(images, dict) else None


def _what_does_not_fit(verdict: BudgetVerdict, rejection: dict[str, int | None] | None) -> str:
    """The first words of the failure: the server's refusal, or the budget's own verdict."""
    if rejection is not None:
        return "the model server refused the request as too long"
    return f"the next request does not fit the context budget ({verdict.explain()})"
