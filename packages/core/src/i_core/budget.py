"""The core's side of budgeting: ask the ``context_budget`` hook, keep the usage anchor.

The core has no capacity table and no estimator of its own: with no budget worker installed
there is no budget check (the model's own limit applies). The usage anchor — the last valid
usage, the model and the history prefix it covered — is kept in the session metadata.
"""

from __future__ import annotations

from typing import Any

from .config import ApiConfig
from .errors import WorkerFailure
from .hooks import HookRunner


class Budget:
    """Calls ``context_budget`` with the policy of the API config and the current anchor."""

    def __init__(self, hooks: HookRunner, config: ApiConfig, meta: dict[str, Any]) -> None:
        self.hooks = hooks
        self.config = config
        self.meta = meta  # the session's metadata: the anchor lives there so it survives restarts

    @property
    def enabled(self) -> bool:
        """True when a budget worker is subscribed."""
        return self.hooks.has("context_budget")

    def check(self, history: list[dict[str, Any]], tools: list[dict[str, Any]], *, pending_tool_calls: int = 0,
              compact: bool | None = None) -> dict[str, Any] | None:
        """The budget worker's full output for ``history`` (None when no budget worker runs).

        ``compact`` tells the worker whether a compactor could act on its recommendation
        (default: whether one is installed).
        """
        if not self.enabled:
            return None
        if compact is None:
            compact = self.hooks.has("compact_plan")
        data = {
            "model": self.config.model,
            "protocol": self.config.protocol,
            "budget": dict(self.config.budget),
            "max_tokens": self.config.max_tokens,
            "history": history,
            "tools": tools,
            "pending_tool_calls": pending_tool_calls,
            "compact": compact,
            "usage": self.meta.get("usage_anchor"),
            "cut": None,
        }
        result = self.hooks.run("context_budget", data)
        verdict = result.get("budget_result")
        if not isinstance(verdict, dict) or not isinstance(verdict.get("fits"), bool):
            raise WorkerFailure("context_budget returned no budget_result with a boolean 'fits'")
        result["cut"] = None  # a budget provider can never pre-select a cut for the compactor
        return result

    def record_usage(self, sent: dict[str, Any] | None, usage: dict[str, Any] | None) -> None:
        """Anchor the next estimate on this response's usage, with the template of the request sent.

        ``sent`` is the budget output of the request actually sent; without it, or without
        valid usage, the old anchor is dropped so nothing stale is trusted.
        """
        template = (sent or {}).get("budget_result", {}).get("anchor")
        valid = usage and all(isinstance(usage.get(k), int) and not isinstance(usage.get(k), bool)
                              for k in ("input_tokens", "output_tokens"))
        if not isinstance(template, dict) or not valid:
            self.meta.pop("usage_anchor", None)
            return
        assert usage is not None
        self.meta["usage_anchor"] = {**template, "input_tokens": usage["input_tokens"],
                                     "output_tokens": usage["output_tokens"]}


def tool_output_limit(result: dict[str, Any] | None, default_bytes: int) -> int:
    """UTF-8 bytes each pending tool call may return, from the budget output (else the default)."""
    per_call = (result or {}).get("budget_result", {}).get("tool_output_budget")
    if isinstance(per_call, dict):
        value = per_call.get("per_call_bytes")
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return default_bytes


def truncate_utf8(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes at a character boundary, with a marker."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    kept = data[:limit].decode("utf-8", "ignore")
    cut = len(text) - len(kept)
    return kept + f"\n[... {cut} characters ({len(data) - limit} bytes) cut by the tool-output budget ...]"
