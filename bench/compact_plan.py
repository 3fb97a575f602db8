"""Benchmark i-worker-compact: compact_plan + before_compact on synthetic and realistic histories.

Two kinds of history, side by side at each size:

- ``synthetic``: generated tool batches (test logs, file JSON, approval envelopes), 8-12 KB
  results (``--payload small``: <= 600 bytes) whose text holds almost no secret-table gate word;
- ``realistic``: real-shaped tool output that does: whole tau-bench airline conversations
  (``../shared/corpora/tau-bench``, their tool calls and JSON results), ``read`` and ``grep`` of
  this repository's files at a commit (code and docs full of ``key``, ``token``, ``secret``),
  and shell output with URLs, hashes, HTTP headers, environment dumps and ``key=`` words, now
  and then with a real-looking secret in it.

Measured in process (the handlers behind the NDJSON loop) and through the real ``i-compact``
process (JSON both ways included), for the local route (extractive summary) and the model route
(prompt + prepared transcript): median and spread (p10-p90) in ms, the cost per message and the
ratio to the target (plan + local summary of 10,000 messages <= 300 ms, both kinds). The budget
worker's ``context_budget`` (unanchored, with compaction estimates: what a compaction check asks)
on the same histories is reported too, when i-worker-budget is installed.

Old vs new in one run: ``--worker-src PATHS`` also measures another source tree (``PATHS``: a
``PYTHONPATH``, e.g. HEAD's worker-compact and protocol sources), interleaved with this tree's::

    git archive HEAD packages/worker-compact/src packages/protocol/src | tar -x -C /tmp/head
    python bench/compact_plan.py --quick --worker-src /tmp/head/packages/worker-compact/src:/tmp/head/packages/protocol/src

    python bench/compact_plan.py            # 2,500 / 5,000 / 10,000 messages
    python bench/compact_plan.py --quick    # 10,000 messages, fewer repetitions
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

TARGET_MS = 300.0


def make_history(n: int, payload: str = "large") -> list[dict[str, Any]]:
    """A synthetic agent session: user turns, tool batches with text/JSON results.

    ``large``: 8-12 KB per tool result (≈3 KB per message on average); ``small``: ≤600 bytes.
    """
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are i."}]
    i = 0
    while len(history) < n:
        if i % 25 == 0:
            history.append({"role": "user", "content": f"Request {i}: fix module {i}. Do not push without asking."})
        call = f"call_{i}"
        kind = i % 4
        name = ("shell", "read", "workspace_edit", "write")[kind]
        args = (
            {"cmd": f"pytest tests/test_{i}.py"}
            if kind == 0
            else {"path": f"src/mod_{i}.py", "content": "x = 1\n" * 40}
        )
        history.append(
            {
                "role": "assistant",
                "content": f"Step {i}: running {name}.",
                "tool_calls": [
                    {"id": call, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                ],
                "_responses_output": [{"id": f"rs_{i}", "encrypted": "e" * 200}],
            }
        )
        if kind == 0:
            body = (
                "\n".join(f"tests/test_{i}.py::case_{j} PASSED" for j in range(120)) + f"\nError: job_{i:05d}x failed"
            )
        elif kind == 2:
            body = json.dumps(
                {
                    "ok": True,
                    "data": {
                        "status": "pending_approval",
                        "mode": "ask",
                        "approval": {
                            "id": f"approval_{i:05d}",
                            "kind": "transaction",
                            "resume": {
                                "tool": "workspace_edit",
                                "arguments": {"action": "commit", "transaction_id": f"tx_{i:05d}"},
                            },
                        },
                        "markdown": "plan text " * 600,
                    },
                    "retention": {"omit_when_summarizing": ["data.markdown"]},
                }
            )
        else:
            body = json.dumps(
                {
                    "path": f"src/mod_{i}.py",
                    "content": "def f():\n    return 1\n" * 200,
                    "truncated": i % 8 == 1,
                    "linesOmitted": 40,
                }
            )
        limit = 8000 + (i % 3) * 2000 if payload == "large" else 600
        if payload == "small" and kind == 2:
            body = body.replace("plan text " * 600, "plan text " * 5)
        history.append({"role": "tool", "tool_call_id": call, "content": body[-limit:] if kind == 0 else body[:limit]})
        i += 1
    history = history[:n]
    while history[-1]["role"] == "tool" or history[-1].get("tool_calls"):
        history.pop()
    history.append({"role": "assistant", "content": "Done for now."})
    return history


REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpora" / "tau-bench" / "gpt-4o-airline.json"
READ_LIMIT = 8000
"""Characters of a ``read`` result, like the built-in tool's output cap at its default."""
TEXT_SUFFIXES = (".py", ".md", ".toml", ".json", ".ini", ".txt")


