"""The README's main job: write the default configuration and print the generated manifest."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


def main() -> int:
    i = str(BIN / "i")
    steps = [[i, "--version"], [i, "--runtime", "init"], [i, "--runtime", "manifest", "standard"]]
    for argv in steps:
        print(f"$ i {' '.join(argv[1:])}", file=sys.stderr, flush=True)
        result = subprocess.run(argv)
        if result.returncode != 0:
            return result.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
