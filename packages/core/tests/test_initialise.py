"""`i --runtime init` asks the configured server once for its context size and never invents one;
config.json's ``budget`` is passed through to the budget worker untouched."""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
import pytest

from i_core.errors import ConfigError
from i_core.image_costs import documented_image_tokens
from i_core.initialise import ContextDiscovery, discover_context_window, initialise, run_init
from i_core.settings import load_api_config, parse_api_config
from i_scripted import ScriptedModel

PROPS = {"default_generation_settings": {"n_ctx": 8192, "params": {"n_predict": -1}}, "total_slots": 1}
NO_KEY = {"OPENAI_API_KEY": ""}


class ModelServer:
    """A loopback server answering GETs from ``routes``: path -> (status, JSON body or bytes[, headers[, delay]])."""

    def __init__(self, routes: dict[str, tuple[Any, ...]]) -> None:
        self.routes = routes
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.posts: list[tuple[str, Any]] = []  # POST routes are keyed "POST /path"
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                outer.posts.append((self.path, orjson.loads(self.rfile.read(length) or b"null")))
                status, body = outer.routes.get(f"POST {self.path}", (404, {"error": "nope"}))[:2]
                raw = orjson.dumps(body)
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                outer.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                status, body, headers, delay = (*outer.routes.get(self.path, (404, {"error": "nope"})), {}, 0)[:4]
                if delay:
                    time.sleep(delay)
                raw = body if isinstance(body, bytes) else orjson.dumps(body)
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(raw)))
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(raw)
                except OSError:
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.root = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.base_url = self.root + "/v1"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]

    def __enter__(self) -> ModelServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def config_of(config_dir: Path) -> dict[str, Any]:
    return orjson.loads((config_dir / "config.json").read_bytes())


# --- through the real command ---------------------------------------------------------------------


