"""``compact.json``: the built-in compaction policy's own configuration, validated at the edge."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from i_protocol import WorkerError
from i_protocol.errors import FileDecodeError, FileTooLarge
from i_protocol.files import read_text

if TYPE_CHECKING:
    from i_protocol import WorkerConfig

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
    """Validate a loaded ``compact.json`` (all fields optional) into a :class:`CompactConfig`."""
    data: dict[str, Any] = config.data
    where = config.path or "compact.json"
    unknown = sorted(set(data) - set(KNOWN_FIELDS))
    if unknown:
        raise WorkerError(f"{where}: unknown field(s) {', '.join(unknown)}; known fields: {', '.join(KNOWN_FIELDS)}")
    enabled = data.get("enabled", True)
    if not isinstance(enabled, bool):
        raise WorkerError(f"{where}: enabled must be true or false, got {enabled!r}")
    keep_recent = data.get("keep_recent", 4)
    if (
        not isinstance(keep_recent, int)
        or isinstance(keep_recent, bool)
        or not KEEP_RECENT_MIN <= keep_recent <= KEEP_RECENT_MAX
    ):
        raise WorkerError(
            f"{where}: keep_recent must be an integer in {KEEP_RECENT_MIN}..{KEEP_RECENT_MAX}, got {keep_recent!r}"
        )
    images = data.get("images")
    if images is not None and images not in IMAGE_MODES:
        raise WorkerError(f"{where}: images must be one of {', '.join(IMAGE_MODES)}, got {images!r}")
    mode = data.get("mode", "model")
    if mode not in MODES:
        raise WorkerError(f"{where}: mode must be one of {', '.join(MODES)}, got {mode!r}")
    local_max = data.get("local_max_chars", 8000)
    low, high = LOCAL_MAX_CHARS_RANGE
    if not isinstance(local_max, int) or isinstance(local_max, bool) or not low <= local_max <= high:
        raise WorkerError(f"{where}: local_max_chars must be an integer in {low}..{high}, got {local_max!r}")
    cache = data.get("cache", True)
    if not isinstance(cache, bool):
        raise WorkerError(f"{where}: cache must be true or false, got {cache!r}")
    unfinished = data.get("on_unfinished_summary", "local")
    if unfinished not in UNFINISHED_SUMMARY:
        raise WorkerError(
            f"{where}: on_unfinished_summary must be one of {', '.join(UNFINISHED_SUMMARY)}, got {unfinished!r}"
        )
    model_sections = data.get("model_sections", True)
    if not isinstance(model_sections, bool):
        raise WorkerError(f"{where}: model_sections must be true or false, got {model_sections!r}")
    prompt = data.get("prompt")
    prompt_path = None
    if prompt is not None:
        if not isinstance(prompt, str) or not prompt.strip():
            raise WorkerError(f"{where}: prompt must be a non-empty file path, got {prompt!r}")
        prompt_path = config.resolve(prompt)
    return CompactConfig(
        enabled=enabled,
        keep_recent=keep_recent,
        images=images,
        prompt_path=prompt_path,
        mode=mode,
        local_max_chars=local_max,
        cache=cache,
        on_unfinished_summary=unfinished,
        model_sections=model_sections,
        source=config.path or "defaults",
    )


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
