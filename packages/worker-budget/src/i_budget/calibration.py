"""The opt-in calibrated estimator's memory: per-model bytes-per-token samples from real usage.

Stored in ``<workspace state>/budget/calibration.json`` under a file lock with atomic replace.
The ratio used is the *lowest* recent sample (fewest bytes per token = most tokens) times a
margin, so the calibrated estimate never goes below what the observed ratios' lower bound implies.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .estimate import Observation

FILE_NAME = "calibration.json"
MIN_SAMPLES = 3
MAX_SAMPLES = 64
MAX_MODELS = 256
MAX_FILE_BYTES = 1 << 20
MIN_OBSERVATION_BYTES = 2048
"""Smaller requests are dominated by fixed framing and would teach nothing about the text."""
RATIO_RANGE = (0.25, 16.0)
"""Plausible bytes per token; a sample outside is corrupt usage and is not learned."""
MARGIN = 0.9
"""The lowest sample is scaled by this: a sample is an average over a whole request, and new
content can be denser than any average seen (measured in bench/budget_calibration.py)."""
LOCK_TIMEOUT_S = 2.0
MAX_NONASCII_SHARE = 0.1
"""Requests with more non-ASCII bytes than this teach little about the ASCII ratio: not learned."""


@dataclass(slots=True)
class Calibration:
    """What the store knows for one model: its samples and the conservative ratio."""

    samples: int
    ratio: float | None
    detail: str | None = None


def calibration_path(state_dir: Path) -> Path:
    """Where a workspace's calibration lives."""
    return state_dir / "budget" / FILE_NAME


def _read(path: Path) -> tuple[dict[str, Any], str | None]:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return {"version": 1, "models": {}}, None
    except OSError as exc:
        return {"version": 1, "models": {}}, f"calibration file unreadable ({exc.strerror}); starting afresh"
    if len(raw) > MAX_FILE_BYTES:
        return {"version": 1, "models": {}}, f"calibration file is over {MAX_FILE_BYTES} bytes; starting afresh"
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {"version": 1, "models": {}}, "calibration file is not valid JSON; starting afresh"
    if not isinstance(doc, dict) or not isinstance(doc.get("models"), dict):
        return {"version": 1, "models": {}}, "calibration file has an unknown shape; starting afresh"
    return doc, None


def _ratios(entry: object) -> list[float]:
    if not isinstance(entry, dict) or not isinstance(entry.get("samples"), list):
        return []
    low, high = RATIO_RANGE
    found: list[float] = []
    for sample in entry["samples"]:
        if isinstance(sample, list) and len(sample) == 2:
            ratio = sample[1]
            if isinstance(ratio, int | float) and not isinstance(ratio, bool) and low <= ratio <= high:
                found.append(float(ratio))
    return found


def _samples(entry: object) -> list[list[Any]]:
    if not isinstance(entry, dict) or not isinstance(entry.get("samples"), list):
        return []
    return [sample for sample in entry["samples"] if isinstance(sample, list)]


def _updated(entry: object) -> float:
    value = entry.get("updated", 0) if isinstance(entry, dict) else 0
    return float(value) if isinstance(value, int | float) else 0.0


def load_calibration(path: Path, model: str) -> Calibration:
    """The learned ratio for ``model``: the lowest recent sample times MARGIN, once there are enough."""
    doc, problem = _read(path)
    ratios = _ratios(doc["models"].get(model))
    if len(ratios) < MIN_SAMPLES:
        return Calibration(len(ratios), None, problem)
    return Calibration(len(ratios), round(min(ratios) * MARGIN, 4), problem)


def observation_ratio(observation: Observation) -> float | None:
    """ASCII bytes per token of one observation, or None when it is too small, mixed or implausible.

    Dividing only the ASCII bytes by *all* input tokens can only understate the ASCII ratio,
    which keeps the learned figure on the conservative side.
    """
    total = observation.ascii_bytes + observation.nonascii_bytes
    if total < MIN_OBSERVATION_BYTES or observation.input_tokens <= 0:
        return None
    if observation.nonascii_bytes > total * MAX_NONASCII_SHARE:
        return None
    ratio = observation.ascii_bytes / observation.input_tokens
    low, high = RATIO_RANGE
    return ratio if low <= ratio <= high else None


def record_observation(path: Path, observation: Observation) -> str:
    """Add one sample (deduplicated by prefix fingerprint); returns what happened, for the result."""
    ratio = observation_ratio(observation)
    if ratio is None:
        return "skipped: observation too small or implausible"
    from filelock import FileLock, Timeout

    os.makedirs(path.parent, exist_ok=True)
    try:
        with FileLock(str(path) + ".lock", timeout=LOCK_TIMEOUT_S):
            doc, _problem = _read(path)
            models: dict[str, Any] = doc["models"]
            entry = models.get(observation.model)
            samples = _samples(entry)
            key = observation.fingerprint[-16:]
            if any(s and s[0] == key for s in samples):
                return "known: this prefix was already learned"
            samples.append([key, round(ratio, 4)])
            models[observation.model] = {"samples": samples[-MAX_SAMPLES:], "updated": time.time()}
            if len(models) > MAX_MODELS:
                oldest = sorted(models, key=lambda name: _updated(models[name]))
                for name in oldest[: len(models) - MAX_MODELS]:
                    del models[name]
            from i_protocol import atomic_write_bytes

            atomic_write_bytes(path, orjson.dumps({"version": 1, "models": models}))
    except Timeout:
        return "skipped: calibration file is locked by another process"
    except OSError as exc:
        return f"skipped: calibration file not writable ({exc.strerror or exc})"
    return "recorded"
