"""End-to-end: the real `i` process, real tools and sessions, the scripted model over real HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from i_protocol.testing import scaled
from i_scripted import ScriptedModel

HERE = Path(__file__).parent


@pytest.fixture
def env(dirs, tmp_path):
    """The environment of an `i` process: isolated directories, an API key to keep secret."""
    value = dict(os.environ)  # the dirs fixture has set the four I_*_DIR in it
    value.update(
        {
            "TEST_MODEL_KEY": "sk-test-secret-value-1234567890",
            "I_APPROVAL_TOKEN": "approval-secret",
        }
    )
    return value


def write_config(dirs, base_url: str, **extra) -> Path:
    config = {
        "protocol": "openai",
        "base_url": base_url,
        "model": "scripted-1",
        "api_key_env": "TEST_MODEL_KEY",
        "max_tokens": 512,
        "retries": 3,
        "timeout": scaled(20),
        "stream": False,
        "budget": {"context_window": 100000},
    }
    config.update(extra)
    path = dirs["config"] / "config.json"
    path.write_bytes(orjson.dumps(config))
    return path


def i(env, *args: str, input: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "i_core", *args],
        env=env,
        capture_output=True,
        text=True,
        input=input,
        stdin=subprocess.DEVNULL if input is None else None,  # nothing attached to a task
        timeout=scaled(timeout),
    )


def tool_call(name: str, arguments, call_id: str | None = None) -> dict:
    call = {"name": name, "arguments": arguments}
    if call_id:
        call["id"] = call_id
    return call


def tool_messages(request) -> list[dict]:
    return [m for m in request.body["messages"] if m.get("role") == "tool"]


def test_read_task_runs_the_read_tool_and_prints_the_answer(env, dirs, project):
    with ScriptedModel(
        [{"tool_calls": [tool_call("read", {"path": "README.md"})]}, {"text": "It is a demo project."}]
    ) as model:
        write_config(dirs, model.base_url)
        result = i(env, "-C", str(project), "read README.md and summarise it")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "It is a demo project."
    assert len(model.requests) == 2
    second = model.requests[1]
    assert "# demo project" in tool_messages(second)[0]["content"]
    assert second.headers.get("authorization") == "<redacted>"  # sent, but never recorded in clear
    assert "1 tool call(s) asked, 1 run, 0 refused (read)" in result.stderr


def test_session_name_twice_continues_the_conversation(env, dirs, project):
    with ScriptedModel([{"text": "first answer"}, {"text": "second answer"}]) as model:
        write_config(dirs, model.base_url)
        assert i(env, "-C", str(project), "--session-name", "s1", "hello").returncode == 0
        again = i(env, "-C", str(project), "--session-name", "s1", "and again")
    assert again.returncode == 0, again.stderr
    sent = [m.get("content") for m in model.requests[1].body["messages"]]
    assert sent[1:] == ["hello", "first answer", "and again"]
    saved = orjson.loads((project / ".i" / "sessions" / "s1.json").read_bytes())
    assert [m["content"] for m in saved["messages"][1:]] == ["hello", "first answer", "and again", "second answer"]
    text = (project / ".i" / "sessions" / "s1.json").read_text()
    assert "sk-test-secret-value" not in text


def test_streaming_prints_text_as_it_arrives(env, dirs, project):
    with ScriptedModel([{"text": "streamed words arrive in pieces"}]) as model:
        write_config(dirs, model.base_url, stream=True)
        result = i(env, "-C", str(project), "hi")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "streamed words arrive in pieces"
    assert model.requests[0].body["stream"] is True


def test_anthropic_protocol_end_to_end(env, dirs, project):
    with ScriptedModel([{"tool_calls": [tool_call("read", {"path": "README.md"})]}, {"text": "done"}]) as model:
        write_config(dirs, model.root_url, protocol="anthropic")
        result = i(env, "-C", str(project), "read it")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "done"
    assert model.requests[0].path == "/v1/messages"
    blocks = model.requests[1].body["messages"][-1]["content"]
    assert blocks[0]["type"] == "tool_result" and "# demo project" in json.dumps(blocks[0])


def session_bytes(project: Path) -> bytes:
    return (project / ".i" / "sessions" / "s.json").read_bytes()


@pytest.mark.parametrize(
    "step, message",
    [
        ({"raw_body": b"{not json"}, "a body that is not JSON"),
        ({"redirect": "http://127.0.0.2:9/elsewhere"}, "redirects are not followed"),
        ({"status": 400, "error_message": "model 'scripted-1' does not exist"}, "model 'scripted-1' does not exist"),
    ],
)
def test_model_failures_are_clear_and_keep_the_last_checkpoint(env, dirs, project, step, message):
    with ScriptedModel([{"text": "ok"}, step]) as model:
        write_config(dirs, model.base_url, retries=0)
        assert i(env, "-C", str(project), "--session-name", "s", "one").returncode == 0
        before = session_bytes(project)
        result = i(env, "-C", str(project), "--session-name", "s", "two")
    assert result.returncode == 4, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert session_bytes(project) == before


def test_500_three_times_then_200_retries_and_announces_each_retry(env, dirs, project, tmp_path, write_manifest):
    log = tmp_path / "events.jsonl"
    manifest = write_manifest(
        {
            "hooks": [
                {
                    "events": ["request_retry", "before_request", "after_response"],
                    "exec": [sys.executable, str(HERE / "workers" / "recorder_worker.py"), str(log)],
                }
            ]
        }
    )
    steps = [{"status": 500, "error_message": "overloaded"}] * 3 + [{"text": "finally"}]
    with ScriptedModel(steps) as model:
        write_config(dirs, model.base_url, retries=3)
        result = i(env, "-C", str(project), "--manifest", str(manifest), "go")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "finally"
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["event"] for e in events] == [
        "before_request",
        "request_retry",
        "request_retry",
        "request_retry",
        "after_response",
    ]
    assert [e["data"]["attempt"] for e in events if e["event"] == "request_retry"] == [1, 2, 3]


def test_every_event_the_core_sends_has_the_data_of_its_type_in_i_protocol_events(
    env, dirs, project, tmp_path, write_manifest
):
    log = tmp_path / "events.jsonl"
    observed = [
        "session_load", "system_prompt", "user_input", "before_turn", "before_request", "request_retry",
        "after_response", "before_tool", "tool_approval", "after_tool", "before_save", "after_save", "finish",
        "tools_list",
    ]  # fmt: skip
    recorder = [sys.executable, str(HERE / "workers" / "recorder_worker.py"), str(log)]
    manifest = write_manifest({"hooks": [{"events": observed, "exec": recorder}]})
    steps = [
        {"status": 500, "error_message": "overloaded"},
        {"tool_calls": [tool_call("read", {"path": "README.md"})]},
        {"text": "done"},
        {"text": "again"},
    ]
    with ScriptedModel(steps) as model:
        write_config(dirs, model.base_url, retries=2)
        args = ("-C", str(project), "--manifest", str(manifest), "--session-name", "typed")
        assert i(env, *args, "first").returncode == 0
        result = i(env, *args, "second")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert set(observed) <= {e["event"] for e in events}
    assert [(e["event"], e["problem"]) for e in events if e["problem"]] == []


def test_model_that_never_answers_times_out(env, dirs, project):
    with ScriptedModel([{"delay": 30, "text": "late"}]) as model:
        write_config(dirs, model.base_url, retries=0, timeout=1)
        result = i(env, "-C", str(project), "hi")
    assert result.returncode == 4 and "tim" in result.stderr.lower()


def test_response_over_the_cap_is_refused(env, dirs, project):
    with ScriptedModel([{"body_bytes": 49 * 1024 * 1024}]) as model:
        write_config(dirs, model.base_url, retries=0)
        result = i(env, "-C", str(project), "hi")
    assert result.returncode == 4 and "exceeds the 50331648 byte cap" in result.stderr


def test_unknown_tool_and_bad_json_arguments_go_back_to_the_model(env, dirs, project):
    with ScriptedModel(
        [
            {"tool_calls": [tool_call("teleport", {"to": "mars"}), tool_call("read", "{not json")]},
            {"text": "understood"},
        ]
    ) as model:
        write_config(dirs, model.base_url)
        result = i(env, "-C", str(project), "go")
    assert result.returncode == 0, result.stderr
    results = tool_messages(model.requests[1])
    assert "unknown tool 'teleport'" in results[0]["content"]
    assert "not valid JSON" in results[1]["content"]


def test_a_tool_call_id_repeated_in_one_reply_is_renamed_not_fatal(env, dirs, project):
    with ScriptedModel(
        [{"tool_calls": [tool_call("read", {"path": "a"}, "same"), tool_call("read", {"path": "b"}, "same")]},
         {"text": "ok"}]
    ) as model:  # fmt: skip
        write_config(dirs, model.base_url)
        result = i(env, "-C", str(project), "--session-name", "s", "go")
    assert result.returncode == 0, result.stderr
    messages = orjson.loads((project / ".i" / "sessions" / "s.json").read_bytes())["messages"]
    (asked,) = [m for m in messages if m.get("tool_calls")]
    assert [c["id"] for c in asked["tool_calls"]] == ["same", "same_2"]
    assert asked["tool_calls"][1]["_original_id"] == "same"
    assert [m["tool_call_id"] for m in messages if m["role"] == "tool"] == ["same", "same_2"]
    sent = model.requests[1].body["messages"]
    assert [c["id"] for c in sent[2]["tool_calls"]] == ["same", "same_2"] and "_original_id" not in str(sent)


def test_non_interactive_run_refuses_tools_that_need_approval(env, dirs, project):
    with ScriptedModel(
        [{"tool_calls": [tool_call("write", {"path": "out.txt", "content": "x"})]}, {"text": "ok"}]
    ) as model:
        write_config(dirs, model.base_url)
        result = i(env, "-C", str(project), "write it")
    assert result.returncode == 0, result.stderr
    assert "needs the user's approval" in tool_messages(model.requests[1])[0]["content"]
    assert not (project / "out.txt").exists()


def test_yolo_runs_tools_and_shell_never_sees_the_approval_token(env, dirs, project):
    steps = [
        {
            "tool_calls": [
                tool_call("write", {"path": "out.txt", "content": "written"}),
                tool_call("shell", {"command": "echo token=${I_APPROVAL_TOKEN:-absent}"}),
            ]
        },
        {"text": "ok"},
    ]
    with ScriptedModel(steps) as model:
        write_config(dirs, model.base_url)
        result = i(env, "-C", str(project), "--yolo", "write it")
    assert result.returncode == 0, result.stderr
    assert (project / "out.txt").read_text() == "written"
    assert "token=absent" in tool_messages(model.requests[1])[1]["content"]


def test_approval_hook_can_deny_even_with_yolo_and_failures_never_allow(env, dirs, project, write_manifest):
    (dirs["config"] / "approval.json").write_text('{"deny_tools":["write"]}')
    approval = [sys.executable, "-m", "i_core", "--runtime", "worker", "approval"]
    manifest = write_manifest({"hooks": [{"events": ["tool_approval"], "exec": approval}]})
    with ScriptedModel(
        [{"tool_calls": [tool_call("write", {"path": "o.txt", "content": "x"})]}, {"text": "ok"}]
    ) as model:
        write_config(dirs, model.base_url)
        result = i(env, "-C", str(project), "--yolo", "--manifest", str(manifest), "go")
    assert result.returncode == 0, result.stderr
    assert "denied by the approval policy" in tool_messages(model.requests[1])[0]["content"]
    (dirs["config"] / "approval.json").write_text('{"mode":"bogus"}')
    with ScriptedModel(
        [{"tool_calls": [tool_call("write", {"path": "o.txt", "content": "x"})]}, {"text": "ok"}]
    ) as model:
        write_config(dirs, model.base_url)
        result = i(env, "-C", str(project), "--yolo", "--manifest", str(manifest), "go")
    assert "approval policy failed" in tool_messages(model.requests[1])[0]["content"]
    assert not (project / "o.txt").exists()


def test_truncated_session_file_is_an_error_and_left_untouched(env, dirs, project):
    path = project / ".i" / "sessions" / "s.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"format":"i-session/1","messages":[{"role":"sys')
    with ScriptedModel([{"text": "never"}]) as model:
        write_config(dirs, model.base_url)
        result = i(env, "-C", str(project), "--session-name", "s", "hi")
    assert result.returncode == 3 and "corrupt or truncated" in result.stderr
    assert path.read_bytes() == b'{"format":"i-session/1","messages":[{"role":"sys'
    assert model.requests == []


def test_session_of_another_workspace_is_refused(env, dirs, project, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    session = tmp_path / "shared.json"
    with ScriptedModel([{"text": "one"}, {"text": "never"}]) as model:
        write_config(dirs, model.base_url)
        assert i(env, "-C", str(project), "--session", str(session), "hi").returncode == 0
        result = i(env, "-C", str(other), "--session", str(session), "hi")
    assert result.returncode == 3 and "belongs to another workspace" in result.stderr
    assert len(model.requests) == 1


def test_context_snapshot_then_delta_then_nothing(env, dirs, project, tmp_path, write_manifest):
    entries = tmp_path / "entries.json"
    entries.write_text('{"build": "make"}')
    log = tmp_path / "log.jsonl"
    worker = [sys.executable, str(HERE / "workers" / "recorder_worker.py"), str(log), "context", str(entries)]
    manifest = write_manifest({"hooks": [{"events": ["before_turn"], "exec": worker}]})
    with ScriptedModel([{"text": "a"}, {"text": "b"}, {"text": "c"}]) as model:
        write_config(dirs, model.base_url)
        assert i(env, "-C", str(project), "--manifest", str(manifest), "--session-name", "s", "one").returncode == 0
        entries.write_text('{"build": "make all", "lint": "ruff"}')
        assert i(env, "-C", str(project), "--manifest", str(manifest), "--session-name", "s", "two").returncode == 0
        assert i(env, "-C", str(project), "--manifest", str(manifest), "--session-name", "s", "three").returncode == 0
    contexts = [m for m in model.requests[2].body["messages"] if "<context" in str(m.get("content"))]
    assert len(contexts) == 2
    assert 'kind="snapshot"' in contexts[0]["content"] and '"make"' in contexts[0]["content"]
    assert 'kind="delta"' in contexts[1]["content"] and '"make all"' in contexts[1]["content"]
    assert "untrusted" in contexts[0]["content"]
    # The system prompt and the prefix were never rewritten: request 1's messages are a prefix of request 3's.
    first = model.requests[0].body["messages"]
    assert model.requests[2].body["messages"][: len(first)] == first


def test_a_turns_first_request_ends_with_the_users_words_after_the_context_snapshot(
    env, dirs, project, tmp_path, write_manifest
):
    entries = tmp_path / "entries.json"
    entries.write_text('{"build": "make"}')
    log = tmp_path / "log.jsonl"
    worker = [sys.executable, str(HERE / "workers" / "recorder_worker.py"), str(log), "context", str(entries)]
    manifest = write_manifest({"hooks": [{"events": ["before_turn"], "exec": worker}]})
    with ScriptedModel([{"text": "a"}, {"text": "b"}]) as model:
        write_config(dirs, model.base_url)
        assert i(env, "-C", str(project), "--manifest", str(manifest), "--session-name", "s", "one").returncode == 0
        entries.write_text('{"build": "make all"}')
        assert i(env, "-C", str(project), "--manifest", str(manifest), "--session-name", "s", "two").returncode == 0
    first, second = (request.body["messages"] for request in model.requests)
    assert first[-1] == {"role": "user", "content": "one"} and 'kind="snapshot"' in first[-2]["content"]
    assert second[-1] == {"role": "user", "content": "two"} and 'kind="delta"' in second[-2]["content"]
    assert second[: len(first)] == first  # what was checkpointed is never rewritten
    turns = [json.loads(line) for line in log.read_text().splitlines()]
    # before_turn still receives the request as the last message.
    assert [t["last_message"]["content"] for t in turns if t["event"] == "before_turn"] == ["one", "two"]


def test_exit_code_for_configuration_errors(env, dirs, project):
    (dirs["config"] / "config.json").write_text('{"base_url":"http://127.0.0.1:1/v1","model":"m","api_key":"sk-x"}')
    result = i(env, "-C", str(project), "hi")
    assert result.returncode == 3 and "never store credentials" in result.stderr


def test_without_a_tty_each_stdin_line_is_one_request_in_the_same_session(env, dirs, project):
    with ScriptedModel([{"text": "answer one"}, {"text": "answer two"}]) as model:
        write_config(dirs, model.base_url)
        result = i(env, "-C", str(project), input="first line\n\nsecond line\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "answer one\nanswer two\n"
    assert [m["content"] for m in model.requests[1].body["messages"][1:]] == ["first line", "answer one", "second line"]
    assert "session:" in result.stderr  # where to continue from is said on stderr


def test_snapshot_units():
    from i_core.snapshot import context_updates, restore_snapshots

    empty = {"memory": {"entries": {}, "revision": "r0"}}
    messages, state = context_updates(empty, {})
    assert messages == [] and state["memory"]["revision"] == "r0"
    messages, state = context_updates({"memory": {"entries": {"a": "1"}, "revision": "r1"}}, state)
    assert len(messages) == 1 and messages[0]["_context"]["kind"] == "delta"
    again, _ = context_updates({"memory": {"entries": {"a": "1"}, "revision": "r1"}}, state)
    assert again == []
    removed, state = context_updates({"memory": {"entries": {}, "revision": "r2"}}, state)
    assert '"remove": [\n    "a"\n  ]' in removed[0]["content"]
    restored = restore_snapshots(
        [{"role": "system", "content": "s"}], {"skills": {"entries": {"x": 1}, "revision": "q"}}
    )
    assert restored[-1]["_context"] == {"source": "skills", "kind": "snapshot", "revision": "q"}
    assert restore_snapshots([{"role": "system", "content": "s"}], state) == [{"role": "system", "content": "s"}]
