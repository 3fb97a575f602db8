"""Hook-chain overhead of the standard profile per agent turn, with persistent workers.

One turn without tools calls every subscribed hook the agent loop calls: before_turn (skills,
memory), context_budget (budget), before_request and after_response (cache). Measured for a
typical 50-message history and a 5,000-message one; also reports the cost per KiB sent so the
growth can be checked to be linear in the bytes actually sent.

Run where every package is installed (``scripts/bootstrap`` makes .venv):
    .venv/bin/python bench/core_hook_chain.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson


def history(n: int) -> list[dict]:
    messages = [{"role": "system", "content": "You are i. " * 40}]
    for k in range(1, n):
        if k % 2:
            messages.append({"role": "user", "content": f"request {k}: " + "please look at the build output " * 10})
        else:
            messages.append(
                {"role": "assistant", "content": f"answer {k}: " + "the build passed and the tests ran " * 10}
            )
    return messages


def turn(runtime, config, messages, tools) -> int:
    """The hook calls of one agent turn; returns the bytes of data sent."""
    sent = 0
    hooks = runtime.hooks
    data = {"messages": messages, "workspace": runtime.workspace}
    sent += len(orjson.dumps(data))
    hooks.run("before_turn", data)
    budget = {
        "model": config["model"],
        "protocol": "openai",
        "budget": config["budget"],
        "max_tokens": 4096,
        "history": messages,
        "tools": tools,
        "pending_tool_calls": 0,
        "compact": True,
        "usage": None,
        "cut": None,
    }
    sent += len(orjson.dumps(budget))
    hooks.run("context_budget", budget)
    body = {"model": config["model"], "messages": messages, "tools": tools, "stream": True}
    request = {
        "url": "http://127.0.0.1:8080/v1/chat/completions",
        "body": body,
        "protocol": "openai",
        "model": config["model"],
        "budget": config["budget"],
        "request_meta": {"request": 1},
    }
    sent += len(orjson.dumps(request))
    prepared = hooks.run("before_request", request)
    response = {
        "response": {
            "choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 900}},
        },
        "request_meta": prepared.get("request_meta", {}),
        "protocol": "openai",
        "model": config["model"],
    }
    sent += len(orjson.dumps(response))
    hooks.run("after_response", response)
    return sent


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="i-bench-"))
    for key in ("config", "data", "cache", "runtime"):
        (tmp / key).mkdir()
        os.environ[f"I_{key.upper()}_DIR"] = str(tmp / key)
    project = tmp / "project"
    project.mkdir()
    from i_core.initialise import initialise
    from i_core.runtime import Runtime
    from i_core.tools import BUILTIN_SCHEMAS

    initialise(tmp / "config")
    config_path = tmp / "config" / "config.json"
    config = orjson.loads(config_path.read_bytes())
    # No model server answers init's capacity probe here: give the budget the window it requires.
    config["budget"] = {**config.get("budget", {}), "context_window": 128000}
    config_path.write_bytes(orjson.dumps(config))
    runs = {50: 100 if args.quick else 500, 5000: 10 if args.quick else 40}
    with Runtime(project) as runtime:
        tools = [*BUILTIN_SCHEMAS, *runtime.manifest.model_tools()]
        print(
            f"standard profile: {len(runtime.manifest.hooks)} hook entries, "
            f"{len(runtime.pool.running())} workers started; python {sys.version.split()[0]}"
        )
        print(
            "hooks per turn: "
            + ", ".join(
                f"{e}={len(runtime.hooks.subscribers(e))}"
                for e in ("before_turn", "context_budget", "before_request", "after_response")
            )
        )
        results = {}
        for size, n in runs.items():
            messages = history(size)
            for _ in range(5):
                turn(runtime, config, messages, tools)  # warm the workers and their caches
            times, sent = [], 0
            for _ in range(n):
                started = time.perf_counter()
                sent = turn(runtime, config, messages, tools)
                times.append(time.perf_counter() - started)
            results[size] = (statistics.median(times), sent)
            print(
                f"{size:5d} messages ({sent / 1024:8.1f} KiB sent per turn, {n} turns): "
                f"median {statistics.median(times) * 1e3:8.2f} ms  p99 {pct(times, 0.99) * 1e3:8.2f} ms  "
                f"IQR {pct(times, 0.25) * 1e3:.2f}-{pct(times, 0.75) * 1e3:.2f} ms  "
                f"{statistics.median(times) * 1e6 / (sent / 1024):6.1f} us/KiB"
            )
    (small_t, small_b), (big_t, big_b) = results[50], results[5000]
    print(
        f"growth: bytes x{big_b / small_b:.1f}, time x{big_t / small_t:.1f} "
        f"(time/bytes ratio {(big_t / small_t) / (big_b / small_b):.2f}; <= 1 means no worse than linear)"
    )
    print("target: < 5 ms per turn at 50 messages")


if __name__ == "__main__":
    main()
