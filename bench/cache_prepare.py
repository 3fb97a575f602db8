"""Benchmark: i-cache ``before_request`` fingerprinting on a ~1 MB request body.

Compares, side by side in one run, on the same sequence of growing conversations:
- append   the worker's rolling path: previous messages compared in memory, only new ones hashed;
- rehash   the baseline the issue names: every message digested and chained on every call;
- handler  the complete ``before_request`` work (fingerprint + locked, atomic stats update).
Each body is freshly parsed outside the timed region, as the worker receives new JSON objects.

    python bench/cache_prepare.py [--quick] [--size BYTES]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from i_cache.fingerprint import PrefixTracker, PreviousPrefix, message_digest, prompt_parts
from i_cache.prepare import prepare_request
from i_cache.settings import CacheSettings


def base_messages(size: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful assistant. " * 300}]
    i = 0
    while len(orjson.dumps(messages)) < size:
        messages.append({"role": "user", "content": f"question {i}: " + "lorem ipsum dolor sit amet " * 80})
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": '{"path":"a.py"}'}}
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "x = 1\n" * 300})
        i += 1
    return messages


def body_at(base: bytes, step: int) -> dict[str, Any]:
    messages = orjson.loads(base)
    for j in range(step):
        messages.append({"role": "assistant", "content": f"answer {j} " + "y" * 200})
        messages.append({"role": "user", "content": f"follow-up {j} " + "z" * 200})
    tools = [{"type": "function", "function": {"name": f"t{k}", "parameters": {"type": "object"}}} for k in range(8)]
    return {"model": "m", "messages": messages, "tools": tools}


def persisted(result: Any) -> PreviousPrefix:
    start, tail = result.tail()
    system = message_digest(result.memory.items[0]).hex()
    return PreviousPrefix(result.messages, result.fingerprint, result.header, system, start, tuple(tail))


def summary(name: str, samples: list[float]) -> float:
    ordered = sorted(samples)
    median = statistics.median(ordered)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    print(f"{name:<8} median {median * 1e3:7.3f} ms   p99 {p99 * 1e3:7.3f} ms   (n={len(ordered)})")
    return median


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    parser.add_argument("--size", type=int, default=1_000_000, help="request body size in bytes (default 1 MB)")
    args = parser.parse_args()
    iterations = 30 if args.quick else 200
    base = orjson.dumps(base_messages(args.size))
    first = body_at(base, 0)
    print(f"body {len(orjson.dumps(first)) / 1e6:.2f} MB, {len(first['messages'])} messages, {iterations} appends")

    warm = PrefixTracker()
    previous = persisted(warm.classify("s", prompt_parts("openai", first), None))
    append: list[float] = []
    rehash: list[float] = []
    for step in range(1, iterations + 1):
        body = body_at(base, step)
        started = time.perf_counter()
        result = warm.classify("s", prompt_parts("openai", body), previous)
        append.append(time.perf_counter() - started)
        assert result.classification == "append", result.classification
        cold_body = body_at(base, step)
        started = time.perf_counter()
        baseline = PrefixTracker().classify("s", prompt_parts("openai", cold_body), previous)
        rehash.append(time.perf_counter() - started)
        assert baseline.classification == "append" and baseline.fingerprint == result.fingerprint
        previous = persisted(result)

    handler: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        stats = Path(folder) / "metrics" / "cache-stats.json"
        tracker = PrefixTracker()
        settings = CacheSettings(mode="openai")
        workspace = "f29127b0-f512-4c6e-9e31-87d476d168ce"
        # A full stats file (255 other streams with long histories, 200 records): the worst case on disk.
        filler = PrefixTracker(capacity=1)
        for k in range(255):
            other = {
                "model": "m",
                "messages": [{"role": "system", "content": f"s{k}"}] + [{"role": "user", "content": "u"}] * 80,
            }
            prepare_request({"protocol": "openai", "model": "m", "body": other}, settings, workspace, stats, filler)
        print(f"stats file {stats.stat().st_size / 1e3:.0f} kB")
        for step in range(iterations + 1):
            data = {"protocol": "openai", "model": "m", "url": "http://x/v1", "body": body_at(base, step)}
            started = time.perf_counter()
            out = prepare_request(data, settings, workspace, stats, tracker)
            if step:
                handler.append(time.perf_counter() - started)
                assert out["request_meta"]["cache"]["classification"] == "append"

    a = summary("append", append)
    r = summary("rehash", rehash)
    h = summary("handler", handler)
    print(f"rehash / append median ratio: {r / a:.1f}x; fingerprint (append) median {a * 1e3:.3f} ms vs 5 ms target")
    print(f"handler = fingerprint + locked stats read/parse/write + fsync: median {h * 1e3:.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
