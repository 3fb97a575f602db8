"""``compact.json``: the built-in compaction policy's own configuration, validated at the edge."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from i_protocol import WorkerError
from i_protocol.errors import FileDecodeError, FileTooLarge, SettingsError
from i_protocol.files import read_text
from i_protocol.settings import (
    field_error,
    optional_bool,
    optional_choice,
    optional_int,
    optional_str,
    reject_unknown,
)

if TYPE_CHECKING:
    from i_protocol import Paths, WorkerConfig

KEEP_RECENT_MIN = 1
KEEP_RECENT_MAX = 10000
PROMPT_MAX_CHARS = 32000
LOCAL_MAX_CHARS_RANGE = (1000, 32000)
IMAGE_MODES = ("keep", "omit", "describe")
MODES = ("model", "local")
UNFINISHED_SUMMARY = ("local", "fail")
KNOWN_FIELDS = (
    "enabled",
    "keep_recent",
    "images",
    "prompt",
    "mode",
    "local_max_chars",
    "cache",
    "on_unfinished_summary",
    "model_sections",
)


@dataclass(frozen=True)
class CompactConfig:
    """The validated policy; ``images`` None means "follow the budget policy, else keep"."""

    enabled: bool = True
    keep_recent: int = 4
    images: str | None = None
    prompt_path: str | None = None
    mode: str = "model"
    local_max_chars: int = 8000
    cache: bool = True
    on_unfinished_summary: str = "local"
    """When a model summary did not finish normally (``previous_attempt`` reason
    ``summary_not_finished``): ``local`` answers with the local summary, ``fail`` declines."""
    model_sections: bool = True
    """Model mode appends the coding sections (requests, action log) and the task statement (in
    the record) to the reply."""
    source: str = "defaults"


def parse_config(config: WorkerConfig) -> CompactConfig:
    """Validate a loaded ``compact.json`` (all fields optional) into a :class:`CompactConfig`; every
    problem is a ``SettingsError`` (kind ``config``) naming the file and the field."""
    data: dict[str, Any] = config.data
    file = config.path or "compact.json"
    reject_unknown(data, KNOWN_FIELDS, file=file)
    low, high = LOCAL_MAX_CHARS_RANGE
    prompt = optional_str(data, "prompt", None, file=file)
    if prompt is not None and not prompt.strip():
        raise field_error("prompt", "a non-empty file path", file=file)
    defaults = CompactConfig()
    return CompactConfig(
        enabled=optional_bool(data, "enabled", defaults.enabled, file=file),
        keep_recent=optional_int(
            data, "keep_recent", defaults.keep_recent, file=file, minimum=KEEP_RECENT_MIN, maximum=KEEP_RECENT_MAX
        ),
        images=optional_choice(data, "images", IMAGE_MODES, None, file=file),
        prompt_path=None if prompt is None else config.resolve(prompt),
        mode=optional_choice(data, "mode", MODES, defaults.mode, file=file),
        local_max_chars=optional_int(
            data, "local_max_chars", defaults.local_max_chars, file=file, minimum=low, maximum=high
        ),
        cache=optional_bool(data, "cache", defaults.cache, file=file),
        on_unfinished_summary=optional_choice(
            data, "on_unfinished_summary", UNFINISHED_SUMMARY, defaults.on_unfinished_summary, file=file
        ),
        model_sections=optional_bool(data, "model_sections", defaults.model_sections, file=file),
        source=config.path or "defaults",
    )


def check_config(config: WorkerConfig, paths: Paths) -> None:
    """The worker's config check (``i-compact --check-config`` and each first request): compact.json's
    fields, and the prompt file it names."""
    parsed = parse_config(config)
    if parsed.prompt_path is not None:
        try:
            read_prompt_file(parsed.prompt_path)
        except WorkerError as exc:
            raise SettingsError(str(exc)) from None


def read_prompt_file(path: str) -> str:
    """The configured prompt text: must exist, be UTF-8, non-empty and ≤32000 characters."""
    try:
        text = read_text(path, PROMPT_MAX_CHARS * 4, what="prompt file")  # check_prompt says by how much
    except FileNotFoundError:
        raise WorkerError(f"compact.json: prompt file {path} does not exist") from None
    except OSError as exc:
        raise WorkerError(f"compact.json: cannot read prompt file {path}: {exc.strerror or exc}") from None
    except FileDecodeError:
        raise WorkerError(f"compact.json: prompt file {path} is not valid UTF-8") from None
    except FileTooLarge:
        raise WorkerError(f"compact.json: prompt file {path} is over {PROMPT_MAX_CHARS * 4} characters") from None
    return check_prompt(text, f"prompt file {path}")


def check_prompt(text: str, where: str) -> str:
    """Reject an empty or over-long prompt with a message naming where it came from."""
    if not text.strip():
        raise WorkerError(f"compact.json: {where} is empty")
    if len(text) > PROMPT_MAX_CHARS:
        raise WorkerError(f"compact.json: {where} has {len(text)} characters; the limit is {PROMPT_MAX_CHARS}")
    return text


def image_mode(config: CompactConfig, budget: Any, model: Any) -> str:
    """compact.json's images, else the budget policy's (model-specific) images setting, else keep."""
    if config.images is not None:
        return config.images
    setting = budget.get("images") if isinstance(budget, dict) else None
    if isinstance(setting, dict) and isinstance(model, str):
        setting = setting.get(model, setting.get("default"))
    return setting if setting in IMAGE_MODES else "keep"