def test_init_writes_llama_cpp_n_ctx_and_says_where_from(run_i, dirs, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ModelServer({"/props": (200, PROPS)}) as server:
        result = run_i("--runtime", "init", "--base-url", server.base_url, "--model", "qwen")
    assert result.returncode == 0, result.stderr
    config = config_of(dirs["config"])
    assert config["budget"]["context_window"] == 8192
    assert config["max_tokens"] == 2048  # a quarter of the window at most: the rest is for input
    assert config["base_url"] == server.base_url and config["model"] == "qwen"
    out = result.stderr.decode()
    assert f"budget.context_window 8192 from {server.root}/props (default_generation_settings.n_ctx)" in out
    assert server.paths == ["/props"]  # asked once; nothing else once it answered
    assert "authorization" not in server.requests[0][1]
    assert load_api_config(dirs["config"] / "config.json").budget["context_window"] == 8192


def test_init_reads_vllm_max_model_len_from_models(run_i, dirs) -> None:
    models = {"object": "list", "data": [{"id": "Qwen/Qwen3-8B", "object": "model", "max_model_len": 32768}]}
    with ModelServer({"/v1/models": (200, models)}) as server:
        result = run_i("--runtime", "init", "--base-url", server.base_url + "/", env_extra=NO_KEY)
    assert result.returncode == 0, result.stderr
    assert config_of(dirs["config"])["budget"]["context_window"] == 32768
    assert f"budget.context_window 32768 from {server.base_url}/models (Qwen/Qwen3-8B: max_model_len)" in (
        result.stderr.decode()
    )
    assert server.paths == ["/props", "/v1/models"]


def test_init_against_nothing_writes_no_window_and_names_the_field(run_i, dirs) -> None:
    args = ("--base-url", closed_port_url(), "--model", "a-model-no-catalog-knows")
    result = run_i("--runtime", "init", *args, env_extra=NO_KEY)
    assert result.returncode == 0, result.stderr
    config = config_of(dirs["config"])
    assert "context_window" not in config["budget"]
    path = dirs["config"] / "config.json"
    assert (
        f"budget.context_window is not set: set it in {path} to your model's context size in tokens"
        in result.stderr.decode()
    )
    assert sorted(p.name for p in dirs["config"].iterdir()) == [
        "bindings.json",
        "builtin.json",
        "config.json",
        "plugins.json",
    ]


def test_init_takes_a_well_known_models_window_from_the_catalog_when_the_server_reports_none(run_i, dirs) -> None:
    with ScriptedModel([]) as model:  # no /props, no window in /models
        result = run_i("--runtime", "init", "--base-url", model.base_url, "--model", "gpt-4o-mini-2024-07-18")
    assert result.returncode == 0, result.stderr
    assert config_of(dirs["config"])["budget"]["context_window"] == 128000
    out = result.stderr.decode()
    assert "budget.context_window 128000 from the catalog of well-known models (model_windows.json: gpt-4o-mini" in out
    assert "the server reported none" in out
    # stdout is the list of files; what init decided and why is said on stderr.
    assert all(line.startswith(("created ", "kept ")) for line in result.stdout.decode().splitlines())


def test_init_over_a_config_without_a_window_names_the_catalogs_value_to_copy_in(run_i, dirs) -> None:
    path = dirs["config"] / "config.json"
    path.write_text('{"model":"deepseek-chat"}')
    result = run_i("--runtime", "init")
    assert result.returncode == 3
    assert path.read_text() == '{"model":"deepseek-chat"}'
    assert 'gives 128000 for deepseek-chat: set "budget": {"context_window": 128000} in it' in result.stderr.decode()


def test_a_missing_builtin_json_with_plugins_json_is_an_error_naming_init(run_i, dirs, project) -> None:
    (dirs["config"] / "config.json").write_text('{"base_url":"http://127.0.0.1:9/v1","model":"m"}')
    (dirs["config"] / "plugins.json").write_text('{"profile":"standard"}')
    result = run_i("-C", str(project), "hi")
    assert result.returncode == 3
    line = result.stderr.decode()
    assert "builtin.json is missing" in line and "`i --runtime init` writes it" in line


def test_init_never_overwrites_and_asks_nothing_when_config_exists(run_i, dirs) -> None:
    (dirs["config"] / "config.json").write_text('{"model":"mine"}')
    with ModelServer({"/props": (200, PROPS)}) as server:
        result = run_i("--runtime", "init")
        assert server.requests == []
    assert result.returncode == 0, result.stderr
    assert (dirs["config"] / "config.json").read_text() == '{"model":"mine"}'
    assert "context_window" not in result.stdout.decode() + result.stderr.decode()
    again = run_i("--runtime", "init")
    assert again.stdout.decode().count("kept") == 4 and again.returncode == 0


def test_init_with_a_base_url_over_an_existing_file_says_nothing_changed_and_the_edit_to_make(run_i, dirs) -> None:
    path = dirs["config"] / "config.json"
    path.write_text('{"base_url":"http://127.0.0.1:8080/v1","model":"mine"}')
    with ModelServer({"/props": (200, PROPS)}) as server:
        result = run_i("--runtime", "init", "--base-url", server.base_url + "/", "--model", "other")
        assert server.requests == []  # nothing is asked for a file that is not written
    assert result.returncode == 3  # asked for, not done
    assert path.read_text() == '{"base_url":"http://127.0.0.1:8080/v1","model":"mine"}'
    lines = result.stderr.decode().splitlines()
    assert lines == [
        f'i: {path} exists and was not changed (init never overwrites a file; it is "http://127.0.0.1:8080/v1"): '
        f'set "base_url": "{server.base_url}" in it',
        f'i: {path} exists and was not changed (init never overwrites a file; it is "mine"): set "model": "other" in it',
    ]
    assert result.stdout.decode().startswith(f"kept    {path}\n")
    same = run_i("--runtime", "init", "--base-url", "http://127.0.0.1:8080/v1", "--model", "mine")
    assert same.returncode == 0 and same.stderr == b""  # already what was asked: nothing to say


def test_init_refuses_a_bad_base_url(run_i, dirs) -> None:
    for bad in ("ftp://host/v1", "http://user:pw@host/v1", "not a url"):
        result = run_i("--runtime", "init", "--base-url", bad)
        assert result.returncode == 3, (bad, result.stderr)
        assert result.stderr.decode().startswith("i: --base-url") and b"Traceback" not in result.stderr
    assert not (dirs["config"] / "config.json").exists()


# --- discovery in process -------------------------------------------------------------------------


def test_newer_llama_cpp_top_level_n_ctx() -> None:
    with ModelServer({"/props": (200, {"n_ctx": 16384, "total_slots": 1})}) as server:
        found = discover_context_window(server.base_url, "m")
    assert found.window == 16384 and found.source == f"{server.root}/props (n_ctx)"


@pytest.mark.parametrize(
    ("entries", "model", "window", "field"),
    [
        (
            [{"id": "a", "context_length": 1000}, {"id": "b", "context_length": 200000}],
            "b",
            200000,
            "b: context_length",
        ),
        ([{"id": "only", "context_length": 4096}], "other-name", 4096, "only: context_length"),
        ([{"id": "a", "context_length": 1000}, {"id": "b", "context_length": 2000}], "c", None, None),
        ([{"id": "m"}], "m", None, None),  # llama.cpp / Ollama: no context field
        ([{"id": "m", "max_model_len": "4096"}, "junk"], "m", None, None),
        ([{"id": "m", "max_model_len": 0}], "m", None, None),
    ],
)
def test_models_entry_selection(entries: list[Any], model: str, window: int | None, field: str | None) -> None:
    with ModelServer({"/v1/models": (200, {"object": "list", "data": entries})}) as server:
        found = discover_context_window(server.base_url, model)
    assert found.window == window
    if field is not None:
        assert found.source == f"{server.base_url}/models ({field})"


def test_a_base_url_without_v1_asks_props_at_the_base_url() -> None:
    with ModelServer({"/api/props": (200, PROPS)}) as server:
        found = discover_context_window(server.root + "/api", "m")
    assert found.window == 8192 and server.paths == ["/api/props"]


def test_redirects_are_not_followed() -> None:
    with ModelServer(
        {
            "/props": (307, b"", {"location": "/elsewhere"}),
            "/elsewhere": (200, PROPS),
            "/v1/models": (302, b"", {"location": "/elsewhere"}),
        }
    ) as server:
        found = discover_context_window(server.base_url, "m")
    assert found.window is None and server.paths == ["/props", "/v1/models"]
    assert found.asked == (f"{server.root}/props: HTTP 307", f"{server.base_url}/models: HTTP 302")


def test_the_key_is_sent_as_bearer_only_when_its_variable_is_set(dirs) -> None:
    with ModelServer({"/props": (200, PROPS)}) as server:
        run_init(dirs["config"], base_url=server.base_url, environ={"OPENAI_API_KEY": "sk-test"})
        assert server.requests[0][1]["authorization"] == "Bearer sk-test"
    (dirs["config"] / "config.json").unlink()
    with ModelServer({"/props": (200, PROPS)}) as server:
        run_init(dirs["config"], base_url=server.base_url, environ={})
        assert "authorization" not in server.requests[0][1]


def test_a_silent_server_does_not_hold_init(dirs) -> None:
    with ModelServer({"/props": (200, PROPS, {}, 3), "/v1/models": (200, {"data": []}, {}, 3)}) as server:
        # The server would answer (with a window) after 3 s: "timed out" and no window is the proof.
        result = run_init(dirs["config"], base_url=server.base_url, model="unlisted", environ={}, timeout=0.3)
    assert "context_window" not in config_of(dirs["config"])["budget"]
    assert result.context_note is not None and "timed out" in result.context_note


@pytest.mark.parametrize(
    "body",
    [b"not json", b"[1]", orjson.dumps({"default_generation_settings": {"n_ctx": -1}}), orjson.dumps({"n_ctx": True})],
)
def test_unusable_props_answers_write_no_window(dirs, body: bytes) -> None:
    with ModelServer({"/props": (200, body)}) as server:
        found = discover_context_window(server.base_url, "m")
    assert found.window is None


def test_initialise_keeps_its_pairs_interface(dirs) -> None:
    pairs = dict(initialise(dirs["config"], base_url=closed_port_url(), model="unlisted", environ={}))
    assert sorted(p.name for p in pairs) == ["bindings.json", "builtin.json", "config.json", "plugins.json"]
    assert all(pairs.values())
    assert "context_window" not in config_of(dirs["config"])["budget"]


# --- config.json's budget is the budget worker's to validate -------------------------------------

BASE = {"protocol": "openai", "base_url": "http://127.0.0.1:8080/v1", "model": "m"}


def test_a_missing_context_window_is_not_filled_in() -> None:
    assert parse_api_config(dict(BASE)).budget == {}
    assert parse_api_config({**BASE, "budget": {"safety_ratio": 0.02}}).budget == {"safety_ratio": 0.02}
    assert parse_api_config({**BASE, "max_tokens": 2048, "budget": {"context_window": 8192}}).budget == {
        "context_window": 8192
    }  # no output_reserve default either: the worker defaults it to max_tokens


def test_the_budget_is_passed_through_as_given() -> None:
    budget = {
        "context_window": 10,
        "output_reserve": 99,
        "threshold": 5,
        "calibrate": True,
        "tokenizer": "cl100k_base",
        "future_field": {"x": 1},
    }
    assert parse_api_config({**BASE, "budget": budget}).budget == budget


@pytest.mark.parametrize("budget", [[], "8192", 8192, True])
def test_a_budget_that_is_not_an_object_is_refused(budget: Any) -> None:
    with pytest.raises(ConfigError, match="budget must be an object"):
        parse_api_config({**BASE, "budget": budget})


# --- budget.image_tokens where the provider documents a per-image cost ----------------------------


@pytest.mark.parametrize(
    ("base_url", "model", "tokens"),
    [
        ("https://api.anthropic.com/v1", "claude-sonnet-4-5", 1700),  # ~1,600 at most: 784 x 1568 / 750 = 1,639
        ("https://api.anthropic.com/v1/", "claude-3-5-haiku-latest", 1700),
        ("https://api.anthropic.com/v1", "claude-opus-4-7", 5100),  # 2576 px, 3.75 MP / 750 = 5,000
        ("https://API.anthropic.com", "claude-next", 5100),  # an unknown Claude model: the larger
        ("https://api.openai.com/v1", "gpt-4o", 1445),  # 85 + 8 x 170 (768 x 2048 after the resize)
        ("https://api.openai.com/v1", "gpt-4o-2024-08-06", 1445),
        ("https://api.openai.com/v1", "gpt-4o-mini", 48169),  # 2,833 + 8 x 5,667
        ("https://api.openai.com/v1", "gpt-4.1", 1536),
        ("https://api.openai.com/v1", "gpt-4.1-mini-2025-04-14", 2489),  # 1,536 patches x 1.62
        ("https://api.openai.com/v1", "gpt-4.1-nano", 3779),  # x 2.46
        ("https://api.openai.com/v1", "o4-mini", 2642),  # x 1.72
        ("https://api.openai.com/v1", "some-new-model", 3779),  # the most of the table but gpt-4o-mini
    ],
)
def test_a_provider_documented_image_cost_is_the_most_one_image_costs(base_url: str, model: str, tokens: int) -> None:
    cost = documented_image_tokens(base_url, model)
    assert cost is not None and cost.tokens == tokens
    assert "vision" in cost.source


@pytest.mark.parametrize(
    "base_url",
    [
        "http://127.0.0.1:8080/v1",
        "http://localhost:8000/v1",
        "https://openrouter.ai/api/v1",
        "https://api.openai.com.example/v1",
    ],
)
def test_a_server_that_documents_no_image_cost_gets_none(base_url: str) -> None:
    assert documented_image_tokens(base_url, "gpt-4o") is None


def test_init_writes_the_documented_image_cost_and_says_where_from(dirs, monkeypatch) -> None:
    asked: list[str] = []

    def discover(base_url: str, model: str, api_key: str | None = None, *, timeout: float = 0) -> ContextDiscovery:
        asked.append(base_url)  # no request leaves the machine: the window is another test's subject
        return ContextDiscovery(None, None, ())

    monkeypatch.setattr("i_core.initialise.discover_context_window", discover)
    result = run_init(dirs["config"], base_url="https://api.anthropic.com/v1", model="claude-sonnet-4-5", environ={})
    assert asked == ["https://api.anthropic.com/v1"]
    assert config_of(dirs["config"])["budget"]["image_tokens"] == 1700
    assert result.image_note is not None and result.image_note.startswith("budget.image_tokens 1700 per image from ")
    assert "\n" not in result.image_note
    load_api_config(dirs["config"] / "config.json")  # a valid config


def test_init_against_a_local_server_writes_no_image_cost_and_says_so_in_one_line(run_i, dirs) -> None:
    with ModelServer({"/props": (200, PROPS)}) as server:
        result = run_i("--runtime", "init", "--base-url", server.base_url, env_extra=NO_KEY)
    assert result.returncode == 0, result.stderr
    assert "image_tokens" not in config_of(dirs["config"])["budget"]
    path = dirs["config"] / "config.json"
    lines = [line for line in result.stderr.decode().splitlines() if "image_tokens" in line]
    assert lines == [
        f"i: budget.image_tokens is not set: {server.base_url} documents no per-image cost, so images are left out "
        f"until you set it in {path}"
    ]


def test_init_over_an_existing_config_says_nothing_of_image_cost(run_i, dirs) -> None:
    (dirs["config"] / "config.json").write_bytes(b'{"protocol":"openai","base_url":"http://x/v1","model":"m"}')
    result = run_i("--runtime", "init")
    assert result.returncode == 0 and b"image_tokens" not in result.stdout + result.stderr


# --- the running window of Ollama, exact counts, the small profile -----------------------------------

OLLAMA_MODELS = {"object": "list", "data": [{"id": "llama3.2", "object": "model", "owned_by": "library"}]}
VERSION = (200, {"version": "0.12.3"})
TRAINED = {"llama.context_length": 131072}


def plugins_of(config_dir: Path) -> dict[str, Any]:
    return orjson.loads((config_dir / "plugins.json").read_bytes())


def test_ollama_num_ctx_is_the_window_never_the_trained_length(run_i, dirs) -> None:
    show = {"parameters": "num_ctx                        4096\nstop <|eot_id|>", "model_info": TRAINED}
    routes = {"/v1/models": (200, OLLAMA_MODELS), "/api/version": VERSION, "POST /api/show": (200, show)}
    with ModelServer(routes) as server:
        result = run_i("--runtime", "init", "--base-url", server.base_url, "--model", "llama3.2", env_extra=NO_KEY)
    assert result.returncode == 0, result.stderr
    assert config_of(dirs["config"])["budget"]["context_window"] == 4096
    out = result.stderr.decode()
    assert f"budget.context_window 4096 from {server.root}/api/show (parameters num_ctx)" in out
    assert plugins_of(dirs["config"])["profile"] == "small" and 'profile "small"' in out


def test_ollama_without_num_ctx_reads_the_loaded_model(run_i, dirs) -> None:
    ps = {"models": [{"name": "llama3.2", "model": "llama3.2", "context_length": 16384}]}
    routes = {
        "/v1/models": (200, OLLAMA_MODELS),
        "/api/version": VERSION,
        "POST /api/show": (200, {"parameters": "stop x", "model_info": TRAINED}),
        "/api/ps": (200, ps),
    }
    with ModelServer(routes) as server:
        result = run_i("--runtime", "init", "--base-url", server.base_url, "--model", "llama3.2", env_extra=NO_KEY)
    assert result.returncode == 0, result.stderr
    assert config_of(dirs["config"])["budget"]["context_window"] == 16384
    assert plugins_of(dirs["config"])["profile"] == "standard"


def test_ollama_with_nothing_running_writes_no_window_and_names_the_variable(run_i, dirs) -> None:
    routes = {
        "/v1/models": (200, OLLAMA_MODELS),
        "/api/version": VERSION,
        "POST /api/show": (200, {"parameters": "stop x", "model_info": TRAINED}),
        "/api/ps": (200, {"models": []}),
    }
    with ModelServer(routes) as server:
        result = run_i("--runtime", "init", "--base-url", server.base_url, "--model", "llama3.2", env_extra=NO_KEY)
    assert result.returncode == 0, result.stderr
    assert "context_window" not in config_of(dirs["config"])["budget"]
    assert "OLLAMA_CONTEXT_LENGTH" in result.stderr.decode() and "131072" not in result.stderr.decode()
    assert plugins_of(dirs["config"])["profile"] == "standard"  # no window known: no choice made


@pytest.mark.parametrize(("window", "profile"), [(8192, "small"), (32768, "standard")])
def test_a_llama_cpp_server_that_counts_gets_exact_count_and_a_small_window_the_small_profile(
    run_i, dirs, window, profile
) -> None:
    from i_scripted import ScriptedModel

    with ScriptedModel([], context_window=window, context_style="llamacpp") as model:
        result = run_i("--runtime", "init", "--base-url", model.base_url, env_extra=NO_KEY)
    assert result.returncode == 0, result.stderr
    assert config_of(dirs["config"])["budget"]["exact_count"] == "tokenize"
    out = result.stderr.decode()
    assert "budget.exact_count 'tokenize'" in out and "/apply-template" in out
    assert plugins_of(dirs["config"])["profile"] == profile
    assert ('profile "small"' in out) == (profile == "small")


def test_a_server_that_cannot_count_gets_exact_count_off_and_says_why(run_i, dirs) -> None:
    with ModelServer({"/props": (200, PROPS)}) as server:
        result = run_i("--runtime", "init", "--base-url", server.base_url, env_extra=NO_KEY)
    assert result.returncode == 0, result.stderr
    assert config_of(dirs["config"])["budget"]["exact_count"] == "off"
    assert "budget.exact_count 'off'" in result.stderr.decode() and "offers no request count" in result.stderr.decode()


def test_a_server_that_is_not_ollama_is_not_asked_ollama_questions(run_i, dirs) -> None:
    with ModelServer({"/v1/models": (200, OLLAMA_MODELS)}) as server:
        result = run_i("--runtime", "init", "--base-url", server.base_url, "--model", "llama3.2", env_extra=NO_KEY)
    assert result.returncode == 0, result.stderr
    assert server.paths == ["/props", "/v1/models", "/api/version"]
    assert "/api/show" not in [path for path, _body in server.posts]
