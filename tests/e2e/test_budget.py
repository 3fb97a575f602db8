"""The core with the real budget worker."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson

from i_scripted import ScriptedModel, reference_tokens


def test_budget_exhausted_without_compactor_fails_before_any_http(i, write_config, plugins, project):
    plugins("budget")
    with ScriptedModel([{"text": "never"}]) as model:
        write_config(model.base_url, max_tokens=100, budget={"context_window": 1024})
        result = i("-C", str(project), "x" * 5000)
    assert result.returncode == 5, result.stderr
    assert "no compactor is installed" in result.stderr
    assert model.requests == []


def test_tool_output_is_cut_to_the_budget_with_a_marker(i, write_config, plugins, project):
    (project / "big.txt").write_text("line of text\n" * 20000)
    plugins("budget")
    with ScriptedModel(
        [{"tool_calls": [{"name": "read", "arguments": {"path": "big.txt", "limit": 20000}}]}, {"text": "ok"}]
    ) as model:
        write_config(model.base_url, budget={"context_window": 20000, "tool_output_ratio": 0.05})
        result = i("-C", str(project), "read big.txt")
    assert result.returncode == 0, result.stderr
    output = next(m for m in model.requests[1].body["messages"] if m["role"] == "tool")["content"]
    assert "cut by the tool-output budget" in output
    # The cap is 1000 tokens (20000 x 0.05). The first request's usage taught the budget how dense
    # this text is, so the cut is at ~1000 real tokens, not at 1000 bytes.
    kept = output[: output.index("\n[... ")]
    assert 600 <= reference_tokens(kept) <= 1000  # conservative: never over the cap
    assert len(kept.encode()) > 2000


def test_usage_anchor_is_used_on_the_next_request(i, write_config, plugins, project, dirs):
    plugins("budget")
    steps = [
        {"text": "one", "usage": {"prompt_tokens": 900, "completion_tokens": 10, "total_tokens": 910}},
        {"text": "two"},
    ]
    with ScriptedModel(steps) as model:
        write_config(model.base_url)
        assert i("-C", str(project), "--session-name", "s", "hello").returncode == 0
        import orjson

        saved = orjson.loads((project / ".i" / "sessions" / "s.json").read_bytes())
        anchor = saved["meta"]["usage_anchor"]
        assert anchor["input_tokens"] == 900 and anchor["output_tokens"] == 10
        assert anchor["prefix_fingerprint"].startswith("sha256:")
        result = i("-C", str(project), "--session-name", "s", "again")
    assert result.returncode == 0, result.stderr


PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 200


def test_an_image_without_a_planned_cost_is_left_out_and_sent_once_its_cost_is_set(i, project, dirs):
    """The config `i --runtime init` writes (no image_tokens), the standard profile: the turn completes,
    the model reads that the image was left out, and the image goes out once image_tokens is set."""
    (project / "shot.png").write_bytes(PNG)
    steps = [
        {"tool_calls": [{"name": "view_image", "arguments": {"path": "shot.png"}}]},
        {"text": "it was left out"},
        {"text": "now I see it"},
    ]
    with ScriptedModel(steps, context_window=32_000) as model:
        init = i("--runtime", "init", "--base-url", model.base_url, "--model", "scripted-1")
        assert init.returncode == 0, init.stderr
        config = orjson.loads((dirs["config"] / "config.json").read_bytes())
        assert "image_tokens" not in config["budget"]
        config["budget"].setdefault("context_window", 32_000)  # what init asks the user to set
        config["stream"] = False
        (dirs["config"] / "config.json").write_bytes(orjson.dumps(config))
        result = i("-C", str(project), "--session-name", "s", "--json", "look at shot.png")
        assert result.returncode == 0, result.stderr
        assert orjson.loads(result.stdout)["images_left_out"] == 1
        assert result.stderr.count("Set budget.image_tokens") == 1
        assert b"data:image/png" not in orjson.dumps(model.requests[1].body)
        config["budget"]["image_tokens"] = 1600
        (dirs["config"] / "config.json").write_bytes(orjson.dumps(config))
        again = i("-C", str(project), "--session-name", "s", "and now?")
    assert again.returncode == 0, again.stderr
    assert b"data:image/png" in orjson.dumps(model.requests[2].body)


def test_a_missing_context_window_is_the_budget_workers_error(i, write_config, plugins, project):
    plugins("budget")
    with ScriptedModel([{"text": "never"}]) as model:
        write_config(model.base_url, budget={})
        result = i("-C", str(project), "hello")
    assert result.returncode == 6, result.stderr
    assert "budget.context_window is required" in result.stderr and "i --runtime init" in result.stderr
    assert model.requests == []


BYTE_BUDGET = Path(__file__).parents[2] / "packages" / "core" / "tests" / "workers" / "byte_budget.py"
REDUCTION = "context_budget: a real reduction stays a reduction"


def test_check_budget_passes_the_real_budget_and_fails_one_whose_estimates_cannot_reduce(i):
    real = i("--runtime", "check", "budget", "--json")
    report = orjson.loads(real.stdout)
    assert real.returncode == 0 and report["passed"], real.stdout + real.stderr
    assert next(c for c in report["checks"] if c["name"] == REDUCTION)["passed"]
    bad = i("--runtime", "check", "budget", "--json", "--exec", sys.executable, str(BYTE_BUDGET))
    assert bad.returncode == 6, bad.stderr
    check = next(c for c in orjson.loads(bad.stdout)["checks"] if c["name"] == REDUCTION)
    assert not check["passed"] and "would fail not_reducing" in check["detail"]


STDLIB_COMPACTOR = Path(__file__).parents[2] / "examples" / "stdlib_compactor" / "compactor.py"
_TEXT = "the parser keeps each value it reads and the log reports every unknown key to the user again"
_WORDS = _TEXT.split()


def _reply(n: int, words: int) -> str:
    """English at about 4.7 bytes per token (the scripted model's count): 2000 words, 9 KB."""
    return " ".join(_WORDS[(n * 5 + k * k + k) % len(_WORDS)] for k in range(words))


def test_a_silent_budget_whose_estimates_cannot_pass_the_reduction_check_is_named_in_one_line(
    i, write_config, plugins, project, dirs
):
    # Two third-party workers, both silent to hello: a budget that counts a byte per token beyond
    # its anchor (as i-worker-budget 0.1.0 did) and the stdlib compactor of examples/.
    plugins("compact")
    bindings = {
        "budget": {"exec": [sys.executable, str(BYTE_BUDGET)]},
        "compact": {"exec": [sys.executable, str(STDLIB_COMPACTOR)]},
    }
    (dirs["config"] / "bindings.json").write_bytes(orjson.dumps(bindings))
    session = project / ".i" / "sessions" / "s.json"
    # The compactor keeps the last exchange: the candidate is about a third of the history's bytes,
    # so a byte per token puts it over the count real usage anchored for the whole history.
    replies = [{"text": _reply(n, 3000 if n == 3 else 2000)} for n in range(8)]
    with ScriptedModel(replies) as model:
        write_config(model.base_url, max_tokens=4096, budget={"context_window": 100000})
        for n in range(4):
            turn = i("-C", str(project), "--session-name", "s", f"turn {n}: go on")
            assert turn.returncode == 0, turn.stderr
        before, sent = session.read_bytes(), len(model.requests)
        forced = i("--runtime", "compact", "-C", str(project), "--session-name", "s")
        # The same budget in a turn: it recommends compacting by bytes, and the candidate fits.
        write_config(model.base_url, max_tokens=4096, budget={"context_window": 30000})
        automatic = i("-C", str(project), "--session-name", "s", "turn 4: go on")
        assert len(model.requests) == sent, (forced.stdout, forced.stderr, automatic.stderr)  # none reached the model
    for run in (forced, automatic):
        lines = [line for line in run.stderr.splitlines() if not line.startswith("[i] ")]
        assert run.returncode == 6, run.stdout + run.stderr
        assert len(lines) == 1, run.stderr
        line = lines[0]
        assert f"worker budget ({sys.executable} {BYTE_BUDGET})" in line
        assert "silent to hello, no package or version known" in line
        assert "its estimates cannot pass the token-reduction check" in line and "not_reducing" not in line
        assert "the last checkpoint is unchanged" in line
    assert session.read_bytes() == before
    assert not (project / ".i" / "sessions" / "s.precompact.json").exists()


def test_the_servers_exact_count_is_the_first_requests_estimate(i, write_config, plugins, project):
    """budget.exact_count "tokenize": the first request is estimated at the server's own count
    (llama.cpp /apply-template + /tokenize), not at the byte count several times larger."""
    plugins("budget")
    estimates = {}
    for mode in ("off", "tokenize"):
        with ScriptedModel([{"text": "ok"}], context_window=100_000, context_style="llamacpp") as model:
            write_config(model.base_url, budget={"context_window": 100_000, "exact_count": mode})
            result = i("-C", str(project), "Please summarise the notes of this project in two sentences.")
            served = model.requests[0]
        assert result.returncode == 0, result.stderr
        from i_scripted import prompt_tokens

        estimates[mode] = (
            int(result.stderr.rsplit("budget estimate ", 1)[1].split()[0]),
            prompt_tokens("openai", served.body),
        )
    estimate, served = estimates["tokenize"]
    assert estimate == served
    assert estimates["off"][0] > 2 * estimates["off"][1]  # the byte estimate, side by side
