"""Provider usage → (input, cache read, cache creation) tokens, or an explicit unknown.

Provider rules:
- OpenAI chat and Responses: ``cached_tokens`` is already inside the total input
  (``prompt_tokens`` / ``input_tokens``). Where a compatible service also reports
  ``cache_write_tokens`` in the same details object (OpenRouter, Bedrock), those are inside the
  total too: cache creation, never added to the total, never a hit; written + cached beyond the
  total is inconsistent.
- Anthropic: ``input_tokens`` + ``cache_read_input_tokens`` + ``cache_creation_input_tokens``
  is the total input; creation is written to the cache, not read from it, so it is no hit.
- DeepSeek: ``prompt_cache_hit_tokens`` + ``prompt_cache_miss_tokens`` is the total input.
Anything missing, negative, non-integer or inconsistent is unknown, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_TOKENS = 2**53
"""Beyond this a count is not a plausible usage figure (and not exact in a JSON double)."""


@dataclass(frozen=True)
class Usage:
    """Known input usage of one response, in tokens."""

    input_tokens: int
    cache_read_tokens: int
    cache_creation_tokens: int

    def as_json(self) -> dict[str, int]:
        """The shape stored in a stats record."""
        return {
            "input_tokens": self.input_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_creation_tokens": self.cache_creation_tokens,
        }


class UnknownUsage(Exception):
    """The usage cannot be trusted; ``reason`` is a short stable code."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


def read_usage(protocol: str, response: object) -> Usage:
    """The input usage of ``response`` under ``protocol``'s rules; raises ``UnknownUsage``."""
    if not isinstance(response, dict):
        raise UnknownUsage("no_response", "response is not an object")
    usage = response.get("usage")
    if usage is None and isinstance(response.get("response"), dict):
        usage = response["response"].get("usage")  # a Responses stream's final event wraps the response
    if usage is None:
        raise UnknownUsage("missing", "response has no usage")
    if not isinstance(usage, dict):
        raise UnknownUsage("invalid", "usage is not an object")
    if protocol == "anthropic":
        return _anthropic(usage)
    if protocol == "responses":
        return _included(usage, "input_tokens", "input_tokens_details")
    if protocol == "deepseek":
        if "prompt_cache_hit_tokens" in usage or "prompt_cache_miss_tokens" in usage:
            return _deepseek(usage)
        return _included(usage, "prompt_tokens", "prompt_tokens_details")
    if protocol == "openai":
        if "prompt_tokens_details" not in usage and "prompt_cache_hit_tokens" in usage:
            return _deepseek(usage)  # DeepSeek reached through the plain OpenAI protocol
        return _included(usage, "prompt_tokens", "prompt_tokens_details")
    raise UnknownUsage("unsupported_protocol", f"no usage rule for protocol {protocol!r}")


def _count(container: dict[str, Any], key: str, where: str) -> int:
    if key not in container or container[key] is None:
        raise UnknownUsage("missing", f"{where}.{key} is missing")
    value = container[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UnknownUsage("non_numeric", f"{where}.{key} is not a number: {value!r}")
    if isinstance(value, float):
        if not value.is_integer():
            raise UnknownUsage("non_numeric", f"{where}.{key} is not a whole number: {value!r}")
        value = int(value)
    if value < 0:
        raise UnknownUsage("negative", f"{where}.{key} is negative: {value}")
    if value > MAX_TOKENS:
        raise UnknownUsage("overflow", f"{where}.{key} is implausibly large: {value}")
    return value


def _included(usage: dict[str, Any], total_key: str, details_key: str) -> Usage:
    total = _count(usage, total_key, "usage")
    details = usage.get(details_key)
    if details is None:
        raise UnknownUsage("missing", f"usage.{details_key} is missing (cache reads unknown)")
    if not isinstance(details, dict):
        raise UnknownUsage("invalid", f"usage.{details_key} is not an object")
    cached = _count(details, "cached_tokens", f"usage.{details_key}")
    if cached > total:
        raise UnknownUsage("inconsistent", f"cached_tokens {cached} exceed {total_key} {total}")
    written = 0  # absent (or null): the service does not report writes, as OpenAI's own does not
    if details.get("cache_write_tokens") is not None:
        written = _count(details, "cache_write_tokens", f"usage.{details_key}")
    if written + cached > total:
        raise UnknownUsage(
            "inconsistent", f"cache_write_tokens {written} + cached_tokens {cached} exceed {total_key} {total}"
        )
    return Usage(total, cached, written)


def _anthropic(usage: dict[str, Any]) -> Usage:
    plain = _count(usage, "input_tokens", "usage")
    read = _count(usage, "cache_read_input_tokens", "usage")
    creation = _count(usage, "cache_creation_input_tokens", "usage")
    total = plain + read + creation
    if total > MAX_TOKENS:
        raise UnknownUsage("overflow", f"total input {total} is implausibly large")
    return Usage(total, read, creation)


def _deepseek(usage: dict[str, Any]) -> Usage:
    hit = _count(usage, "prompt_cache_hit_tokens", "usage")
    miss = _count(usage, "prompt_cache_miss_tokens", "usage")
    total = hit + miss
    if "prompt_tokens" in usage:
        stated = _count(usage, "prompt_tokens", "usage")
        if stated != total:
            raise UnknownUsage("inconsistent", f"hit {hit} + miss {miss} != prompt_tokens {stated}")
    return Usage(total, hit, 0)
