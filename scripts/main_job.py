"""The README's main job: a real agent task end to end, then a report of what it did.

1. `i --runtime init` (never overwrites) and the manifest the core will run with.
2. If config.json points at a reachable model (a server that answers on its port and, for a
   remote one, a key in the environment variable it names), the task runs against it.
   Otherwise the project's scripted loopback model stands in — said plainly on stderr — and the
   same task runs through the real core, real workers, real tools and a real session file.
3. Prints turns, tool calls, budget, whether it compacted, and the cache report.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

BIN = Path(sys.executable).parent
I_CMD = str(BIN / "i")
ROOT = Path(__file__).resolve().parent.parent
TASK = "read README.md and summarise it"
# The scripted stand-in's context size, in tokens: the budget worker needs budget.context_window,
# and the stand-in is a different model from the configured one, so its window replaces the
# configured model's (and the fields sized for that window are dropped with it).
STANDIN_CONTEXT_WINDOW = 32768
EXIT_CONFIG = 3
_WINDOW_SIZED = ("context_window", "output_reserve", "threshold")


def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    print(f"$ i {' '.join(argv[1:])}", file=sys.stderr, flush=True)
    return subprocess.run(argv, text=True, **kwargs)


def reachable(config: dict[str, Any]) -> str | None:
    """Why the configured model cannot be used, or None when it can."""
    url = urlsplit(str(config.get("base_url", "")))
    host, port = url.hostname or "", url.port or (443 if url.scheme == "https" else 80)
    local = host in ("127.0.0.1", "localhost", "::1")
    key_env = config.get("api_key_env")
    if not local and key_env and not os.environ.get(key_env):
        return f"{key_env} is not set"
    try:
        with socket.create_connection((host, port), timeout=2):
            return None
    except OSError as exc:
        return f"nothing answers at {host}:{port} ({exc.strerror or exc})"


def scripted_steps() -> list[Any]:
    """The stand-in model: read README.md with the real read tool, then summarise what came back."""

    def summarise(request: dict[str, Any]) -> dict[str, Any]:
        result = next((m for m in reversed(request.get("messages", [])) if m.get("role") == "tool"), None)
        text = str(result.get("content", "")) if result else ""
        # The read tool numbers its lines ("12\t..."): take the text after the tab.
        lines = [line.split("\t", 1)[-1] for line in text.splitlines() if line.strip()]
        headings = [line.lstrip("# ").strip() for line in lines if line.startswith("#")][:4]
        return {
            "text": f"(scripted stand-in) README.md has {len(lines)} non-empty lines; its headings are: "
            + "; ".join(headings)
            + "."
        }

    return [{"tool_calls": [{"name": "read", "arguments": {"path": "README.md"}}]}, summarise]


def main() -> int:
    if run([I_CMD, "--version"]).returncode:
        return 1
    init = run([I_CMD, "--runtime", "init"]).returncode
    # 3: an existing config.json lacks something init may not write (it never overwrites a file; it
    # named the field and the value above). The scripted stand-in brings its own window, so the job
    # goes on; the configured model, if reachable, will say the same before its first request.
    if init not in (0, EXIT_CONFIG):
        return 1
    manifest = run([I_CMD, "--runtime", "manifest", "standard"], capture_output=True)
    if manifest.returncode:
        print(manifest.stderr, file=sys.stderr)
        return manifest.returncode
    modules = [entry.get("module") for entry in json.loads(manifest.stdout)["hooks"]]
    print(f"manifest (standard): hooks from modules {', '.join(m for m in modules if m)}")
    paths = json.loads(run([I_CMD, "--runtime", "paths", "-C", str(ROOT)], capture_output=True, check=True).stdout)
    config_path = Path(paths["config_dir"]) / "config.json"
    config = json.loads(config_path.read_text())
    why = reachable(config)
    with tempfile.TemporaryDirectory(prefix="i-main-job-") as tmp:
        session = Path(tmp) / "session.json"
        argv = [I_CMD, "-C", str(ROOT), "--session", str(session), "--no-stream", TASK]
        if why is None:
            print(f"using the configured model {config.get('model')} at {config.get('base_url')}", file=sys.stderr)
            result = run(argv)
        else:
            from i_scripted import ScriptedModel

            print(
                f"NOTE: the configured model cannot be used ({why}); running against the project's SCRIPTED "
                "stand-in model on loopback. Everything else is real: core, workers, tools, session file.",
                file=sys.stderr,
            )
            with ScriptedModel(scripted_steps(), context_window=STANDIN_CONTEXT_WINDOW) as model:
                budget = {k: v for k, v in (config.get("budget") or {}).items() if k not in _WINDOW_SIZED}
                budget["context_window"] = STANDIN_CONTEXT_WINDOW
                demo = dict(config, base_url=model.base_url, protocol="openai", api_key_env=None, budget=budget)
                demo_config = Path(tmp) / "config.json"
                demo_config.write_text(json.dumps(demo))
                result = run([*argv[:1], "--config", str(demo_config), *argv[1:]])
        if result.returncode:
            return result.returncode
        saved = json.loads(session.read_text())
        messages = saved["messages"]
        calls = [c["function"]["name"] for m in messages for c in m.get("tool_calls", [])]
        compacted = any(isinstance(m.get("_compaction"), dict) for m in messages)
        print("\nwhat it did:")
        print(
            f"  turns: {sum(1 for m in messages if m['role'] == 'user' and '_context' not in m)}; "
            f"messages in session: {len(messages)}; tool calls: {len(calls)} ({', '.join(calls) or 'none'})"
        )
        anchor = anchor_words(saved["meta"].get("usage_anchor"))
        print(f"  compacted: {'yes' if compacted else 'no'}; usage anchor: {anchor}")
        print(f"  session file: {session} (removed with the temporary folder)")
    report = run([I_CMD, "--runtime", "cache-report", "-C", str(ROOT), "--json"], capture_output=True)
    if report.returncode:
        print(report.stderr, file=sys.stderr, end="")
        return report.returncode
    print(f"  {cache_words(json.loads(report.stdout))}")
    return 0


def anchor_words(anchor: Any) -> str:
    """The usage anchor in words: what the model reported for the last request the budget anchors on."""
    if not isinstance(anchor, dict) or not isinstance(anchor.get("input_tokens"), int):
        return "none yet (no request reported its usage)"
    words = f"{anchor['input_tokens']:,} input tokens"
    if isinstance(anchor.get("output_tokens"), int):
        words += f" and {anchor['output_tokens']:,} output tokens"
    return words + " as the model reported them for the last request (the budget's measure of this conversation)"


def cache_words(report: dict[str, Any]) -> str:
    """The cache report in words: a verdict only once there is something to compare."""
    requests = report.get("requests", 0)
    if requests == 0:
        return "cache: no request observed yet"
    if requests == 1:
        return "cache: 1 request, nothing to compare yet (a first request has nothing cached to read)"
    ratio, target, met = report.get("observed_token_hit_ratio"), report["target_hit_ratio"], report["target_met"]
    read = "no input observed" if ratio is None else f"{ratio:.0%} of input tokens read from the cache"
    verdict = {True: "met", False: "not met"}.get(met, f"unknown: {report.get('target_met_null_reason')}")
    return f"cache: {requests} requests in this project, {read} (target {target:.0%}: {verdict})"


if __name__ == "__main__":
    sys.exit(main())
