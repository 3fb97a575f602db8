"""The hard cases of the core (issue "[3/12] The hard cases", items 2, 4, 9 and 11), through real processes.

- a total deadline on every model request, against a real trickling HTTP server on loopback;
- credentials refused anywhere in config.json (nested extra_body/budget keys, base_url query);
- ordinary OS errors and unexpected exceptions as one ``i: ...`` line with a documented exit code;
- no debris: stale atomic-write temporaries cleaned, no lock of a session that was never saved,
  and the summary names a session file only when it exists.

The only timed assertions are "returned within the documented deadline + generous slack".
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
import pytest

from i_core.errors import ConfigError
from i_core.settings import parse_api_config
from i_core.transport import Transport, TransportError
from i_protocol.testing import scaled
from i_scripted import ScriptedModel

KEY_HINT = "never store credentials in the config; put the key in an environment variable and name it in api_key_env"
BUG_HINT = "(this is a bug: please report it)"


# --- helpers -------------------------------------------------------------------------------------


def run_i(
    env: dict[str, str],
    *args: str,
    input: bytes | None = None,
    timeout: float = 90,
    extra: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run the real `i` command (stdin /dev/null unless ``input``) under a scaled guard."""
    return subprocess.run(
        [sys.executable, "-m", "i_core", *args],
        env={**env, **(extra or {})},
        input=input,
        stdin=subprocess.DEVNULL if input is None else None,
        capture_output=True,
        timeout=scaled(timeout),
    )


@pytest.fixture
def env(dirs: dict[str, Path]) -> dict[str, str]:
    value = dict(os.environ)  # the dirs fixture has set the four I_*_DIR in it
    value.pop("I_DEBUG", None)
    return value


def write_config(dirs: dict[str, Path], base_url: str, **extra: Any) -> Path:
    config = {
        "protocol": "openai",
        "base_url": base_url,
        "model": "scripted-1",
        "max_tokens": 256,
        "retries": 0,
        "timeout": scaled(20),
        "stream": False,
    }
    config.update(extra)
    path = dirs["config"] / "config.json"
    path.write_bytes(orjson.dumps(config))
    return path


def one_error_line(result: subprocess.CompletedProcess[bytes]) -> str:
    """The single ``i: ...`` line of stderr (a summary line ``[i] ...`` may precede it)."""
    stderr = result.stderr.decode()
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if not line.startswith("[i] ")]
    assert len(lines) == 1 and lines[0].startswith("i: "), stderr
    return lines[0]