def _repo_files(rev: str = "HEAD") -> list[tuple[str, str]]:
    """This repository's text files (code, docs, config) at commit ``rev``, path and text, in path
    order: a commit, not the working tree, so that a history is the same however the tree changes."""
    listed = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", rev], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    paths = [path for path in listed if path.endswith(TEXT_SUFFIXES)]
    batch = subprocess.run(
        ["git", "cat-file", "--batch"],
        cwd=REPO,
        input="".join(f"{rev}:{path}\n" for path in paths).encode(),
        capture_output=True,
        check=True,
    ).stdout
    files, position = [], 0
    for path in paths:
        header_end = batch.index(b"\n", position)
        size = int(batch[position:header_end].split()[2])
        body = batch[header_end + 1 : header_end + 1 + size]
        position = header_end + 1 + size + 1
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if 200 < len(text) < 400_000:
            files.append((path, text))
    return files


def _read_output(path: str, text: str, rng: random.Random) -> str:
    """What the built-in ``read`` returns: numbered lines up to the output cap, then a note."""
    lines = text.splitlines()
    offset = rng.randrange(max(1, len(lines) - 40)) + 1 if rng.random() < 0.3 else 1
    out, used, last = [], 0, offset - 1
    for number in range(offset, len(lines) + 1):
        entry = f"{number:>6}\t{lines[number - 1]}"
        if used + len(entry) + 1 > READ_LIMIT:
            out.append(
                f"[output cap of {READ_LIMIT} characters reached; showing lines {offset}-{last}; continue with offset={last + 1}]"
            )
            break
        out.append(entry)
        used += len(entry) + 1
        last = number
    return "\n".join(out)


