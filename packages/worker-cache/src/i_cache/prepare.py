"""``before_request``: add provider cache fields, classify the prefix, record the preparation."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path
from typing import Any

from . import stats as ledger
from .errors import CacheError
from .fingerprint import TAIL_DIGESTS, PrefixTracker, PreviousPrefix, message_digest, prompt_parts
from .settings import CacheSettings

PROTOCOLS = ("openai", "deepseek", "anthropic", "responses")
MAX_STREAM_CHARS = 128


def prompt_cache_key(namespace: str, workspace_id: str) -> str:
    """The stable 64-character OpenAI ``prompt_cache_key`` of a namespace in a workspace."""
    return hashlib.sha256(f"i-cache/prompt_cache_key/1\0{namespace}\0{workspace_id}".encode()).hexdigest()


def derived_stream(namespace: str, workspace_id: str, model: str, system_digest: str) -> str:
    """A conversation identity: namespace + workspace + model + system prompt fingerprint."""
    seed = f"i-cache/stream/1\0{namespace}\0{workspace_id}\0{model}\0{system_digest}"
    return hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def provider_fields(body: dict[str, Any], settings: CacheSettings, workspace_id: str) -> tuple[list[str], list[str]]:
    """Add the mode's cache fields to ``body`` without overwriting any; returns (added, kept)."""
    wanted: dict[str, Any] = {}
    if settings.mode == "openai":
        wanted["prompt_cache_key"] = prompt_cache_key(settings.namespace, workspace_id)
        if settings.retention is not None:
            wanted["prompt_cache_retention"] = settings.retention
    elif settings.mode == "anthropic":
        control: dict[str, str] = {"type": "ephemeral"}
        if settings.ttl is not None:
            control["ttl"] = settings.ttl
        wanted["cache_control"] = control
    added: list[str] = []
    kept: list[str] = []
    for key, value in wanted.items():
        if key in body:
            kept.append(key)
        else:
            body[key] = value
            added.append(key)
    return added, kept


def _request_fields(data: dict[str, Any]) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    protocol = data.get("protocol")
    if not isinstance(protocol, str) or not protocol:
        raise CacheError("before_request: 'protocol' must be a non-empty string")
    model = data.get("model", "")
    if not isinstance(model, str):
        raise CacheError("before_request: 'model' must be a string")
    body = data.get("body")
    if not isinstance(body, dict):
        raise CacheError("before_request: 'body' must be the JSON object about to be sent")
    meta = data.get("request_meta")
    if meta is None:
        meta = {}
        data["request_meta"] = meta
    elif not isinstance(meta, dict):
        raise CacheError("before_request: 'request_meta' must be an object")
    return protocol, model or str(body.get("model", "")), body, meta


def _stream_from_meta(meta: dict[str, Any]) -> str | None:
    value = meta.get("stream")
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_STREAM_CHARS or not value.isprintable():
        raise CacheError(f"before_request: request_meta.stream must be 1..{MAX_STREAM_CHARS} printable characters")
    return value


def _previous(entry: object) -> PreviousPrefix | None:
    if not isinstance(entry, dict):
        return None
    try:
        # One string of 16-hex digests: far cheaper to parse than 64 small strings per stream.
        joined = entry["tail"]
        if not isinstance(joined, str) or len(joined) % 16:
            return None
        tail = tuple(joined[i : i + 16] for i in range(0, len(joined), 16))
        return PreviousPrefix(
            messages=int(entry["messages"]),
            fingerprint=str(entry["fingerprint"]),
            header=str(entry["header"]),
            system=str(entry["system"]),
            tail_start=int(entry["tail_start"]),
            tail=tail,
        )
    except (KeyError, TypeError, ValueError):
        return None  # an entry from an older layout: treat the stream as new


def prepare_request(
    data: dict[str, Any],
    settings: CacheSettings,
    workspace_id: str,
    stats_path: Path,
    tracker: PrefixTracker,
) -> dict[str, Any]:
    """Handle one ``before_request``: returns the complete data with body and request_meta set."""
    protocol, model, body, meta = _request_fields(data)
    parts = prompt_parts(protocol, body)
    system_digest = message_digest(parts.system).hex()
    stream = _stream_from_meta(meta) or derived_stream(settings.namespace, workspace_id, model, system_digest)
    request_id = uuid.uuid4().hex
    with ledger.locked_stats(stats_path) as doc:
        classified = tracker.classify(stream, parts, _previous(doc["streams"].get(stream)))
        kind = classified.classification
        ledger.bump(doc, kind, protocol, "prepared")
        ledger.bump(doc, kind, protocol, "preparations")
        seq = doc["totals"]["prepared"]
        stamp = ledger.now()
        tail_start, tail = classified.tail()
        entry = doc["streams"].get(stream)
        earlier = entry.get("requests") if isinstance(entry, dict) else None
        requests = earlier + 1 if isinstance(earlier, int) and not isinstance(earlier, bool) else 1
        doc["streams"][stream] = {
            "protocol": protocol,
            "model": model,
            "messages": classified.messages,
            "fingerprint": classified.fingerprint,
            "header": classified.header,
            "system": system_digest,
            "tail_start": tail_start,
            "tail": "".join(tail[-TAIL_DIGESTS:]),
            "requests": requests,
            "last_classification": kind,
            "updated_at": stamp,
            "seq": seq,
        }
        doc["records"].append(
            {
                "request_id": request_id,
                "at": stamp,
                "stream": stream,
                "protocol": protocol,
                "model": model,
                "classification": kind,
                "messages": classified.messages,
                "common": classified.common,
                "preparations": 1,
                "status": "prepared",
                "usage": None,
                "usage_status": None,
                "unknown_reason": None,
            }
        )
    added, kept = provider_fields(body, settings, workspace_id)
    meta["cache"] = {
        "prepared": True,
        "request_id": request_id,
        "stream": stream,
        "classification": kind,
        "protocol": protocol,
        "mode": settings.mode,
        "prefix": {
            "messages": classified.messages,
            "fingerprint": classified.fingerprint,
            "system": system_digest,
            "common": classified.common,
            "hashed": classified.hashed,
        },
        "added": added,
        "kept": kept,
    }
    return data
