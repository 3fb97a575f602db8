"""The package's shape: its console script answers --version, and it never imports i_core."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from i_checkpoint.__about__ import __version__

SRC = Path(__file__).parent.parent / "src" / "i_checkpoint"


def test_version_names_the_package_and_the_protocol():
    done = subprocess.run(
        [str(Path(sys.executable).parent / "i-checkpoint"), "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.startswith(f"i-worker-checkpoint {__version__} (i-protocol 1)")


def test_no_module_imports_the_core():
    for path in SRC.glob("*.py"):
        assert "i_core" not in path.read_text(), path
