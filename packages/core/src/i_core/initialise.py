"""`i --runtime init`: the default configuration files, never overwriting an existing one.

The core has no capacity table, so init never invents a context window: when it creates
config.json it asks the configured server once for its context size (llama.cpp ``/props``, then
``<base_url>/models``: vLLM's ``max_model_len``, OpenRouter/LM Studio's ``context_length``) and
writes ``budget.context_window`` only when the server said it: its *running* window, never the
length the model was trained for (Ollama: ``num_ctx`` from ``/api/show``'s parameters, else the
loaded model's ``context_length`` from ``/api/ps``, else nothing). Where the server counts a request
exactly (llama.cpp ``/apply-template`` + ``/tokenize``, vLLM ``/tokenize``) config.json gets
``budget.exact_count: "tokenize"``; and a window of at most ``SMALL_WINDOW`` tokens gets
plugins.json's ``small`` profile (fewer tools). Each choice is said in one line. Nothing is
discovered at run time.
Where the provider documents what an image costs (``image_costs``), config.json gets that
``budget.image_tokens``; elsewhere none, and init says so (images are then left out, never fatal).
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from i_protocol.atomic import create_exclusive, remove_stale_temporaries
from i_protocol.errors import FileError
from i_protocol.files import read_json

from .errors import ConfigError, os_problem
from .image_costs import ImageCost, documented_image_tokens
from .jsonfile import MAX_CONFIG_BYTES
from .windows import catalog_window

DEFAULT_BASE_URL = "http://127.0.0.1:8080/v1"
DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_CONFIG: dict[str, Any] = {
    "protocol": "openai",
    "base_url": DEFAULT_BASE_URL,
    "model": DEFAULT_MODEL,
    "api_key_env": "OPENAI_API_KEY",
    "max_tokens": 4096,
    "use_max_tokens": False,
    "io_limit_bytes": 1048576,
    "budget": {
        "safety_ratio": 0.02,
        "tool_output_ratio": 0.02,
    },
}

DEFAULT_FILES: dict[str, dict[str, Any]] = {
    "config.json": DEFAULT_CONFIG,
    "plugins.json": {"profile": "standard", "disabled": []},
    "bindings.json": {},
    "builtin.json": {"builtin_profile": "configured", "tools": []},
}

SMALL_WINDOW = 8192
"""init writes plugins.json's ``small`` profile for a running window of at most this many tokens."""
PROBE_TIMEOUT = 2.0  # seconds per discovery request, start to end
_PROBE_MAX_BYTES = 8 * 1024 * 1024  # OpenRouter's model list is a few MB
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
_UNREACHABLE = "cannot connect"


@dataclass(frozen=True)
class ContextDiscovery:
    """What the server said about its context size: ``window`` and where from, or why not."""

    window: int | None
    source: str | None  # e.g. "http://127.0.0.1:8080/props (n_ctx)"
    asked: tuple[str, ...]  # every URL asked, each with what came back when it did not help


@dataclass(frozen=True)
class InitResult:
    """The files init wrote or kept, and the lines to print about ``budget.context_window`` and
    ``budget.image_tokens``."""

    files: list[tuple[Path, bool]]
    context_note: str | None  # None when config.json already existed (nothing was asked)
    image_note: str | None = None  # likewise
    exact_note: str | None = None  # likewise: budget.exact_count, and why
    profile_note: str | None = None  # when plugins.json was created: its profile, and why
    unchanged: list[str] = field(default_factory=list)
    """When config.json existed and ``--base-url`` / ``--model`` asked for another value: one line
    per field saying the file was not changed and the edit to make."""


