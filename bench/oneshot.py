"""One-shot overhead: `i -C proj --no-stream "hello"` as a whole process vs a bare httpx client.

Scripts and CI jobs call `i "task"` many times, and each call pays the runtime's start-up: the
core's own imports, the worker processes the first request needs, the hook calls and the session
checkpoint. This bench measures that price against the cheapest possible client: a Python process
that imports httpx and sends the very request `i` sent (its recorded body) to the same loopback
scripted model. Runs are interleaved so every subject sees the same machine noise.

Subjects:
- ``bare httpx``: ``python -c 'import httpx; httpx.post(...)'`` with `i`'s recorded body;
- ``i standard``: the standard profile with memory and web disabled and no mcp.json;
- ``i standard + memory/web/MCP``: the standard profile with memory, web and one MCP stdio server
  (the worker-mcp test fixture) configured. Its MCP tools come from the kept ``tools_list`` answer
  (``cache_dir/core/tools-list``, written by the warm-up run), as in every run after the first;
- ``i standard + memory/web/MCP, tools asked``: the same with the kept answer deleted before each
  run, so the MCP worker starts and is asked (the first run, or the first after mcp.json changed).

With ``--before-src DIR`` (the ``packages/`` of another checkout, e.g. ``git archive HEAD packages |
tar -x -C DIR``) each `i` subject also runs with that checkout's core (``PYTHONPATH``) in the same
interleaved rounds; its workers are this checkout's (a worker's environment is cleared).

Also reported: worker cold start (spawn to first answer) against ``python -c pass`` and
``python -c 'import orjson'``, and which worker processes a one-shot run started.

Run where every package is installed (``scripts/bootstrap`` makes .venv):
    .venv/bin/python bench/oneshot.py [--quick] [--runs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from protocol_roundtrip import bench_cold_start, fmt  # noqa: E402  (a sibling bench script)

from i_scripted import ScriptedModel  # noqa: E402

PY = sys.executable
I_COMMAND = str(Path(PY).parent / "i")
# What pip writes as the `i` console script: the "before" subjects run their core through it, so
# both sides pay the same wrapper.
# A core that has ``run`` (exit_fast, the console-script target since d343d6c) runs through it.
OLD_ENTRY = """import re
import sys
import i_core.__main__ as entry
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    entry.run() if hasattr(entry, 'run') else sys.exit(entry.main())
"""


def i_command(env: dict[str, str]) -> list[str]:
    """The `i` of a subject: this checkout's console script, or an older core's entry."""
    return [PY, env["ONESHOT_OLD_ENTRY"]] if "ONESHOT_OLD_ENTRY" in env else [I_COMMAND]


def forget_tools(env: dict[str, str]) -> None:
    if env.get("ONESHOT_FORGET_TOOLS"):  # the bench's own switch: ask the tools_list workers again
        shutil.rmtree(Path(env["I_CACHE_DIR"]) / "core" / "tools-list", ignore_errors=True)


MCP_SERVER = HERE.parent / "packages" / "worker-mcp" / "tests" / "fixture_server.py"

BARE_CLIENT = """
import sys, httpx
body = open(sys.argv[2], "rb").read()
reply = httpx.post(sys.argv[1], content=body, headers={"content-type": "application/json"}, timeout=30)
reply.raise_for_status()
print(reply.json()["choices"][0]["message"]["content"])
"""


def setup(root: Path, name: str, base_url: str, *, extras: bool) -> dict[str, str]:
    """A config/data/cache/runtime set for one subject; returns its environment."""
    env = dict(os.environ)
    for key in ("config", "data", "cache", "runtime"):
        (root / name / key).mkdir(parents=True)
        env[f"I_{key.upper()}_DIR"] = str(root / name / key)
    env.pop("OPENAI_API_KEY", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its bytecode: no compiling per run
    config_dir = root / name / "config"
    config = {
        "protocol": "openai",
        "base_url": base_url,
        "model": "scripted-1",
        "max_tokens": 256,
        "retries": 0,
        "timeout": 30,
        "stream": False,
        "budget": {"context_window": 100000},
    }
    (config_dir / "config.json").write_bytes(orjson.dumps(config))
    disabled = [] if extras else ["memory", "web"]
    (config_dir / "plugins.json").write_bytes(orjson.dumps({"profile": "standard", "disabled": disabled}))
    (config_dir / "builtin.json").write_bytes(b'{"builtin_profile":"configured","tools":[]}')
    if extras:
        server = {"command": PY, "args": [str(MCP_SERVER)], "timeout": 10}
        (config_dir / "mcp.json").write_bytes(orjson.dumps({"mcpServers": {"fixture": server}}))
    return env


def run_i(env: dict[str, str], project: Path) -> float:
    forget_tools(env)
    started = time.perf_counter()
    done = subprocess.run(
        [*i_command(env), "-C", str(project), "--no-stream", "hello"], env=env, capture_output=True, text=True
    )
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"i failed ({done.returncode}): {done.stderr.strip()}")
    return took


def run_bare(script: Path, url: str, body: Path) -> float:
    started = time.perf_counter()
    subprocess.run([PY, str(script), url, str(body)], check=True, capture_output=True)
    return time.perf_counter() - started


def census(env: dict[str, str], project: Path) -> list[str]:
    """The worker processes one run starts: the core's children, read from /proc mid-run."""
    forget_tools(env)
    process = subprocess.Popen(
        [*i_command(env), "-C", str(project), "--no-stream", "hello"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    seen: dict[int, str] = {}
    while process.poll() is None:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == process.pid and argv[0]:  # read again until the child has exec'd its program
                seen[int(entry.name)] = " ".join(os.path.basename(a.decode()) for a in argv if a)
    process.wait()
    core = f"{os.path.basename(PY)} i "
    return sorted(name for name in seen.values() if not name.startswith(("sh ", core)))  # not the reaper


def cold_start_subjects() -> dict[str, list[str]]:
    bin_dir = Path(PY).parent
    subjects = {
        "bundled approval": [PY, "-m", "i_core", "--runtime", "worker", "approval"],
        "bundled approval,prompts,skills": [PY, "-m", "i_core", "--runtime", "worker", "approval,prompts,skills"],
    }
    for script in ("i-budget", "i-cache", "i-memory", "i-compact", "i-web", "i-mcp"):
        if (bin_dir / script).exists():
            subjects[script] = [str(bin_dir / script)]
    return {label: argv for label, argv in subjects.items() if _answers(argv)}


def _answers(argv: list[str]) -> bool:
    """True when ``argv`` starts and answers (an older core has no combined bundled worker)."""
    from i_protocol import CallError
    from i_protocol.host import WorkerProcess

    try:
        worker = WorkerProcess.spawn(argv, env=dict(os.environ))
        worker.call("finish", {"messages": []}, timeout=30)
    except CallError:
        return False
    worker.close()
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    parser.add_argument("--runs", type=int, default=None, help="interleaved rounds (default 15, quick 5)")
    parser.add_argument("--before-src", type=Path, help="a checkout's packages/ folder to compare the core with")
    args = parser.parse_args()
    rounds = args.runs or (5 if args.quick else 15)
    root = Path(tempfile.mkdtemp(prefix="i-oneshot-"))
    project = root / "project"
    project.mkdir()
    (project / "README.md").write_text("# demo\n")
    print(f"python {sys.version.split()[0]}; cores: {os.cpu_count()}; load average {os.getloadavg()[0]:.1f}")
    steps = [{"text": "Hello! How can I help?"}] * (rounds * 5 + 40)
    with ScriptedModel(steps) as model:
        subjects = {
            "i standard": setup(root, "plain", model.base_url, extras=False),
            "i standard + memory/web/MCP": setup(root, "extras", model.base_url, extras=True),
        }
        subjects["i standard + memory/web/MCP, tools asked"] = {
            **subjects["i standard + memory/web/MCP"],
            "ONESHOT_FORGET_TOOLS": "1",
        }
        if args.before_src is not None:
            before = os.pathsep.join(str(src) for src in sorted(args.before_src.resolve().glob("*/src")))
            entry = root / "old-entry.py"
            entry.write_text(OLD_ENTRY)
            for name in list(subjects):
                if "ONESHOT_FORGET_TOOLS" not in subjects[name]:  # the core before kept nothing
                    subjects[f"{name} (before)"] = {
                        **subjects[name],
                        "PYTHONPATH": before,
                        "ONESHOT_OLD_ENTRY": str(entry),
                    }
        for name, env in subjects.items():
            run_i(env, project)  # warm the page cache, create the workspace ids
            print(f"{name}: workers started by one run: {', '.join(census(env, project)) or 'none'}")
        body = root / "body.json"
        body.write_bytes(orjson.dumps(model.requests[-1].body))
        script = root / "bare.py"
        script.write_text(BARE_CLIENT)
        url = model.base_url + "/chat/completions"
        run_bare(script, url, body)
        times: dict[str, list[float]] = {"bare httpx": [], **{name: [] for name in subjects}}
        for _ in range(rounds):
            times["bare httpx"].append(run_bare(script, url, body))
            for name, env in subjects.items():
                times[name].append(run_i(env, project))
    bare = statistics.median(times["bare httpx"])
    print(f"\none-shot, whole process, {rounds} interleaved rounds")
    for name, values in times.items():
        over = [v - bare for v in values]
        extra = "" if name == "bare httpx" else f"   overhead median {statistics.median(over) * 1e3:6.1f} ms"
        print(f"  {name:46s} {fmt(values, 'ms', 1e3)}{extra}")
    print("  (target: overhead < 150 ms)")

    n_cold = 5 if args.quick else 20
    os.environ.update({k: v for k, v in subjects["i standard"].items() if k.startswith("I_") and k.endswith("_DIR")})
    cold = bench_cold_start(n_cold, cold_start_subjects())
    base = statistics.median(cold["python -c pass"])
    print(f"\nworker cold start: spawn to first answer, {n_cold} runs each, interleaved")
    for label, values in cold.items():
        print(f"  {label:32s} {fmt(values, 'ms', 1e3)}   {statistics.median(values) / base:.2f}x bare")


if __name__ == "__main__":
    main()
