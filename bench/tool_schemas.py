"""What each tool's schema costs in tokens, by the model server's own count.

For every tool the profiles offer, the same chat request is counted with and without that tool
and the difference is its cost. The count is the server's: llama.cpp's `/apply-template` then
`/tokenize` (exactly the `prompt_tokens` its chat endpoint reports for that request, and no model
evaluation), or with `--usage` the `prompt_tokens` of a real chat request (`max_tokens: 1`); the totals per
profile are the request with all of its tools minus the request with none (a chat template may add
a preamble once when any tool is offered: that is counted in the totals, not per tool). The
targets (issue [14]): `standard`'s schemas at most 25% of an 8,192-token window, `small`'s at most
15%.

    python bench/tool_schemas.py http://127.0.0.1:8144/v1 [--model smollm2] [--window 8192]

Run against llama.cpp's llama-server (`../shared/tools/llama-server`, `CTX=8192 ... run-server.sh
start 8144`), or any OpenAI-compatible server that reports usage.
"""

from __future__ import annotations

import argparse
from typing import Any

import httpx

from i_core.modules import MODULES, PROFILES
from i_core.tools import BUILTIN_SCHEMAS

MESSAGES = [{"role": "system", "content": "You are i."}, {"role": "user", "content": "hi"}]


def offered(profile: str) -> list[dict[str, Any]]:
    """The tool schemas a session of ``profile`` offers the model (no MCP servers)."""
    tools = list(BUILTIN_SCHEMAS)
    for module in PROFILES[profile]:
        tools.extend(MODULES[module].tools)
    return tools


def prompt_tokens(client: httpx.Client, url: str, model: str, tools: list[dict[str, Any]], usage: bool) -> int:
    """The server's count of the chat request with ``tools``."""
    body: dict[str, Any] = {"model": model, "messages": MESSAGES, "max_tokens": 1}
    if tools:
        body["tools"] = [{"type": "function", "function": tool} for tool in tools]
    if usage:
        answer = client.post(url + "/chat/completions", json=body)
        answer.raise_for_status()
        return int(answer.json()["usage"]["prompt_tokens"])
    root = url.removesuffix("/v1")
    rendered = client.post(root + "/apply-template", json=body)
    rendered.raise_for_status()
    counted = client.post(root + "/tokenize", json={"content": rendered.json()["prompt"], "add_special": True})
    counted.raise_for_status()
    return len(counted.json()["tokens"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--window", type=int, default=8192)
    parser.add_argument("--usage", action="store_true", help="count by chat requests' usage (slow on a busy CPU)")
    options = parser.parse_args()
    url = options.base_url.rstrip("/")

    def count(tools: list[dict[str, Any]]) -> int:
        return prompt_tokens(client, url, options.model, tools, options.usage)

    with httpx.Client(timeout=600) as client:
        none = count([])
        everything = offered("full")
        full = count(everything)
        print(f"{'tool':<14} {'bytes':>6} {'tokens':>7}   (all {len(everything)} tools minus this one)")
        for tool in everything:
            rest = [other for other in everything if other is not tool]
            cost = full - count(rest)
            size = len(httpx.Request("POST", url, json=tool).content)
            print(f"{tool['name']:<14} {size:>6} {cost:>7}")
        print()
        for profile, target in (("standard", 0.25), ("small", 0.15)):
            tools = offered(profile)
            cost = count(tools) - none
            share = cost / options.window
            verdict = "ok" if share <= target else "OVER"
            print(
                f"profile {profile:<9} {len(tools):>2} tools  {cost:>5} tokens  {share:6.1%} of {options.window} "
                f"(target <= {target:.0%}: {verdict})"
            )


if __name__ == "__main__":
    main()