def dead_pid() -> int:
    """The pid of a process that has exited (and was reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


class Trickle:
    """A loopback HTTP server that sends a 200 and its headers at once (or, with ``headers_too``, the
    status line itself), then one byte every ``interval`` seconds, for as long as the client reads."""

    def __init__(
        self, *, stream: bool, interval: float = 1.0, headers_too: bool = False, then_silent_after: int | None = None
    ) -> None:
        self.requests = 0
        self.stopping = threading.Event()
        trickle = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                self.rfile.read(length)
                trickle.requests += 1
                content_type = "text/event-stream" if stream else "application/json"
                head = (f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: 100000\r\n\r\n").encode()
                try:
                    if headers_too:
                        body = head
                    else:
                        self.wfile.write(head)
                        self.wfile.flush()
                        # SSE: empty lines (no event is ever completed); JSON: whitespace.
                        body = (b"\n" if stream else b" ") * 100000
                    for sent, byte in enumerate(body):
                        if then_silent_after is not None and sent >= then_silent_after:
                            trickle.stopping.wait(120)
                            return
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        if trickle.stopping.wait(interval):
                            return
                except OSError:  # the client gave up: that is the point
                    return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> Trickle:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()


# --- 2. a total deadline on every model request ----------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
def test_a_trickling_server_cannot_keep_i_past_its_timeout(env, dirs, project, stream: bool) -> None:
    with Trickle(stream=stream) as server:
        write_config(dirs, server.base_url, timeout=3, retries=0, stream=stream)
        result = run_i(env, "-C", str(project), "hello")
    assert result.returncode == 4, result.stderr
    line = one_error_line(result)
    assert "the model request did not finish within 3 s (timeout in config.json)" in line
    assert server.requests == 1


def test_the_deadline_covers_headers_that_trickle_too() -> None:
    with (
        Trickle(stream=False, headers_too=True) as server,
        Transport(timeout=2, retries=0) as transport,
        pytest.raises(TransportError, match="did not finish within 2 s"),
    ):
        transport.post(server.base_url + "/chat/completions", {"m": 1}, {}, stream=False, on_retry=lambda *_: None)


def test_an_expired_deadline_is_retried_when_retries_allow() -> None:
    retries: list[tuple[int, str]] = []
    with (
        Trickle(stream=True) as server,
        Transport(timeout=1.5, retries=1, sleep=lambda _s: None) as transport,
        pytest.raises(TransportError, match=r"did not finish within 1.5 s .*\(gave up after 2 attempts\)"),
    ):
        transport.post(
            server.base_url + "/chat/completions",
            {"m": 1},
            {},
            stream=True,
            on_retry=lambda n, why: retries.append((n, why)),
            on_event=lambda _e: None,
        )
    assert retries == [(1, "timed out")]
    assert server.requests == 2


def test_a_stream_that_goes_silent_fails_at_the_idle_limit() -> None:
    with (
        Trickle(stream=True, interval=0.05, then_silent_after=3) as server,
        Transport(timeout=scaled(60), idle_timeout=1, retries=0) as transport,
        pytest.raises(TransportError, match="the model stream sent nothing for 1 s"),
    ):
        transport.post(
            server.base_url + "/chat/completions",
            {"m": 1},
            {},
            stream=True,
            on_retry=lambda *_: None,
            on_event=lambda _e: None,
        )


def test_the_idle_limit_defaults_to_the_timeout_capped_at_300_s() -> None:
    assert Transport(timeout=scaled(600)).idle_timeout == 300
    assert Transport(timeout=3).idle_timeout == 3


def test_a_normal_exchange_still_works_streamed_and_not(env, dirs, project) -> None:
    for stream in (True, False):
        with ScriptedModel([{"text": "all good"}]) as model:
            write_config(dirs, model.base_url, timeout=5, stream=stream)
            result = run_i(env, "-C", str(project), "--quiet", "hi")
        assert result.returncode == 0, result.stderr
        assert b"all good" in result.stdout


# --- 4. no literal credential anywhere in config.json ------------------------------------------------


BASE = {"protocol": "openai", "base_url": "http://127.0.0.1:8080/v1", "model": "m"}


@pytest.mark.parametrize(
    ("extra", "where"),
    [
        ({"extra_body": {"api_key": "sk-LITERAL"}}, "extra_body.api_key"),
        ({"extra_body": {"apiKey": "sk-LITERAL"}}, "extra_body.apiKey"),
        ({"extra_body": {"X-Api-Key": "sk-LITERAL"}}, "extra_body.X-Api-Key"),
        ({"extra_body": {"headers": {"Authorization": "Bearer sk-LITERAL"}}}, "extra_body.headers.Authorization"),
        ({"extra_body": {"options": [{"access-token": "sk-LITERAL"}]}}, "extra_body.options[0].access-token"),
        ({"extra_body": {"a": {"b": {"c": {"Client_Secret": "sk-LITERAL"}}}}}, "extra_body.a.b.c.Client_Secret"),
        ({"extra_body": {"TOKEN": "sk-LITERAL"}}, "extra_body.TOKEN"),
        # Names the secret table also masks (one name rule): refused since they hold a secret.
        ({"extra_body": {"SECRET_KEY": "sk-LITERAL"}}, "extra_body.SECRET_KEY"),
        ({"extra_body": {"AWS_SECRET_ACCESS_KEY": "sk-LITERAL"}}, "extra_body.AWS_SECRET_ACCESS_KEY"),
        ({"extra_body": {"DB_PASS": "sk-LITERAL"}}, "extra_body.DB_PASS"),
        ({"extra_body": {"pwd": "sk-LITERAL"}}, "extra_body.pwd"),
        ({"extra_body": {"bearer": "sk-LITERAL"}}, "extra_body.bearer"),
        ({"extra_body": {"password": "sk-LITERAL"}}, "extra_body.password"),
        ({"budget": {"secret": "sk-LITERAL"}}, "budget.secret"),
        ({"budget": {"auth": {"refresh_token": "sk-LITERAL"}}}, "budget.auth"),
        ({"API-KEY": "sk-LITERAL"}, "API-KEY"),
        ({"apiKey": "sk-LITERAL"}, "apiKey"),
        ({"access_token": "sk-LITERAL"}, "access_token"),
    ],
)
def test_credential_looking_fields_are_refused_at_any_depth(extra: dict[str, Any], where: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_api_config({**BASE, **extra}, "cfg.json")
    message = str(caught.value)
    assert message.startswith("cfg.json: ") and repr(where) in message and KEY_HINT in message
    assert "sk-LITERAL" not in message


@pytest.mark.parametrize(
    "query",
    [
        "api_key=sk-LITERAL",
        "key=sk-LITERAL",
        "token=sk-LITERAL",
        "access_token=sk-LITERAL",
        "sig=sk-LITERAL",
        "api-version=1&X-Amz-Signature=sk-LITERAL",
        "Api-Key=sk-LITERAL",
        "auth=sk-LITERAL",
        "code=sk-LITERAL",
    ],
)
def test_credential_looking_query_parameters_in_base_url_are_refused(query: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_api_config({**BASE, "base_url": f"https://api.example.com/v1?{query}"}, "cfg.json")
    message = str(caught.value)
    assert "base_url" in message and KEY_HINT in message and "sk-LITERAL" not in message


def test_harmless_fields_that_look_a_little_like_credentials_are_accepted() -> None:
    config = parse_api_config(
        {
            **BASE,
            "base_url": "https://example.openai.azure.com/openai/v1?api-version=2024-10-21",
            "max_tokens": 100,
            "use_max_tokens": True,
            "api_key_env": "MY_KEY",
            "budget": {
                "context_window": 8192,
                "output_reserve": 100,
                "tokenizer": "utf8_bytes",
                "image_tokens": 900,
                "tool_output_ratio": 0.02,
            },
            "extra_body": {
                "top_k": 20,
                "prompt_cache_key": "project-a",
                "skip_special_tokens": False,
                "stop_token_ids": [2],
                "min_tokens": 1,
                "keep_alive": "5m",
                "max_completion_tokens_hint": 1,
                "chat_template_kwargs": {"enable_thinking": False},
                "cache_key": "x",
                "keywords": ["a"],
                # ``key`` alone and ``session_id`` are data and ids, not credentials (the one name
                # rule of i_protocol.credentials; the secret table does not mask them either).
                "key": "x",
                "session_id": "s-1",
            },
        },
        "cfg.json",
    )
    assert config.extra_body["prompt_cache_key"] == "project-a"
    assert config.budget["tokenizer"] == "utf8_bytes"


def test_i_refuses_a_nested_key_before_any_worker_or_model_sees_it(env, dirs, project) -> None:
    with ScriptedModel([{"text": "never"}]) as model:
        write_config(dirs, model.base_url, extra_body={"auth": {"api_key": "sk-LITERAL-123"}})
        result = run_i(env, "-C", str(project), "hi")
        assert model.requests == []
    assert result.returncode == 3
    line = one_error_line(result)
    assert KEY_HINT in line and "'extra_body.auth'" in line
    assert b"sk-LITERAL-123" not in result.stderr + result.stdout


def test_i_refuses_a_key_in_the_base_url_query(env, dirs, project) -> None:
    with ScriptedModel([{"text": "never"}]) as model:
        write_config(dirs, model.base_url + "?api_key=sk-LITERAL-123")
        result = run_i(env, "-C", str(project), "hi")
        assert model.requests == []
    assert result.returncode == 3
    line = one_error_line(result)
    assert "'api_key'" in line and KEY_HINT in line
    assert b"sk-LITERAL-123" not in result.stderr + result.stdout


# --- 9. ordinary OS errors, hooks' invalid histories, unexpected exceptions ---------------------------


def test_a_session_under_proc_is_one_line_and_exit_3(env, dirs, project) -> None:
    with ScriptedModel([{"text": "never"}]) as model:
        write_config(dirs, model.base_url)
        result = run_i(env, "-C", str(project), "--session", "/proc/nope/x.json", "hi")
    assert result.returncode == 3
    line = one_error_line(result)
    assert "/proc/nope" in line and "cannot create the session's folder" in line


def test_a_session_under_a_regular_file_is_one_line_and_exit_3(env, dirs, project, tmp_path) -> None:
    (tmp_path / "somefile").write_text("I am a file")
    with ScriptedModel([{"text": "never"}]) as model:
        write_config(dirs, model.base_url)
        result = run_i(env, "-C", str(project), "--session", str(tmp_path / "somefile" / "x.json"), "hi")
    assert result.returncode == 3
    line = one_error_line(result)
    assert f"{tmp_path / 'somefile'} is a file, not a folder" in line


def test_a_session_file_that_is_a_folder_is_one_line_and_exit_3(env, dirs, project, tmp_path) -> None:
    (tmp_path / "s.json").mkdir()
    with ScriptedModel([{"text": "never"}]) as model:
        write_config(dirs, model.base_url)
        result = run_i(env, "-C", str(project), "--session", str(tmp_path / "s.json"), "hi")
    assert result.returncode == 3
    assert str(tmp_path / "s.json") in one_error_line(result)


@pytest.mark.parametrize(
    "command",
    [["--runtime", "init", "--base-url", "http://127.0.0.1:9/v1"], ["--runtime", "manifest", "standard"], ["hi"]],
    ids=["init", "manifest", "run"],
)
def test_a_config_dir_that_is_a_file_is_one_line_and_exit_3(env, project, tmp_path, command) -> None:
    (tmp_path / "configfile").write_text("not a folder")
    args = ["-C", str(project), *command] if command == ["hi"] else command
    result = run_i(env, *args, extra={"I_CONFIG_DIR": str(tmp_path / "configfile")})
    assert result.returncode == 3
    line = one_error_line(result)
    assert f"{tmp_path / 'configfile'} is a file, not a folder" in line


def test_a_data_dir_that_is_a_file_is_one_line_and_exit_3(env, dirs, project, tmp_path) -> None:
    (tmp_path / "datafile").write_text("not a folder")
    with ScriptedModel([{"text": "never"}]) as model:
        write_config(dirs, model.base_url)
        result = run_i(env, "-C", str(project), "hi", extra={"I_DATA_DIR": str(tmp_path / "datafile")})
    assert result.returncode == 3
    assert str(tmp_path / "datafile") in one_error_line(result)


def test_a_relative_directory_variable_is_one_line_for_a_task_too(env, dirs, project) -> None:
    result = run_i(env, "-C", str(project), "hi", extra={"I_DATA_DIR": "relative"})
    assert result.returncode == 3
    assert "I_DATA_DIR must be an absolute path" in one_error_line(result)


def test_a_read_only_session_folder_fails_the_save_in_one_line(env, dirs, project, tmp_path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root ignores folder permissions")
    folder = tmp_path / "ro"
    folder.mkdir()
    with ScriptedModel([{"text": "answer"}]) as model:
        write_config(dirs, model.base_url)
        folder.chmod(0o500)
        try:
            result = run_i(env, "-C", str(project), "--session", str(folder / "s.json"), "hi")
        finally:
            folder.chmod(0o700)
    assert result.returncode == 3
    assert str(folder) in one_error_line(result)


BEFORE_SAVE_WORKER = """
import sys
from i_protocol import Worker
worker = Worker("breaker", "0.0.1")

