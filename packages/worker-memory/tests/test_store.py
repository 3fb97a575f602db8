"""The cost of each operation: a write is one lock and one atomic replace; reads take no lock."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import i_protocol.files as files_module
from i_memory import Limits, MemoryStore


class Counts:
    def __init__(self) -> None:
        self.locks = 0
        self.writes = 0


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Counts:
    seen = Counts()
    real_lock, real_write = files_module.acquire_lock, files_module.atomic_write_bytes

    def counting_lock(*args: object, **kwargs: object) -> files_module.HeldLock:
        seen.locks += 1
        return real_lock(*args, **kwargs)  # type: ignore[arg-type]

    def counting_write(path: object, data: bytes, *args: object, **kwargs: object) -> None:
        seen.writes += 1
        real_write(path, data, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(files_module, "acquire_lock", counting_lock)
    monkeypatch.setattr(files_module, "atomic_write_bytes", counting_write)
    return seen


def test_set_is_one_lock_and_one_write(tmp_path: Path, counts: Counts) -> None:
    store = MemoryStore(tmp_path / "state", Limits())
    store.set("a", "1")
    assert (counts.locks, counts.writes) == (1, 1)
    store.set("a", "2")
    assert (counts.locks, counts.writes) == (2, 2)
    store.set("a", "2")  # unchanged: no write
    assert (counts.locks, counts.writes) == (3, 2)


def test_reads_take_no_lock_and_write_nothing(tmp_path: Path, counts: Counts) -> None:
    store = MemoryStore(tmp_path / "state", Limits())
    assert store.entries() == {}
    store.set("a", "1")
    before = (counts.locks, counts.writes)
    assert store.entries() == {"a": "1"}
    assert (counts.locks, counts.writes) == before


def test_delete_of_a_missing_key_writes_nothing(tmp_path: Path, counts: Counts) -> None:
    store = MemoryStore(tmp_path / "state", Limits())
    store.set("a", "1")
    assert store.delete("zzz") is None
    assert counts.writes == 1
    change = store.delete("a")
    assert change is not None and change.entries == {} and counts.writes == 2


_KEY_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40).filter(
    lambda key: key.strip() == key
)
_VALUE_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=200)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(_KEY_TEXT, _VALUE_TEXT, max_size=8))
def test_any_unicode_round_trips_through_the_file(
    tmp_path_factory: pytest.TempPathFactory, written: dict[str, str]
) -> None:
    from i_memory.entry import check_key, check_value

    limits = Limits()
    store = MemoryStore(tmp_path_factory.mktemp("unicode"), limits)
    for key, value in written.items():
        store.set(check_key("t", key, limits), check_value("t", value, limits))
    assert MemoryStore(store.state_dir, limits).entries() == written
