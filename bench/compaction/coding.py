"""A long coding session in local mode (issue 17): one line per file, the request verbatim, ~5 KB.

``session(seed)`` builds a deterministic ~530 KB prefix of a coding task with the core's own
tools: ``read`` of seven source files (16 to 24 KB each, read again now and then), 20 ``edit``
calls per file, ``shell`` test runs with 3 KB logs (the last one failing), narration, and a
latest user request of several lines with its indentation. Each is compacted by the real
``i-compact`` process in local mode; reported: summary bytes, modified paths kept (each on one
line), the latest request kept verbatim, the failing command, reduction.

    python bench/compaction/coding.py
    python bench/compaction/coding.py --worker-src /tmp/head/packages/worker-compact/src   # old
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tau_bench import Worker, compact, measure, summary_message

FILES = 7
EDITS = 20
REQUEST = (
    "Now finish the migration:\n"
    "  1. keep the public API of src/store/index.py stable\n"
    "  2. never touch vendor/\n\n"
    "Then run   pytest -q   and tell me what failed."
)


def session(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    paths = [f"src/{rng.choice(['store', 'api', 'cli', 'core'])}/{name}_{seed}.py" for name in range(FILES)]
    paths = [p.replace(f"/{i}_", f"/mod{i}_") for i, p in enumerate(paths)]
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    history.append({"role": "user", "content": "Migrate the store to the new schema. Do not push without asking."})
    call = 0

    def tool(name: str, arguments: dict[str, Any], output: str) -> None:
        nonlocal call
        call += 1
        cid = f"call_{seed}_{call:04d}"
        history.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
                ],
            }
        )
        history.append({"role": "tool", "tool_call_id": cid, "content": output})

    for round_number in range(EDITS):
        for index, path in enumerate(paths):
            if round_number % 7 == 0:
                body = "".join(f"def f{index}_{n}(x):\n    return x + {n}\n\n" for n in range(rng.randint(450, 650)))
                tool("read", {"path": path}, body)
            old, new = f"return x + {round_number}", f"return x + {round_number} + 1"
            tool("edit", {"path": path, "old_string": old, "new_string": new}, f"edited {path}")
        log = "".join(f"tests/test_{n}.py::test_{k} PASSED\n" for n in range(8) for k in range(12))
        code = 1 if round_number == EDITS - 1 else 0
        tail = "FAILED tests/test_3.py::test_7 - AssertionError\n" if code else ""
        tool("shell", {"command": "pytest -q"}, f"{log}{tail}[exit code {code}]")
        history.append({"role": "assistant", "content": f"Round {round_number}: edits applied. " + "Notes. " * 40})
    history.append({"role": "user", "content": REQUEST})
    history.append({"role": "assistant", "content": "On it."})
    return {"history": history, "cut": len(history) - 1, "paths": paths}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker-src", help="run the worker from this source folder (old vs new)")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        worker = Worker(tmp, "local", args.worker_src)
        try:
            for seed in range(1, args.seeds + 1):
                case = session(seed)
                prefix = case["history"][1 : case["cut"]]
                summary, _ = compact(worker, prefix, case["cut"], None)
                lines = [line for line in summary.splitlines() if any(p in line for p in case["paths"])]
                rows.append(
                    {
                        "prefix": len(json.dumps(prefix).encode()),
                        "bytes": len(summary.encode()),
                        "paths": sum(1 for p in case["paths"] if p in summary),
                        "lines": len(lines),
                        "request": REQUEST in summary,
                        "failed": "pytest -q (exit 1)" in summary,
                        "reduction": 1 - measure([summary_message(summary)]) / measure(prefix),
                    }
                )
        finally:
            worker.close()
    print(
        "| prefix bytes, median | summary bytes, median (max) | modified paths kept | lines naming a path "
        "| latest request verbatim | failing command | reduction, median |"
    )
    print("|---|---|---|---|---|---|---|")
    print(
        f"| {statistics.median(r['prefix'] for r in rows):,.0f} "
        f"| {statistics.median(r['bytes'] for r in rows):,.0f} ({max(r['bytes'] for r in rows):,}) "
        f"| {sum(r['paths'] for r in rows)}/{FILES * len(rows)} | {sum(r['lines'] for r in rows)} "
        f"| {sum(r['request'] for r in rows)}/{len(rows)} | {sum(r['failed'] for r in rows)}/{len(rows)} "
        f"| {100 * statistics.median(r['reduction'] for r in rows):.1f}% |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
