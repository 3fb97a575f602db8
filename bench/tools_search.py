"""Benchmark the core's built-in `search` tool over a checkout (default: this repository).

Prints the median and spread of 10 runs per pattern and, side by side, `grep -rIn` over the same
tree as a reference (with --exclude-dir for the same hidden and build folders; grep still reads
files over 1 MiB and hidden files, which the tool skips).

    python bench/tools_search.py [--quick] [--root DIR]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import time
from pathlib import Path

from i_core.tools import ToolContext, execute, prepare
from i_core.tools.walk import SKIP_DIRS

PATTERNS = [
    {"pattern": "def "},
    {"pattern": "ToolError", "regex": False},
    {"pattern": "todo|fixme", "case_sensitive": False},
    {"pattern": "import", "glob": "*.py"},
]


def timed(func) -> float:
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="3 runs instead of 10")
    parser.add_argument("--root", default=str(Path(__file__).resolve().parent.parent))
    options = parser.parse_args()
    runs = 3 if options.quick else 10
    ctx = ToolContext(Path(options.root))
    grep = shutil.which("grep")
    print(f"root {ctx.workspace}, {runs} runs each")
    print(f"{'arguments':55} {'median ms':>10} {'min-max ms':>14} {'lines':>6} {'grep ms':>13} {'ratio':>6}")
    for arguments in PATTERNS:
        output = execute(prepare("search", arguments, ctx), ctx).output
        times = [timed(lambda a=arguments: execute(prepare("search", a, ctx), ctx)) * 1000 for _ in range(runs)]
        median = statistics.median(times)
        reference = ""
        ratio = ""
        if grep:
            excludes = [f"--exclude-dir={name}" for name in (".*", *sorted(SKIP_DIRS))]
            command = [grep, "-rIn", *excludes, *(["-i"] if arguments.get("case_sensitive") is False else [])]
            command += ["-F" if arguments.get("regex") is False else "-E", arguments["pattern"], str(ctx.workspace)]
            grep_times = [timed(lambda c=command: subprocess.run(c, capture_output=True)) * 1000 for _ in range(runs)]
            grep_median = statistics.median(grep_times)
            reference = f"{grep_median:13.1f}"
            ratio = f"{median / grep_median:6.2f}"
        label = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
        spread = f"{min(times):.1f}-{max(times):.1f}"
        print(f"{label:55} {median:10.1f} {spread:>14} {len(output.splitlines()):6} {reference} {ratio}")


if __name__ == "__main__":
    main()
