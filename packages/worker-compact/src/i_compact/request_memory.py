"""What one request remembers: a module registers a store here (a dict or a list), and the worker
empties every store after each request (:func:`forget`), so no request's time depends on an
earlier one and no history stays alive between requests."""

from __future__ import annotations

from typing import Protocol, TypeVar


class _Clearable(Protocol):
    def clear(self) -> None: ...


Store = TypeVar("Store", bound=_Clearable)

_STORES: list[_Clearable] = []


def per_request(store: Store) -> Store:
    """``store``, emptied after each request."""
    _STORES.append(store)
    return store


def forget() -> None:
    """Empty every registered store (the worker calls it when a request ends)."""
    for store in _STORES:
        store.clear()
