"""The bundled `smoke` worker: the cheap "does my endpoint work" check an ops team runs first
(seed 001 §10). ``i --runtime worker smoke [--output-cap N]``, N in 1..1024, default 32.

- ``before_request``: removes ``tools`` (with ``tool_choice`` and ``parallel_tool_calls``, which
  a server refuses without tools) and caps the output at N: every output-limit field the body
  has (``max_tokens``, ``max_completion_tokens``, ``max_output_tokens``) becomes at most N, and a
  body with none gets its protocol's (``responses``: max_output_tokens; ``openai``:
  max_completion_tokens; any other, a provider's history-format request included: max_tokens).
- ``after_response``: a reply that still calls a tool fails the turn (an error frame), so the
  core never runs the call. It recognises the calls of the Chat Completions, Anthropic,
  Responses and Ollama answer shapes.

A real endpoint still bills each request, and one request proves nothing about a hit ratio.
"""

from __future__ import annotations

import sys
from typing import Any

from i_protocol import Request, Worker, WorkerError

from ..__about__ import __version__

worker = Worker("smoke", __version__, dist_name="i-core smoke")

DEFAULT_CAP = 32
MAX_CAP = 1024
OUTPUT_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
_PROTOCOL_FIELD = {"responses": "max_output_tokens", "openai": "max_completion_tokens"}
_TOOL_FIELDS = ("tools", "tool_choice", "parallel_tool_calls")
_cap = DEFAULT_CAP


@worker.hook("before_request")
def before_request(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """The body without tools, its output capped at the smoke cap."""
    from i_protocol.events import to_json  # the event types: at the first request, not at start

    body = data.get("body")
    if not isinstance(body, dict):
        raise WorkerError("smoke: before_request data has no body object")
    body = {key: value for key, value in body.items() if key not in _TOOL_FIELDS}
    present = [name for name in OUTPUT_FIELDS if name in body]
    for name in present or [_PROTOCOL_FIELD.get(str(data.get("protocol")), "max_tokens")]:
        value = body.get(name)
        given = isinstance(value, int) and not isinstance(value, bool) and value > 0
        body[name] = min(value, _cap) if isinstance(value, int) and given else _cap
    return to_json("before_request", {**data, "body": body}, data)


@worker.hook("after_response")
def after_response(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Fail the turn when the answer calls a tool: the smoke profile never runs one."""
    response = data.get("response")
    names = tool_calls(response) if isinstance(response, dict) else []
    if names:
        raise WorkerError(
            f"smoke: the model answered with a tool call ({', '.join(names)}); the smoke profile sends "
            "no tools and refuses tool calls, so it was not run"
        )
    return data


def tool_calls(response: dict[str, Any]) -> list[str]:
    """The names of the tools a raw answer calls (Chat Completions, Anthropic, Responses, Ollama)."""
    names: list[str] = []
    messages = [c.get("message") for c in _dicts(response.get("choices"))]
    messages.append(response.get("message"))  # Ollama's /api/chat
    for message in _dicts(messages):
        names += [_name(call.get("function")) for call in _dicts(message.get("tool_calls"))]
        if isinstance(message.get("function_call"), dict):
            names.append(_name(message["function_call"]))
    content = response.get("content")
    names += [_name(block) for block in _dicts(content) if block.get("type") in ("tool_use", "server_tool_use")]
    output = response.get("output")
    names += [_name(item) for item in _dicts(output) if item.get("type") in ("function_call", "custom_tool_call")]
    return names


def _dicts(value: object) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _name(value: object) -> str:
    name = value.get("name") if isinstance(value, dict) else None
    return name if isinstance(name, str) and name else "unnamed"


def main(argv: list[str]) -> int:
    """``--output-cap N`` (taken out), the rest as for every worker (--version, --config)."""
    global _cap
    args = list(argv)
    if "--output-cap" in args:
        index = args.index("--output-cap")
        value = args[index + 1] if index + 1 < len(args) else ""
        if not value.isdigit() or not 1 <= int(value) <= MAX_CAP:
            print(f"i-core smoke: --output-cap must be an integer from 1 to {MAX_CAP}, got {value!r}", file=sys.stderr)
            return 2
        _cap = int(value)
        del args[index : index + 2]
    return worker.main(args)
