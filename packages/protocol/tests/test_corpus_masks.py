"""The secret table on real coding runs (../shared/corpora/coding-runs/dev): every span it masks is
in the hand-labelled list (fixtures/corpus_masks.json), none of them is code, and every span
labelled a secret is still masked, whole. Skipped when the corpus is not beside the repository."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from i_protocol.secrets import find_secrets

LABELS: list[dict[str, Any]] = json.loads((Path(__file__).parent / "fixtures" / "corpus_masks.json").read_text())[
    "spans"
]
Key = tuple[str, int, str, int]


def _corpus() -> Path | None:
    configured = os.environ.get("I_TEST_CODING_RUNS")
    root = Path(__file__).resolve().parents[3]
    folder = Path(configured) if configured else root.parent / "shared" / "corpora" / "coding-runs" / "dev"
    return folder if any(folder.glob("*/messages.json")) else None


def _strings(value: object, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _masks(folder: Path) -> dict[Key, str]:
    """Each span the table masks in the corpus, by (run, message, field, start): its text."""
    found: dict[Key, str] = {}
    for file in sorted(folder.glob("*/messages.json")):
        for index, message in enumerate(json.loads(file.read_text(encoding="utf-8"))):
            for field, text in _strings(message):
                for match in find_secrets(text):
                    found[(file.parent.name, index, field, match.start)] = text[match.start : match.end]
    return found


@pytest.fixture(scope="module")
def masks() -> dict[Key, str]:
    folder = _corpus()
    if folder is None:
        pytest.skip("coding-runs corpus not found beside the repository (../shared; or set I_TEST_CODING_RUNS)")
    return _masks(folder)


def _key(label: dict[str, Any]) -> Key:
    return (label["run"], label["message"], label["field"], label["start"])


def test_the_list_is_well_formed() -> None:
    assert all(label["label"] in ("secret", "code") and label["why"] for label in LABELS)
    assert len({_key(label) for label in LABELS}) == len(LABELS)


def test_every_mask_on_the_corpus_is_labelled(masks: dict[Key, str]) -> None:
    labelled = {_key(label) for label in LABELS}
    unlabelled = [(key, len(text), _digest(text)) for key, text in masks.items() if key not in labelled]
    assert unlabelled == [], "label these spans in fixtures/corpus_masks.json"


def test_no_code_is_masked(masks: dict[Key, str]) -> None:
    code = [label["shown"] for label in LABELS if label["label"] == "code" and _key(label) in masks]
    assert code == []


def test_every_labelled_secret_is_still_masked_whole(masks: dict[Key, str]) -> None:
    secrets = [label for label in LABELS if label["label"] == "secret"]
    lost = [
        (label["run"], label["message"], label["shown"])
        for label in secrets
        if _key(label) not in masks
        or (len(masks[_key(label)]), _digest(masks[_key(label)])) != (label["length"], label["sha256"])
    ]
    assert secrets and lost == []
