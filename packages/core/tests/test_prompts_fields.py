"""prompts.json's fields: ``compact`` for a before_compact prompts hook registered by hand, and
unknown keys refused by name (the real bundled worker, and the core's hook chain)."""

from __future__ import annotations

import json
import sys

import pytest

from i_core.pool import worker_environment
from i_protocol import ErrorFrame, paths_from_env
from i_protocol.host import WorkerProcess

PROMPTS = [sys.executable, "-m", "i_core", "--runtime", "worker", "prompts"]


@pytest.fixture
def prompts(dirs):
    worker = WorkerProcess.spawn(PROMPTS, env=worker_environment(paths_from_env()))
    yield worker
    worker.close()


def prepare_data(project) -> dict:
    return {"messages": [{"role": "user", "content": "old"}], "cut": 3, "state": {}, "workspace": str(project)}


def test_compact_sets_the_prompt_of_before_compact(prompts, dirs, project):
    (dirs["config"] / "compact.txt").write_text("Summarise the work on {{workspace}} as task state.")
    (dirs["config"] / "prompts.json").write_text('{"system": "system.txt", "compact": "compact.txt"}')
    data = prepare_data(project)
    answer = prompts.call("before_compact", data, context={"workspace": str(project)})
    assert answer == {**data, "prompt": f"Summarise the work on {project} as task state."}


def test_without_compact_before_compact_passes_unchanged(prompts, dirs, project):
    (dirs["config"] / "prompts.json").write_text("{}")
    data = prepare_data(project)
    assert prompts.call("before_compact", data, context={"workspace": str(project)}) == data


@pytest.mark.parametrize(("content", "message"), [("", "is empty"), ("x" * 32001, "longer than 32000 characters")])
def test_the_compact_prompt_has_the_system_prompts_limits(prompts, dirs, project, content, message):
    (dirs["config"] / "compact.txt").write_text(content)
    (dirs["config"] / "prompts.json").write_text('{"compact": "compact.txt"}')
    with pytest.raises(ErrorFrame, match=f"compact prompt .*{message}"):
        prompts.call("before_compact", prepare_data(project))


@pytest.mark.parametrize("event", ["system_prompt", "before_compact"])
def test_an_unknown_key_in_prompts_json_is_an_error_naming_it(prompts, dirs, event):
    (dirs["config"] / "prompts.json").write_text('{"system": "s.txt", "sytem_prompt": "typo.txt"}')
    with pytest.raises(ErrorFrame) as caught:
        prompts.call(event, {"prompt": "", "messages": []})
    assert "sytem_prompt" in str(caught.value) and "prompts.json" in str(caught.value)
    assert "known fields: system, compact" in str(caught.value)


def test_a_hand_registered_prompts_hook_feeds_the_compactor_chain(run_i, dirs, project, write_manifest):
    """Through the core's hook chain: the prompts hook (before_compact), then a compactor that sees
    the prompt it set, as i-compact does when its compact.json names none."""
    (dirs["config"] / "compact.txt").write_text("House summary rules for {{workspace}}.")
    (dirs["config"] / "prompts.json").write_text('{"compact": "compact.txt"}')
    echo = project.parent / "echo_prompt.py"
    echo.write_text(
        "import sys\nfrom i_protocol import Worker\nworker = Worker('echo', '1')\n"
        "@worker.hook('before_compact')\ndef prepare(data, request):\n"
        "    return {**data, 'seen_prompt': data.get('prompt')}\nsys.exit(worker.main([]))\n"
    )
    manifest = write_manifest(
        {
            "hooks": [
                {"events": ["system_prompt", "before_compact"], "exec": PROMPTS},
                {"events": ["before_compact"], "exec": [sys.executable, str(echo)]},
            ]
        }
    )
    data = json.dumps(prepare_data(project)).encode()
    result = run_i("--runtime", "hook", "before_compact", "-C", str(project), "--manifest", str(manifest), input=data)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["seen_prompt"] == f"House summary rules for {project.resolve()}."