@worker.hook("before_save")
def before_save(data, request):
    return {**data, "messages": [{"role": "user", "content": "no system message first"}]}

sys.exit(worker.main([]))
"""


def test_a_before_save_hook_returning_an_invalid_history_exits_6(env, dirs, project, tmp_path) -> None:
    script = tmp_path / "breaker.py"
    script.write_text(BEFORE_SAVE_WORKER)
    manifest = tmp_path / "manifest.json"
    manifest.write_bytes(orjson.dumps({"hooks": [{"events": ["before_save"], "exec": [sys.executable, str(script)]}]}))
    with ScriptedModel([{"text": "answer"}]) as model:
        write_config(dirs, model.base_url)
        result = run_i(env, "-C", str(project), "--manifest", str(manifest), "--session-name", "s", "hi")
    assert result.returncode == 6, result.stderr
    line = one_error_line(result)
    assert "history" in line and "system message" in line
    assert f"hook failed on 'before_save': worker {sys.executable}" in line and "returned an invalid history" in line
    assert "nothing was saved" in line
    assert not (project / ".i" / "sessions" / "s.json").exists()


SESSION_LOAD_WORKER = BEFORE_SAVE_WORKER.replace("before_save", "session_load")


def test_a_session_load_hook_returning_an_invalid_history_is_named_and_the_file_is_not_blamed(
    env, dirs, project, tmp_path
) -> None:
    with ScriptedModel([{"text": "answer"}, {"text": "never"}]) as model:
        write_config(dirs, model.base_url)
        first = run_i(env, "-C", str(project), "--session-name", "s", "hi")
        assert first.returncode == 0, first.stderr
        script = tmp_path / "loader.py"
        script.write_text(SESSION_LOAD_WORKER)
        manifest = tmp_path / "manifest.json"
        manifest.write_bytes(
            orjson.dumps({"hooks": [{"events": ["session_load"], "exec": [sys.executable, str(script)]}]})
        )
        result = run_i(env, "-C", str(project), "--manifest", str(manifest), "--session-name", "s", "again")
    assert result.returncode == 6, result.stderr
    line = one_error_line(result)
    assert "hook failed on 'session_load'" in line and "returned an invalid history" in line
    assert "the saved history is invalid" not in line


def test_an_unexpected_exception_is_one_line_saying_it_is_a_bug(env) -> None:
    # A real `i` process whose `paths` command raises something the core never expects.
    script = (
        "import sys, i_core.cli as cli\n"
        "orig = cli._runtime_parser\n"
        "def parser():\n"
        "    p = orig()\n"
        "    def boom(args):\n"
        "        raise RuntimeError('kaboom')\n"
        "    for action in p._subparsers._group_actions:\n"
        "        action.choices['paths'].set_defaults(func=boom)\n"
        "    return p\n"
        "cli._runtime_parser = parser\n"
        "sys.exit(cli.run_cli(['--runtime', 'paths']))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True)
    assert result.returncode == 1
    line = one_error_line(result)
    assert "RuntimeError: kaboom" in line and BUG_HINT in line and "I_DEBUG=1" in line
    debug = subprocess.run([sys.executable, "-c", script], env={**env, "I_DEBUG": "1"}, capture_output=True)
    assert debug.returncode == 1
    assert b"Traceback (most recent call last)" in debug.stderr and b"kaboom" in debug.stderr


# --- 11. debris: temporaries, locks, the session path printed --------------------------------------


def test_stale_temporaries_beside_the_session_are_cleaned_at_the_next_start(env, dirs, project, tmp_path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    gone = dead_pid()
    alive = os.getpid()
    hour_ago = time.time() - 2 * 3600
    minutes_ago = time.time() - 5 * 60
    own = folder / f".s.json.{gone}.0123456789ab.tmp"  # this session's: under its lock
    own_backup = folder / f".s.precompact.json.{alive}.0123456789ab.tmp"  # this session's, pid reused
    other_dead = folder / f".other.json.{gone}.00aa00aa00aa.tmp"  # another session, writer gone
    other_fresh = folder / f".other2.json.{gone}.00bb00bb00bb.tmp"  # writer gone seconds ago: kept
    other_alive = folder / f".other3.json.{alive}.00cc00cc00cc.tmp"  # writer alive: kept
    other_old = folder / f".other4.json.{alive}.00dd00dd00dd.tmp"  # an hour old: gone whatever the pid
    not_ours = folder / f".notes.txt.{gone}.00ee00ee00ee.tmp"  # not a .json temporary: kept
    unrelated = folder / ".s.json.tmp"  # not our naming: kept
    for path in (own, own_backup, other_dead, other_fresh, other_alive, other_old, not_ours, unrelated):
        path.write_text("half a checkpoint")
    for path in (other_dead, not_ours):
        os.utime(path, (minutes_ago, minutes_ago))
    os.utime(other_old, (hour_ago, hour_ago))
    with ScriptedModel([{"text": "answer"}]) as model:
        write_config(dirs, model.base_url)
        result = run_i(env, "-C", str(project), "--quiet", "--session", str(folder / "s.json"), "hi")
    assert result.returncode == 0, result.stderr
    left = sorted(path.name for path in folder.iterdir())
    assert left == sorted([other_fresh.name, other_alive.name, not_ours.name, unrelated.name, "s.json"])


def test_a_run_that_saved_nothing_says_so_and_leaves_no_lock(env, dirs, project) -> None:
    with ScriptedModel([{"status": 400, "error_message": "no"}]) as model:
        write_config(dirs, model.base_url)
        result = run_i(env, "-C", str(project), "hi")
    assert result.returncode == 4
    stderr = result.stderr.decode()
    assert "no session was saved" in stderr and "session: /" not in stderr
    sessions = list((dirs["data"] / "workspaces").glob("*/sessions/*"))
    assert sessions == []


def test_a_saved_session_is_named_ignored_by_git_and_leaves_no_lock(env, dirs, project) -> None:
    with ScriptedModel([{"text": "one"}, {"text": "two"}]) as model:
        write_config(dirs, model.base_url)
        first = run_i(env, "-C", str(project), "--session-name", "keep", "hi")
        second = run_i(env, "-C", str(project), "--session-name", "keep", "again")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    path = project / ".i" / "sessions" / "keep.json"
    assert f"session: {path}".encode() in first.stderr
    assert sorted(p.name for p in path.parent.iterdir()) == [".gitignore", "keep.json"]  # its holder removed the lock
    assert (path.parent / ".gitignore").read_text() == "*\n"


def test_a_named_session_that_failed_before_its_first_checkpoint_says_no_session(env, dirs, project) -> None:
    with ScriptedModel([{"status": 400, "error_message": "no"}]) as model:
        write_config(dirs, model.base_url)
        result = run_i(env, "-C", str(project), "--session-name", "new", "hi")
    assert result.returncode == 4
    assert b"no session was saved" in result.stderr
    assert not (project / ".i" / "sessions" / "new.json").exists()


def _temporaries(folder: Path) -> Iterator[Path]:
    return (path for path in folder.iterdir() if path.name.endswith(".tmp"))


def test_init_cleans_its_own_stale_temporaries(env, dirs) -> None:
    stale = dirs["config"] / f".config.json.{dead_pid()}.0a0b0c0d.tmp"
    stale.write_text("{")
    old = time.time() - 600
    os.utime(stale, (old, old))
    result = run_i(env, "--runtime", "init", "--base-url", "http://127.0.0.1:9/v1")
    assert result.returncode == 0, result.stderr
    assert list(_temporaries(dirs["config"])) == []


def test_a_saved_session_the_model_api_would_refuse_is_a_session_error_not_a_model_error(env, dirs, project) -> None:
    # An image part whose data URL is not base64 passes no adapter: it is a corrupt session (exit 3)
    # named as such before any request, not a model error (exit 4) that never names the file.
    with ScriptedModel([{"text": "one"}, {"text": "never sent"}]) as model:
        write_config(dirs, model.base_url)
        first = run_i(env, "-C", str(project), "--session-name", "s", "hi")
        assert first.returncode == 0, first.stderr
        path = project / ".i" / "sessions" / "s.json"
        doc = orjson.loads(path.read_bytes())
        doc["messages"][1]["content"] = [{"type": "image_url", "image_url": {"url": "data:image/png,abc"}}]
        path.write_bytes(orjson.dumps(doc))
        result = run_i(env, "-C", str(project), "--session-name", "s", "again")
        sent = len(model.requests)
    assert result.returncode == 3, result.stderr
    line = one_error_line(result)
    assert str(path) in line and "the saved history is invalid" in line and "base64" in line
    assert sent == 1  # only the first run's request
