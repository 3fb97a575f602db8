"""The `hello` handshake: this worker names itself and the extensions it uses (SPEC §3.4)."""

from __future__ import annotations

import pytest

from i_compact.__about__ import __version__
from i_compact.worker import worker

# The declaration is an attribute an i-protocol without the handshake ignores (the worker is then
# silent to hello, as before): this test needs one with it.
pytest.importorskip("i_protocol.handshake")


def test_hello_names_the_package_and_its_extensions():
    sent = {"package": "i-core", "version": "0.3.3", "protocol": "1", "extensions": []}
    answer = worker.handle({"id": 1, "event": "hello", "workspace": "/tmp", "data": sent})["data"]
    assert (answer["package"], answer["version"], answer["protocol"]) == ("i-worker-compact", __version__, "1")
    assert answer["extensions"] == [
        "after_compact_commit",
        "after_compact_rounds",
        "chunks",
        "config_kind",
        "cut_estimates",
        "focus",
        "prepared",
        "previous_attempt",
        "summary_request_overhead",
    ]