def _grep_output(files: list[tuple[str, str]], word: str, rng: random.Random) -> str:
    """``grep -rn WORD`` over some of this checkout's files (lines with ``key=``, ``token``, ...)."""
    out: list[str] = []
    start = rng.randrange(len(files))
    for path, text in files[start:] + files[:start]:
        for number, line in enumerate(text.splitlines(), 1):
            if word in line:
                out.append(f"{path}:{number}:{line[:300]}")
        if sum(map(len, out)) > 6000:
            break
    return "\n".join(out) + "\n[exit code 0]"


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _alnum(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


def _shell_output(rng: random.Random, i: int) -> tuple[str, str]:
    """A command and its output in the shape real tools print: URLs, hashes, headers, ``key=`` words,
    tokens (now and then a real-looking secret, as in real sessions)."""
    kind = i % 6
    if kind == 0:
        packages = ("httpx", "orjson", "filelock", "platformdirs", "hypothesis", "pytest", "ruff", "mypy")
        lines = ["$ pip install -e packages/protocol -e packages/core"]
        for name in rng.sample(packages, 6):
            version = f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"
            lines += [
                f"Collecting {name}>={version} (from i-core==0.2.0)",
                f"  Downloading https://files.pythonhosted.org/packages/{_hex(rng, 2)}/{_hex(rng, 2)}/{_hex(rng, 60)}"
                f"/{name}-{version}-py3-none-any.whl.metadata#sha256={_hex(rng, 64)} ({rng.randint(2, 90)} kB)",
                f"  Using cached https://pypi.org/simple/{name}/?format=json&api_key_env=PIP_TOKEN ({name})",
            ]
        lines.append(f"Successfully installed {' '.join(packages)}")
        return "pip install -e packages/protocol -e packages/core", "\n".join(lines)
    if kind == 1:
        token = f"sk-proj-{_alnum(rng, 40)}" if rng.random() < 0.1 else "$OPENAI_API_KEY"
        host = rng.choice(("api.openai.com", "api.anthropic.com", "generativelanguage.googleapis.com"))
        lines = [
            f"*   Trying 104.18.{rng.randint(0, 255)}.{rng.randint(0, 255)}:443...",
            f"* Connected to {host} port 443",
            f"> POST https://{host}/v1/chat/completions?key={rng.choice(('$KEY', 'env:API_KEY'))}&page_token={_alnum(rng, 12)} HTTP/2",
            f"> Host: {host}",
            f"> Authorization: Bearer {token}",
            "> content-type: application/json",
            f"> x-api-key-env: {rng.choice(('ANTHROPIC_API_KEY', 'OPENAI_API_KEY'))}",
            "< HTTP/2 429",
            f"< x-request-id: req_{_alnum(rng, 24)}",
            f"< set-cookie: __cf_bm={_alnum(rng, 40)}; path=/; expires=Tue, 01-Dec-26 15:{rng.randint(10, 59)}:00 GMT",
            f"< x-ratelimit-remaining-tokens: {rng.randint(0, 90000)}",
            f"< x-ratelimit-reset-tokens: {rng.randint(1, 60)}s",
            '{"error": {"message": "Rate limit reached for tokens per min (TPM): Limit 30000, Used 29871, '
            'Requested 1430. See https://platform.openai.com/docs/guides/rate-limits", "type": "tokens", '
            '"param": null, "code": "rate_limit_exceeded"}}',
        ]
        return f"curl -v https://{host}/v1/chat/completions -d @req.json", "\n".join(lines)
    if kind == 2:
        token = "ghp_" + _alnum(rng, 36) if rng.random() < 0.1 else "~/.config/gh/token"
        lines = [
            f"GH_TOKEN{'' if token.startswith('ghp_') else '_FILE'}={token}",
            "HOME=/home/dev",
            "HF_HUB_CACHE=/home/dev/.cache/huggingface",
            "API_KEY_ENV=OPENAI_API_KEY",
            f"PIP_INDEX_URL=https://pypi.org/simple?key={_hex(rng, 8)}",
            f"I_MAX_TOKENS=4096 I_STOP_TOKEN_IDS={rng.randint(0, 50000)} I_CACHE_KEY=prompt-{_hex(rng, 16)}",
            f"SSH_AUTH_SOCK=/tmp/ssh-{_alnum(rng, 10)}/agent.{rng.randint(1000, 9999)}",
            "PATH=/work/dev/bin:/usr/local/bin:/usr/bin:/bin",
            "KEYRING_BACKEND=keyring.backends.null.Keyring",
            "TOKENIZERS_PARALLELISM=false",
            f"SECRET_STORE=vault://kv/app/{i}",
            f"OTEL_EXPORTER_OTLP_ENDPOINT=https://otel.example.com:4318/v1/traces?token_budget={rng.randint(1, 99)}",
            f"DATABASE_URL=postgres://app:{'$PGPASSWORD' if rng.random() < 0.9 else _alnum(rng, 14)}@db.internal:5432/app",
            "AWS_PROFILE=dev AWS_REGION=eu-west-1 AWS_SECRET_ACCESS_KEY_FILE=/run/secrets/aws",
            f"PYTEST_ADDOPTS=-p no:cacheprovider --key-file=tests/keys/test_{i}.pem",
            "LANG=C.UTF-8",
        ]
        return "env | sort", "\n".join(lines)
    if kind == 3:
        lines = []
        for j in range(40):
            lines.append(
                f"2026-12-01T14:{j % 60:02d}:{rng.randint(0, 59):02d}Z INFO http.request method=GET "
                f"url=https://api.example.com/v2/items/{_hex(rng, 8)}?page_token={_alnum(rng, 16)}&key_id=k{j} "
                f"status={rng.choice((200, 200, 304, 404))} duration_ms={rng.randint(1, 900)} "
                f"trace_id={_hex(rng, 32)} token_count={rng.randint(10, 9000)}"
            )
        return "tail -n 40 logs/server.log", "\n".join(lines)
    if kind == 4:
        lines = []
        for j in range(25):
            sha = _hex(rng, 40)
            lines += [
                f"commit {sha}",
                f"Author: Dev {j} <dev{j}@example.com>",
                f"    secrets: keep the key= value of --token-file paths readable (#{rng.randint(1, 99)})",
                f"    See https://github.com/example/i/pull/{rng.randint(100, 999)}/files#diff-{_hex(rng, 64)}",
                "",
            ]
        return "git log -25", "\n".join(lines)
    lines = [f"tests/test_secrets.py::test_key_{j}_token_is_redacted PASSED" for j in range(60)]
    lines += [f"FAILED tests/test_auth.py::test_api_key_rotation - AssertionError: key=key_{i} token=tok_{i}"]
    return "pytest -q tests/", "\n".join(lines) + f"\nError: job_{i:05d}x failed\n[exit code 1]"


def _tau_conversations() -> list[list[dict[str, Any]]]:
    """The real tau-bench airline conversations, without their system message."""
    return [item["traj"][1:] for item in json.loads(CORPUS.read_text("utf-8"))]


def make_realistic_history(n: int, seed: int = 18, rev: str = "HEAD") -> list[dict[str, Any]]:
    """A session of real-shaped text: real tau-bench conversations (with their tool calls and JSON
    results), ``read`` of this repository's files (code and docs full of ``key``, ``token``,
    ``secret``), ``grep`` over them, and shell output with URLs, hashes, headers and ``key=``
    words (now and then a real-looking secret, which redaction must catch)."""
    rng = random.Random(seed)
    files = _repo_files(rev)
    conversations = _tau_conversations()
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are i."}]
    i = 0
    while len(history) < n:
        if i % 25 == 0:
            history.append(
                {
                    "role": "user",
                    "content": f"Request {i}: rotate the API key handling in module {i}; do not push without asking.",
                }
            )
        if i % 25 == 12:  # a whole real conversation, its ids made unique to this session
            for message in rng.choice(conversations):
                message = dict(message)
                if message.get("tool_calls"):
                    message["tool_calls"] = [{**call, "id": f"{call['id']}_{i}"} for call in message["tool_calls"]]
                if message.get("tool_call_id"):
                    message["tool_call_id"] = f"{message['tool_call_id']}_{i}"
                history.append(message)
            i += 1
            continue
        call = f"call_{i}"
        kind = rng.choice(("read", "read", "shell", "shell", "search"))
        if kind == "read":
            path, text = rng.choice(files)
            args: dict[str, Any] = {"path": path}
            body = _read_output(path, text, rng)
        elif kind == "search":
            word = rng.choice(("key=", "token", "secret", "password", "http"))
            args = {"pattern": word, "path": "."}
            body = _grep_output(files, word, rng)
        else:
            command, body = _shell_output(rng, i)
            args = {"cmd": command}
            body += "\n[exit code 0]" if not body.endswith("]") else ""
        history.append(
            {
                "role": "assistant",
                "content": f"Step {i}: running {kind} ({json.dumps(args)[:80]}).",
                "tool_calls": [
                    {"id": call, "type": "function", "function": {"name": kind, "arguments": json.dumps(args)}}
                ],
            }
        )
        history.append({"role": "tool", "tool_call_id": call, "content": body})
        i += 1
    history = history[:n]
    while history[-1]["role"] == "tool" or history[-1].get("tool_calls"):
        history.pop()
    history.append({"role": "assistant", "content": "Done for now."})
    return history


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def in_process(history: list[dict[str, Any]], mode: str, reps: int, dirs: dict[str, str]) -> list[float]:
    from i_compact.worker import worker

    Path(dirs["config_dir"], "compact.json").write_text(json.dumps({"mode": mode, "cache": False}))
    budget_result = {"fits": False, "estimate": 10**6, "comparable_estimate": 10**6, "recommend_compact": True}
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        planned = worker.handle(
            {
                "id": 1,
                "event": "compact_plan",
                "paths": dirs,
                "data": {"history": history, "cut": None, "budget_result": budget_result},
            }
        )["data"]
        cut = planned["cut"]
        prepared = worker.handle(
            {
                "id": 2,
                "event": "before_compact",
                "paths": dirs,
                "workspace": "/w",
                "data": {"messages": history[1:cut], "cut": cut, "state": planned["state"], "model": "m", "budget": {}},
            }
        )
        times.append((time.perf_counter() - start) * 1000)
        assert "data" in prepared, prepared.get("error")
    return times


def through_process(history: list[dict[str, Any]], mode: str, reps: int, dirs: dict[str, str]) -> list[float]:
    from i_protocol.host import WorkerProcess

    exe = Path(sys.executable).parent / "i-compact"
    Path(dirs["config_dir"], "compact.json").write_text(json.dumps({"mode": mode, "cache": False}))
    env = {
        "PATH": os.environ.get("PATH", ""),
        "I_CONFIG_DIR": dirs["config_dir"],
        "I_DATA_DIR": dirs["data_dir"],
        "I_CACHE_DIR": dirs["cache_dir"],
        "I_RUNTIME_DIR": dirs["runtime_dir"],
    }
    if os.environ.get("PYTHONPATH"):  # --worker-src: the worker process runs the same sources
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    worker = WorkerProcess.spawn([str(exe)], env=env)
    budget_result = {"fits": False, "estimate": 10**6, "comparable_estimate": 10**6, "recommend_compact": True}
    times = []
    try:
        for _ in range(reps):
            start = time.perf_counter()
            planned = worker.call(
                "compact_plan", {"history": history, "cut": None, "budget_result": budget_result}, timeout=60
            )
            cut = planned["cut"]
            worker.call(
                "before_compact",
                {"messages": history[1:cut], "cut": cut, "state": planned["state"], "model": "m", "budget": {}},
                timeout=60,
            )
            times.append((time.perf_counter() - start) * 1000)
    finally:
        worker.close()
    return times


def budget_check(history: list[dict[str, Any]], reps: int) -> list[float] | None:
    """``context_budget`` of the budget worker on ``history`` (unanchored, with cut estimates)."""
    try:
        from i_budget.worker import context_budget
    except ImportError:
        return None
    data = {"model": "bench", "budget": {"context_window": 2_000_000}, "max_tokens": 32_000, "history": history}
    data |= {"tools": [], "pending_tool_calls": 0, "compact": True, "cut": None}
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        context_budget(data, None)
        times.append((time.perf_counter() - start) * 1000)
    return times


def build(kind: str, n: int, rev: str) -> list[dict[str, Any]]:
    """The history of ``kind`` (``synthetic`` or ``realistic``, ``-small`` for small payloads)."""
    if kind.startswith("realistic"):
        return make_realistic_history(n, rev=rev)
    return make_history(n, "small" if kind.endswith("small") else "large")


def child(args: argparse.Namespace) -> int:
    """Measure one row with whatever ``i_compact`` this interpreter imports; print the times."""
    history = build(args.kind, args.n, args.rev)
    with tempfile.TemporaryDirectory() as tmp:
        dirs = {k: os.path.join(tmp, k) for k in ("config_dir", "data_dir", "cache_dir", "runtime_dir")}
        for path in dirs.values():
            os.makedirs(path)
        runner = in_process if args.where == "inproc" else through_process
        in_process(history, args.route, 1, dirs)  # warm-up: imports, compiled patterns
        print(json.dumps(runner(history, args.route, args.reps, dirs)))
    return 0


def measure(variant: str | None, kind: str, n: int, route: str, where: str, reps: int, rev: str) -> list[float]:
    """Times of one row in a fresh interpreter (``variant``: a PYTHONPATH put first, or None)."""
    env = dict(os.environ)
    if variant:
        env["PYTHONPATH"] = variant + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    argv = [sys.executable, __file__, "--child", kind, str(n), route, where, str(reps), "--rev", rev]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    return list(json.loads(out.splitlines()[-1]))


def spread(times: list[float]) -> str:
    return f"{percentile(times, 0.1):.0f}-{percentile(times, 0.9):.0f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10,000 messages only, fewer repetitions")
    parser.add_argument("--payload", choices=("large", "small", "both"), default="both", help="synthetic result size")
    parser.add_argument("--worker-src", help="a PYTHONPATH of another i_compact/i_protocol to measure beside this tree")
    parser.add_argument("--rev", default="HEAD", help="the commit whose files the realistic history reads")
    parser.add_argument("--child", nargs=5, metavar=("KIND", "N", "ROUTE", "WHERE", "REPS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.kind, n, args.route, args.where, reps = args.child
        args.n, args.reps = int(n), int(reps)
        return child(args)
    args.rev = subprocess.run(
        ["git", "rev-parse", "--short", args.rev], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    sizes = [10000] if args.quick else [2500, 5000, 10000]
    reps = 7 if args.quick else 15
    kinds = {"large": ["synthetic"], "small": ["synthetic-small"], "both": ["synthetic", "synthetic-small"]}
    kinds_run = [*kinds[args.payload], "realistic"]
    variants: list[tuple[str, str | None]] = [("this tree", None)]
    if args.worker_src:
        variants.append(("--worker-src", args.worker_src))
    print(f"realistic history: this repository's files at {args.rev}; {reps} runs a row, each in a fresh interpreter")
    print(
        f"{'history':>15} {'messages':>8} {'MB':>6} {'route':>6} {'where':>8} {'worker':>12} {'median ms':>10} "
        f"{'p10-p90':>11} {'us/msg':>7} {'vs 300ms':>9}"
    )
    for n in sizes:
        for kind in kinds_run:
            history = build(kind, n, args.rev)
            megabytes = len(orjson.dumps(history)) / 1e6
            for route in ("local", "model"):
                for where in ("inproc", "process"):
                    if where == "process" and args.quick and route == "model":
                        continue
                    for label, variant in variants:
                        times = measure(variant, kind, n, route, where, reps, args.rev)
                        median = statistics.median(times)
                        print(
                            f"{kind:>15} {n:>8} {megabytes:>6.1f} {route:>6} {where:>8} {label:>12} {median:>10.1f} "
                            f"{spread(times):>11} {median * 1000 / n:>7.1f} {median / TARGET_MS:>8.2f}x"
                        )
            budget = budget_check(history, reps)
            if budget is not None:
                median = statistics.median(budget)
                print(
                    f"{kind:>15} {n:>8} {megabytes:>6.1f} {'budget':>6} {'inproc':>8} {'this tree':>12} {median:>10.1f} "
                    f"{spread(budget):>11} {median * 1000 / n:>7.1f}        - (context_budget, unanchored, compact)"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
