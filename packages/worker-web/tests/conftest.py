"""Fixtures: loopback servers (helpers live in loopback.py, importable from the tests)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from loopback import Server, start


@pytest.fixture
def server() -> Iterator[Server]:
    srv = start("127.0.0.1")
    yield srv
    assert srv.httpd is not None
    srv.httpd.shutdown()
    srv.httpd.server_close()


@pytest.fixture
def other_server() -> Iterator[Server]:
    """A second loopback server on 127.0.0.2: private, and outside an allow list of 127.0.0.1/32."""
    srv = start("127.0.0.2")
    yield srv
    assert srv.httpd is not None
    srv.httpd.shutdown()
    srv.httpd.server_close()