def default_config(base_url: str | None = None, model: str | None = None) -> dict[str, Any]:
    """The config.json init writes, before discovery; ``base_url``/``model`` replace the defaults."""
    config = copy.deepcopy(DEFAULT_CONFIG)
    if base_url is not None:
        try:
            parts = urlsplit(base_url)
        except ValueError:
            raise ConfigError(f"--base-url is not a valid URL: {base_url!r}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"--base-url must be an http(s) URL such as {DEFAULT_BASE_URL}, got {base_url!r}")
        if parts.username or parts.password:
            raise ConfigError("--base-url must not contain credentials; put the key in the variable api_key_env names")
        config["base_url"] = base_url.rstrip("/")
    if model is not None:
        if not model.strip():
            raise ConfigError("--model must be a non-empty model name")
        config["model"] = model
    return config


def run_init(
    config_dir: Path,
    *,
    base_url: str | None = None,
    model: str | None = None,
    environ: Mapping[str, str] | None = None,
    timeout: float = PROBE_TIMEOUT,
) -> InitResult:
    """Write each default file that does not exist yet; config.json with the discovered window."""
    config = default_config(base_url, model)
    try:
        config_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{config_dir}: cannot create the config folder: {os_problem(exc)}") from None
    # A killed init leaves ``.config.json.PID.HEX.tmp`` behind: gone once its writer is.
    remove_stale_temporaries(config_dir, targets=DEFAULT_FILES)
    files = []
    note = image_note = exact_note = profile_note = None
    found: ContextDiscovery | None = None
    unchanged: list[str] = []
    for name, content in DEFAULT_FILES.items():
        path = config_dir / name
        if name == "config.json":
            if path.exists():
                files.append((path, False))
                asked = {"base_url": config["base_url"] if base_url else None, "model": model}
                unchanged = _not_applied(path, {key: value for key, value in asked.items() if value is not None})
                unchanged += _window_missing(path, model)
                continue
            env = os.environ if environ is None else environ
            key_env = config.get("api_key_env")
            api_key = env.get(key_env) if isinstance(key_env, str) else None
            found = discover_context_window(config["base_url"], config["model"], api_key or None, timeout=timeout)
            if found.window is None:
                found = _from_catalog(found, config["model"])
            if found.window is not None:
                config["budget"] = {"context_window": found.window, **config["budget"]}
                # The reply's reserve comes out of the window: keep at least three quarters for input.
                config["max_tokens"] = min(config["max_tokens"], max(1, found.window // 4))
            counting = exact_count_probe(config["base_url"], config["model"], api_key or None, timeout=timeout)
            config["budget"]["exact_count"] = "tokenize" if counting.startswith("tokenize") else "off"
            cost = documented_image_tokens(config["base_url"], config["model"])
            if cost is not None:
                config["budget"]["image_tokens"] = cost.tokens
            content = config
            created = _create_exclusive(path, _dumps(content))
            files.append((path, created))
            if created:
                note = _note(found, path)
                image_note = _image_note(cost, config["base_url"], path)
                exact_note = f"budget.exact_count {config['budget']['exact_count']!r}: {counting.split(': ', 1)[1]}"
            continue
        if name == "plugins.json" and found is not None and found.window is not None:
            small = found.window <= SMALL_WINDOW
            content = {**content, "profile": "small"} if small else content
            created = _create_exclusive(path, _dumps(content))
            files.append((path, created))
            if created and small:
                profile_note = (
                    f'plugins.json profile "small" (the built-in tools only): the running window is {found.window} '
                    f'tokens, at most {SMALL_WINDOW}; "standard" in {path} offers every tool'
                )
            continue
        files.append((path, _create_exclusive(path, _dumps(content))))
    return InitResult(
        files=files,
        context_note=note,
        unchanged=unchanged,
        image_note=image_note,
        exact_note=exact_note,
        profile_note=profile_note,
    )


def _not_applied(path: Path, asked: dict[str, str]) -> list[str]:
    """The lines for each asked value the existing ``path`` does not have (never rewritten)."""
    if not asked:
        return []
    try:
        current = read_json(path, MAX_CONFIG_BYTES, what="config")
    except (OSError, FileError):
        current = None
    if not isinstance(current, dict):
        current = {}
    lines = []
    for key, wanted in asked.items():
        if current.get(key) == wanted:
            continue
        now = f"it is {orjson.dumps(current[key]).decode()}" if key in current else "it has none"
        lines.append(
            f"{path} exists and was not changed (init never overwrites a file; {now}): "
            f"set {orjson.dumps(key).decode()}: {orjson.dumps(wanted).decode()} in it"
        )
    return lines


def _from_catalog(found: ContextDiscovery, model: str) -> ContextDiscovery:
    """The catalog's window for ``model`` when the server reported none (``windows``)."""
    known = catalog_window(model)
    if known is None:
        return found
    asked = "; ".join(found.asked)
    source = known.describe() + (f"; the server reported none (asked {asked})" if asked else "")
    return ContextDiscovery(known.window, source, found.asked)


def _window_missing(path: Path, model: str | None) -> list[str]:
    """For an existing config.json without ``budget.context_window``: the line naming the value the
    catalog knows for its model, to copy in (init never rewrites the file)."""
    try:
        current = read_json(path, MAX_CONFIG_BYTES, what="config")
    except (OSError, FileError):
        return []
    if not isinstance(current, dict):
        return []
    budget = current.get("budget")
    if isinstance(budget, dict) and budget.get("context_window") is not None:
        return []
    name = current.get("model") if isinstance(current.get("model"), str) else model
    known = catalog_window(name) if isinstance(name, str) else None
    if known is None:
        return []
    return [
        f"{path} has no budget.context_window (init never overwrites a file): {known.describe()} gives "
        f'{known.window} for {name}: set "budget": {{"context_window": {known.window}}} in it'
    ]


def initialise(config_dir: Path, **options: Any) -> list[tuple[Path, bool]]:
    """Write each default file that does not exist yet; returns (path, created) pairs."""
    return run_init(config_dir, **options).files


def _note(found: ContextDiscovery, path: Path) -> str:
    if found.window is not None:
        return f"budget.context_window {found.window} from {found.source}"
    asked = "; ".join(found.asked)
    return f"budget.context_window is not set: set it in {path} to your model's context size in tokens" + (
        f" (asked {asked})" if asked else ""
    )


def _image_note(cost: ImageCost | None, base_url: str, path: Path) -> str:
    if cost is not None:
        return f"budget.image_tokens {cost.tokens} per image from {cost.source}"
    return (
        f"budget.image_tokens is not set: {base_url} documents no per-image cost, so images are left out "
        f"until you set it in {path}"
    )


def discover_context_window(
    base_url: str, model: str, api_key: str | None = None, *, timeout: float = PROBE_TIMEOUT
) -> ContextDiscovery:
    """Ask the server once for its context size: llama.cpp ``<root>/props`` (``n_ctx``), then
    ``<base_url>/models`` (the model's entry, or the only one: ``max_model_len`` or
    ``context_length``). ``<root>`` is base_url without a trailing ``/v1``. Never raises: an
    unreachable or silent server gives a ContextDiscovery without a window."""
    base = base_url.rstrip("/")
    root = base.removesuffix("/v1")
    asked: list[str] = []
    props_url = f"{root}/props"
    body, problem = _get_json(props_url, api_key, timeout)
    window, field = _props_window(body)
    if window is not None:
        return ContextDiscovery(window, f"{props_url} ({field})", tuple(asked))
    asked.append(f"{props_url}: {problem or 'no n_ctx'}")
    models_url = f"{base}/models"
    if problem and problem.startswith(_UNREACHABLE):
        # Nothing listens there: a second request to the same server would only fail again.
        return ContextDiscovery(None, None, tuple(asked))
    body, problem = _get_json(models_url, api_key, timeout)
    window, field = _models_window(body, model)
    if window is not None:
        return ContextDiscovery(window, f"{models_url} ({field})", tuple(asked))
    asked.append(f"{models_url}: {problem or 'no max_model_len or context_length for ' + repr(model)}")
    if problem is None:  # an OpenAI-compatible list without a window: Ollama says it at /api
        return _ollama_window(root, model, api_key, timeout, asked)
    return ContextDiscovery(None, None, tuple(asked))


def _ollama_window(root: str, model: str, api_key: str | None, timeout: float, asked: list[str]) -> ContextDiscovery:
    """Ollama's *running* window: ``num_ctx`` in ``/api/show``'s parameters (a Modelfile's setting),
    else the loaded model's ``context_length`` in ``/api/ps``. Never ``model_info``'s trained
    length: Ollama silently drops the start of a prompt longer than its running window."""
    version, _problem = _get_json(f"{root}/api/version", api_key, timeout)
    if not isinstance(version, dict) or not isinstance(version.get("version"), str):
        return ContextDiscovery(None, None, tuple(asked))  # not Ollama: nothing more to ask
    show_url = f"{root}/api/show"
    body, problem = _post_json(show_url, {"model": model}, api_key, timeout)
    parameters = body.get("parameters") if isinstance(body, dict) else None
    if isinstance(parameters, str):
        for line in parameters.splitlines():
            name, _, value = line.strip().partition(" ")
            if name == "num_ctx" and (window := _positive(_int(value.strip()))) is not None:
                return ContextDiscovery(window, f"{show_url} (parameters num_ctx)", tuple(asked))
    asked.append(f"{show_url}: {problem or 'no num_ctx in parameters'}")
    if problem is not None:
        return ContextDiscovery(None, None, tuple(asked))  # not Ollama, or a model it does not have
    ps_url = f"{root}/api/ps"
    body, problem = _get_json(ps_url, api_key, timeout)
    loaded = body.get("models") if isinstance(body, dict) else None
    for entry in loaded if isinstance(loaded, list) else []:
        mine = isinstance(entry, dict) and model in (entry.get("name"), entry.get("model"))
        if mine and (window := _positive(entry.get("context_length"))) is not None:
            return ContextDiscovery(window, f"{ps_url} ({model}: context_length of the loaded model)", tuple(asked))
    asked.append(
        f"{ps_url}: {problem or repr(model) + ' is not loaded'} (Ollama runs a model with num_ctx, else "
        "OLLAMA_CONTEXT_LENGTH: set budget.context_window to that, never to the length the model was trained for)"
    )
    return ContextDiscovery(None, None, tuple(asked))


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def exact_count_probe(base_url: str, model: str, api_key: str | None, *, timeout: float = PROBE_TIMEOUT) -> str:
    """Whether the server counts a chat request exactly: ``"tokenize: ..."`` saying how, else why not."""
    root = base_url.rstrip("/").removesuffix("/v1")
    messages = [{"role": "user", "content": "hi"}]
    body, problem = _post_json(f"{root}/apply-template", {"messages": messages}, api_key, timeout)
    if isinstance(body, dict) and isinstance(body.get("prompt"), str):
        counted, _ = _post_json(f"{root}/tokenize", {"content": body["prompt"]}, api_key, timeout)
        if isinstance(counted, dict) and isinstance(counted.get("tokens"), list):
            return f"tokenize: {root}/apply-template and /tokenize count each request exactly (llama.cpp)"
    if problem is not None and problem.startswith(_UNREACHABLE):
        return f"off: {root} is not reachable"
    counted, _ = _post_json(f"{root}/tokenize", {"model": model, "messages": messages}, api_key, timeout)
    if isinstance(counted, dict) and isinstance(counted.get("count"), int):
        return f"tokenize: {root}/tokenize counts each request exactly (vLLM)"
    return f"off: {root} offers no request count (llama.cpp /apply-template + /tokenize, vLLM /tokenize)"


def _positive(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


def _props_window(body: Any) -> tuple[int | None, str]:
    if not isinstance(body, dict):
        return None, ""
    settings = body.get("default_generation_settings")
    if isinstance(settings, dict) and (window := _positive(settings.get("n_ctx"))) is not None:
        return window, "default_generation_settings.n_ctx"
    if (window := _positive(body.get("n_ctx"))) is not None:
        return window, "n_ctx"
    return None, ""


def _models_window(body: Any, model: str) -> tuple[int | None, str]:
    entries = body.get("data") if isinstance(body, dict) else None
    if not isinstance(entries, list):
        return None, ""
    entries = [entry for entry in entries if isinstance(entry, dict)]
    entry = next((e for e in entries if e.get("id") == model), None)
    if entry is None and len(entries) == 1:
        entry = entries[0]
    if entry is None:
        return None, ""
    for name in ("max_model_len", "context_length"):
        if (window := _positive(entry.get(name))) is not None:
            return window, f"{entry.get('id', '?')}: {name}"
    return None, ""


def _post_json(url: str, body: dict[str, Any], api_key: str | None, timeout: float) -> tuple[Any, str | None]:
    """(decoded JSON body, None) of one POST, or (None, what went wrong). No redirects, no retries."""
    return _get_json(url, api_key, timeout, body)


def _get_json(
    url: str, api_key: str | None, timeout: float, post: dict[str, Any] | None = None
) -> tuple[Any, str | None]:
    """(decoded JSON body, None) of one GET (a POST of ``post``), or (None, what went wrong). No
    redirects, no retries."""
    import httpx

    headers = {"accept": "application/json"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    loopback = (urlsplit(url).hostname or "") in _LOOPBACK
    deadline = time.monotonic() + timeout
    try:
        with (
            httpx.Client(timeout=timeout, follow_redirects=False, trust_env=not loopback) as client,
            client.stream("GET" if post is None else "POST", url, headers=headers, json=post) as response,
        ):
            if response.status_code != 200:
                return None, f"HTTP {response.status_code}"
            data = bytearray()
            for chunk in response.iter_bytes():
                data.extend(chunk)
                if len(data) > _PROBE_MAX_BYTES:
                    return None, f"body over {_PROBE_MAX_BYTES} bytes"
                if time.monotonic() > deadline:
                    return None, f"timed out after {timeout:g} s"
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        return None, f"{_UNREACHABLE}: {_detail(exc)}"
    except httpx.TimeoutException:
        return None, f"timed out after {timeout:g} s"
    except (httpx.HTTPError, httpx.InvalidURL, OSError, ValueError) as exc:
        return None, f"failed: {_detail(exc)}"
    try:
        return orjson.loads(bytes(data)), None
    except orjson.JSONDecodeError:
        return None, "not JSON"


def _detail(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def _dumps(content: dict[str, Any]) -> bytes:
    return orjson.dumps(content, option=orjson.OPT_INDENT_2) + b"\n"


def _create_exclusive(path: Path, data: bytes) -> bool:
    # Never overwrites a user's file, even under a concurrent init (i_protocol.atomic).
    try:
        return create_exclusive(path, data)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write: {os_problem(exc)}") from None
