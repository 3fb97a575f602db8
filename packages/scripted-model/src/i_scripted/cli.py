"""``python -m i_scripted``: serve a script file on loopback until killed (the README demo, manual tests)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import orjson

from i_scripted.overflow import CONTEXT_STYLES
from i_scripted.script import ScriptError, load_script
from i_scripted.server import RecordedRequest, ScriptedModel


def _recorder(path: Path) -> Callable[[RecordedRequest], None]:
    """An ``on_request`` that appends each request (path, redacted headers, JSON body) to ``path``."""

    def record(request: RecordedRequest) -> None:
        line = {"path": request.path, "headers": request.headers, "body": request.body}
        with path.open("ab") as handle:
            handle.write(orjson.dumps(line) + b"\n")

    return record


def main(argv: list[str] | None = None) -> int:
    """``python -m i_scripted --script FILE.json [--port N] [--context-window N [--context-style S]]``:
    print the base URL, serve until killed."""
    parser = argparse.ArgumentParser(
        prog="python -m i_scripted", description="A scripted OpenAI- and Anthropic-compatible model server on loopback"
    )
    parser.add_argument("--script", required=True, help="JSON file: a list of steps")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--record", help="append every request (redacted headers, JSON body) to this NDJSON file")
    parser.add_argument("--context-window", type=int, help="refuse requests that do not fit N tokens (HTTP 400)")
    parser.add_argument(
        "--context-style", choices=CONTEXT_STYLES, help="whose error bodies and capacity endpoints to imitate"
    )
    args = parser.parse_args(argv)
    if args.context_window is not None and args.context_window < 1:
        parser.error("--context-window must be a positive number of tokens")
    try:
        steps = load_script(args.script)
    except (OSError, orjson.JSONDecodeError, ScriptError) as exc:
        print(f"scripted model: cannot load {args.script}: {exc}", file=sys.stderr)
        return 2
    model = ScriptedModel(
        steps,
        host=args.host,
        port=args.port,
        on_request=_recorder(Path(args.record)) if args.record else None,
        context_window=args.context_window,
        context_style=args.context_style,
    )
    print(model.base_url, flush=True)
    print(f"scripted model: openai base_url {model.base_url}, anthropic base_url {model.root_url}", file=sys.stderr)
    if args.context_window is not None:
        style = args.context_style or "the protocol's own"
        print(f"scripted model: context window {args.context_window} tokens, {style} error bodies", file=sys.stderr)
    model.serve()
    return 0
