"""The core's copies of worker tool schemas are exactly what the installed workers declare.

The core keeps the memory and web tools' schemas (``i_core/tool_schemas.json``) so that a binding
can replace a worker's executable but never its model-facing contract; this pins the copy to its
source, the worker's own ``schemas`` command.
"""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest

from i_core.modules import MODULES
from i_protocol.testing import scaled


@pytest.mark.parametrize(("module", "package"), [("memory", "i_memory"), ("web", "i_web")])
def test_the_core_copy_matches_the_worker(module: str, package: str) -> None:
    printed = subprocess.run(
        [sys.executable, "-m", package, "schemas"], capture_output=True, check=True, timeout=scaled(60)
    ).stdout
    declared = orjson.loads(printed)
    assert declared, f"{package} declares no tools"
    assert list(MODULES[module].tools) == declared
