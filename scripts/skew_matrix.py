"""The skew matrix: pinned releases of the core, the workers and i-protocol, mixed as ops teams mix
them, each row either working or stopping before the first request with one line naming the
package and the version it needs (docs/compatibility.md, "Testing a pin before rolling it out").

Run through ``scripts/skew-matrix`` (which makes the driver environment). Releases are built from
the commit their CHANGELOG.md records (``git archive``), into a wheel cache under ``.cache/skew/``;
each package is installed in its own virtual environment as pipx would (the third-party
dependencies come from the driver's site-packages through a ``.pth`` file, so no index is asked);
today's packages are built from HEAD (uncommitted changes are not in the matrix). A session row
runs the real ``i`` against the scripted model: turns with a memory tool call, a forced compaction,
a resumed turn that must see the memory, an MCP tool call (the i-mcp worker with the MCP SDK's
fixture server), the cache report and ``i --runtime versions``.

Prints one line per row and ``skew: N passed, N failed, N skipped, N xfailed``; exit 1 on a failure.
A row that must stop (an incompatible pin) passes when the run ends before the first model
request with one line naming the package and the version it needs (the ``hello`` handshake); a row
may be marked an expected failure (xfail) with its reason.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import releases  # scripts/releases.py: changelogs, builds

ROOT = releases.ROOT
CACHE = Path(os.environ.get("SKEW_CACHE", ROOT / ".cache" / "skew")).resolve()
DRIVER_SITE = Path(next(p for p in sys.path if p.endswith("site-packages")))
MCP_SERVER = ROOT / "packages" / "worker-mcp" / "tests" / "fixture_server.py"
FILLER = (
    "The build pipeline compiles the parser, links the runtime and runs the integration suite; "
    "logs go to build/logs and the artefacts to dist/. "
) * 12
SCRIPTS = {
    "core": "i",
    "worker-budget": "i-budget",
    "worker-compact": "i-compact",
    "worker-cache": "i-cache",
    "worker-memory": "i-memory",
    "worker-web": "i-web",
    "worker-mcp": "i-mcp",
}
WORKERS = [f for f in SCRIPTS if f != "core"]


@dataclass(frozen=True)
class Build:
    """One package at one build: its folder, version, the commit to archive and the tree it names."""

    folder: str
    version: str
    commit: str
    tree: str

    @property
    def label(self) -> str:
        return f"{releases.package(self.folder).dist} {self.version}"


@dataclass
class Row:
    name: str
    run: Callable[[], str]
    """Returns a short detail; raises ``Failed`` (or anything) for a failure, ``Skipped`` to skip."""
    xfail: str | None = None
    result: str = ""
    detail: str = ""
    seconds: float = 0.0


class Failed(Exception):
    """A row's check did not hold."""


class Skipped(Exception):
    """A row that cannot run here (its reason is printed)."""


# -- builds and environments ------------------------------------------------------------------


def head_build(folder: str) -> Build:
    pkg = releases.package(folder)
    commit = releases.git("rev-parse", "HEAD")
    tree = releases.git("rev-parse", f"HEAD:{pkg.src}")
    return Build(folder, releases.about_version(pkg), commit, tree)


def changelog_builds(folder: str) -> list[Build]:
    """The released builds of a package, newest first, as its changelog records them."""
    pkg = releases.package(folder)
    text = (ROOT / pkg.changelog).read_text(encoding="utf-8")
    return [Build(folder, e.version, e.commit, e.tree) for e in releases.released(text) if e.commit and e.tree]


def previous_build(folder: str) -> Build | None:
    """The release before the current version (the changelog's second entry)."""
    found = changelog_builds(folder)
    return found[1] if len(found) > 1 else None


def build_of(folder: str, version: str) -> Build:
    for b in changelog_builds(folder):
        if b.version == version:
            return b
    raise Skipped(f"{releases.package(folder).dist} {version} is not in its changelog")


def wheel(build: Build) -> Path:
    """The wheel of ``build``, built once from ``git archive <commit> packages/<folder>``."""
    return _built_wheel(build, CACHE / "wheels" / f"{build.folder}-{build.tree[:12]}")


def doctored_protocol_wheel() -> tuple[Build, Path]:
    """Today's i-protocol version built from a copy of its source that no longer exports
    ``exit_fast`` (the core's entry needs it) and whose ``Worker`` has no ``run`` (the workers'
    entries need it): another build under the same version, as a wheel from a stray checkout would be.
    Used when the history holds no other build of a fitting version (each version names one build)."""
    head = head_build("protocol")

    def doctor(source: Path) -> None:
        init = source / "src" / "i_protocol" / "__init__.py"
        text = init.read_text()
        doctored = text.replace("from .worker import Request, Worker, exit_fast", "from .worker import Request, Worker")
        doctored = doctored.replace('    "exit_fast",\n', "")
        if doctored == text:
            raise Failed("cannot doctor i_protocol/__init__.py: its exit_fast import moved")
        init.write_text(doctored)
        worker = source / "src" / "i_protocol" / "worker.py"
        text = worker.read_text()
        doctored = text.replace("    def run(self, argv", "    def serve_forever(self, argv", 1)
        if doctored == text:
            raise Failed("cannot doctor i_protocol/worker.py: Worker.run moved")
        worker.write_text(doctored)

    return head, _built_wheel(head, CACHE / "wheels" / f"protocol-doctored-{head.tree[:12]}", doctor)


def _built_wheel(build: Build, out: Path, doctor: Callable[[Path], None] | None = None) -> Path:
    found = sorted(out.glob("*.whl"))
    if found:
        return found[0]
    with tempfile.TemporaryDirectory(prefix="skew-src-") as tmp:
        archive = subprocess.run(
            ["git", "archive", "--format=tar", build.commit, f"packages/{build.folder}"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        ).stdout
        with tarfile.open(fileobj=__import__("io").BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        if doctor is not None:
            doctor(Path(tmp) / "packages" / build.folder)
        staging = Path(tmp) / "wheel"
        pip(
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(staging),
            str(Path(tmp) / "packages" / build.folder),
        )
        out.mkdir(parents=True, exist_ok=True)
        for built in staging.glob("*.whl"):
            shutil.move(str(built), out / built.name)
    return sorted(out.glob("*.whl"))[0]


def pip(*args: str, python: Path | None = None) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    if python is not None:
        argv += ["--python", str(python)]
    done = subprocess.run([*argv, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise Failed(f"pip {' '.join(args[:2])} failed: {done.stderr.strip().splitlines()[-1:]}")
    return done


def new_venv(path: Path) -> Path:
    """A venv without pip whose third-party dependencies are the driver's (a .pth file)."""
    shutil.rmtree(path, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    site = next(path.glob("lib/python*/site-packages"))
    (site / "_skew_dependencies.pth").write_text(str(DRIVER_SITE) + "\n")
    return path


def venv(*builds: Build) -> Path:
    """A cached environment holding exactly these builds (one package and its i-protocol, as pipx)."""
    key = "+".join(f"{b.folder}-{b.tree[:10]}" for b in builds)
    path = CACHE / "venvs" / key
    if (path / ".complete").is_file():
        return path
    new_venv(path)
    pip("install", "-q", "--no-deps", "--no-index", *(str(wheel(b)) for b in builds), python=path / "bin" / "python")
    (path / ".complete").write_text("")
    return path


def protocol_for(build: Build) -> Build:
    """The i-protocol a pipx install of ``build`` would get: the newest release in its range."""
    if build.folder == "protocol":
        return build
    needs = _needs_at(build)
    for candidate in [head_build("protocol"), *changelog_builds("protocol")]:
        if _fits(candidate.version, needs):
            return candidate
    raise Skipped(f"no i-protocol release fits {build.label}'s i-protocol{needs}")


def oldest_protocol_for(build: Build) -> Build:
    needs = _needs_at(build)
    fitting = [b for b in changelog_builds("protocol") if _fits(b.version, needs)]
    if not fitting:
        raise Skipped(f"no i-protocol release fits {build.label}'s i-protocol{needs}")
    return fitting[-1]


def _needs_at(build: Build) -> str:
    text = releases.git("show", f"{build.commit}:packages/{build.folder}/pyproject.toml")
    import tomllib

    for dep in tomllib.loads(text)["project"]["dependencies"]:
        dep = dep.replace(" ", "")
        if dep.startswith("i-protocol"):
            return dep.removeprefix("i-protocol")
    return ""


def _fits(version: str, needs: str) -> bool:
    sys.path.insert(0, str(ROOT / "packages" / "core" / "src"))
    try:
        from i_core.preflight import fits  # standard library only; the same rule the guards use
    finally:
        sys.path.pop(0)
    return fits(version, needs)


def pipx_layout(core: Build, workers: dict[str, Build]) -> tuple[Path, list[Path]]:
    """The core's environment and each worker's, every package with the i-protocol pipx would pick."""
    core_env = venv(core, protocol_for(core))
    bins = [venv(w, protocol_for(w)) / "bin" for w in workers.values()]
    return core_env, bins


# -- a session against the scripted model -----------------------------------------------------


def scripted_step(request: dict[str, Any]) -> dict[str, Any]:
    """The model: store a memory, answer turns, and at the end say whether the memory reached it."""
    messages = request.get("messages", [])
    last = messages[-1] if messages else {}
    users = [m for m in messages if m.get("role") == "user" and "<context" not in str(m.get("content"))]
    asked = str(users[-1].get("content", "")) if users else ""
    if last.get("role") == "tool":
        return {"text": "stored."}
    if "remember:" in asked:
        return {
            "tool_calls": [
                {"name": "memory_set", "arguments": {"key": "build", "value": "make all"}},
                {"name": "mcp__fixture__echo", "arguments": {"text": "hello"}},
            ]
        }
    if "build command" in asked:
        seen = "make all" in json.dumps(request)
        return {"text": "the build command is make all" if seen else "MEMORY MISSING"}
    return {"text": f"noted. {FILLER[:600]}"}


@dataclass
class Session:
    core_env: Path
    bins: list[Path]
    bindings: dict[str, Any] = field(default_factory=dict)
    tmp: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="skew-run-")))

    def env(self) -> dict[str, str]:
        node = shutil.which("node")
        path = [str(b) for b in self.bins] + ([str(Path(node).parent)] if node else []) + ["/usr/bin", "/bin"]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("I_", "VIRTUAL_ENV", "PYTHON"))}
        env.update({f"I_{k.upper()}_DIR": str(self.tmp / k) for k in ("config", "data", "cache", "runtime")})
        env["PATH"] = os.pathsep.join(path)
        env.pop("OPENAI_API_KEY", None)
        return env

    def i(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(self.core_env / "bin" / "i"), *args],
            cwd=self.tmp / "project",
            env=self.env(),
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=180,
        )
        if "Traceback" in done.stderr:
            raise Failed(f"i {' '.join(args[:3])}: a traceback: {done.stderr.strip().splitlines()[-1]}")
        if check and done.returncode != 0:
            line = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or [""]
            shown = " ".join(a for a in args if len(a) < 40 and not a.startswith("/"))[:60]
            raise Failed(f"i {shown}: exit {done.returncode}: {line[0][:300]}")
        return done

    def _configure(self, model: Any) -> None:
        for k in ("config", "data", "cache", "runtime", "project"):
            (self.tmp / k).mkdir(parents=True, exist_ok=True)
        (self.tmp / "project" / "README.md").write_text("# skew project\n\nUsed by scripts/skew-matrix.\n")
        config = self.tmp / "config"
        (config / "plugins.json").write_text(json.dumps({"profile": "standard", "disabled": []}))
        (config / "builtin.json").write_text('{"builtin_profile":"configured","tools":[]}')
        (config / "compact.json").write_text(json.dumps({"mode": "local", "keep_recent": 2}))
        (config / "cache.json").write_text(json.dumps({"mode": "openai", "namespace": "skew"}))
        server = {"command": sys.executable, "args": [str(MCP_SERVER)], "timeout": 10}
        (config / "mcp.json").write_text(json.dumps({"mcpServers": {"fixture": server}}))
        if self.bindings:
            (config / "bindings.json").write_text(json.dumps(self.bindings))
        (config / "config.json").write_text(
            json.dumps(
                {
                    "protocol": "openai",
                    "base_url": model.base_url,
                    "model": "scripted-1",
                    "max_tokens": 256,
                    "retries": 0,
                    "timeout": 30,
                    "stream": False,
                    "budget": {"context_window": 100000},
                }
            )
        )

    def stops(self, expect: str) -> str:
        """The first turn ends before the first request with one line containing ``expect``, exit 6."""
        from i_scripted import ScriptedModel

        with ScriptedModel([scripted_step] * 4) as model:
            self._configure(model)
            done = self.i("-C", str(self.tmp / "project"), f"turn 0: {FILLER[:200]}", check=False)
            requests = len(model.requests)
        lines = [line for line in done.stderr.strip().splitlines() if not line.startswith("[i] ")]
        if requests:
            raise Failed(f"{requests} model request(s) before the stop (exit {done.returncode})")
        if done.returncode != 6 or len(lines) != 1 or expect not in lines[0]:
            raise Failed(f"exit {done.returncode}, expected 6 and one line with {expect!r}: {lines[:3]}")
        shutil.rmtree(self.tmp, ignore_errors=True)
        return f"one line, exit 6, no request: {lines[0][:160]}"

    def run(self, extra_check: Callable[[Session, Any], None] | None = None) -> str:
        from i_scripted import ScriptedModel

        with ScriptedModel([scripted_step] * 40) as model:
            self._configure(model)
            s = ("-C", str(self.tmp / "project"), "--session-name", "s")
            self.i(*s, "--yolo", "remember: the build command is make all")  # memory_set asks otherwise
            for n in range(3):
                self.i(*s, f"turn {n}: {FILLER}")
            compacted = self.i("--runtime", "compact", *s)
            if "compacted" not in compacted.stdout:
                raise Failed(f"i --runtime compact: {compacted.stdout.strip()[:200]}")
            resumed = self.i(*s, "what is the build command?")
            if "make all" not in resumed.stdout:
                raise Failed(f"the resumed turn did not see the memory: {resumed.stdout.strip()[:200]}")
            if extra_check is not None:
                extra_check(self, model)
        session = json.loads((self.tmp / "project" / ".i" / "sessions" / "s.json").read_text())
        if not any(isinstance(m.get("_compaction"), dict) for m in session["messages"]):
            raise Failed("no compaction summary in the session")
        if "echo: hello" not in json.dumps(session["messages"] + _archived(self.tmp)):
            raise Failed("the MCP tool's result is neither in the session nor in its archive")
        self.i("--runtime", "cache-report", "-C", str(self.tmp / "project"))
        versions = self.i("--runtime", "versions", "--json", check=False)
        verdicts = _verdicts(versions.stdout)
        if versions.returncode != 0:
            raise Failed(f"i --runtime versions exit {versions.returncode}: {verdicts}")
        writer = session["meta"].get("written_by")
        shutil.rmtree(self.tmp, ignore_errors=True)
        return f"turns, memory, MCP, compaction, resume, cache report; {verdicts}" + (
            f"; written_by {writer['version']}" if isinstance(writer, dict) else ""
        )


def _archived(tmp: Path) -> list[Any]:
    archive = tmp / "project" / ".i" / "sessions" / "s.archive.jsonl"
    return [archive.read_text()] if archive.is_file() else []


def _verdicts(text: str) -> str:
    try:
        rows = json.loads(text)["modules"]
    except (ValueError, KeyError):
        return "versions: unreadable"
    # An older core's versions has no verdict: its version column then.
    judged = {
        r["module"]: r.get("verdict") or r.get("version") or r.get("problem")
        for r in rows
        if r["selected"] and r["status"] != "bundled"
    }
    if all(v in ("ok", "compatible") for v in judged.values()):  # "ok": an older core's word
        return f"versions: {len(judged)} modules compatible"
    return "versions: " + ", ".join(f"{m} {v}" for m, v in judged.items())


def session_row(core: Build, workers: dict[str, Build], **kwargs: Any) -> Callable[[], str]:
    def run() -> str:
        core_env, bins = pipx_layout(core, workers)
        return Session(core_env, bins, **kwargs).run()

    return run


def today() -> dict[str, Build]:
    return {f: head_build(f) for f in WORKERS}


# -- rows that must stop before the first request ---------------------------------------------


def refused_row(core: Build, workers: dict[str, Build], expect: str) -> Callable[[], str]:
    """A session with an incompatible worker stops before the first request, naming it (the handshake)."""

    def run() -> str:
        core_env, bins = pipx_layout(core, workers)
        return Session(core_env, bins).stops(expect)

    return run


def stop_row(make_env: Callable[[], Path], expect: str, installed: str | None = None) -> Callable[[], str]:
    """Every console script in the environment ends with one line naming its package and the
    i-protocol it needs (exit 7), and no request reaches the model. With ``installed`` (the
    i-protocol version the environment ends up with), a package whose own requirement accepts that
    version must work instead (packages need different i-protocol releases)."""
    folders = {script: folder for folder, script in SCRIPTS.items()}

    def run() -> str:
        from i_scripted import ScriptedModel

        env_path = make_env()
        tmp = Path(tempfile.mkdtemp(prefix="skew-stop-"))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("I_", "VIRTUAL_ENV", "PYTHON"))}
        env.update({f"I_{k.upper()}_DIR": str(tmp / k) for k in ("config", "data", "cache", "runtime")})
        env["PATH"] = os.pathsep.join([str(env_path / "bin"), "/usr/bin", "/bin"])
        (tmp / "config").mkdir()
        seen: list[str] = []
        works: list[str] = []
        with ScriptedModel([{"text": "should not be asked"}] * 4) as model:
            (tmp / "config" / "config.json").write_text(
                json.dumps({"protocol": "openai", "base_url": model.base_url, "model": "m", "stream": False})
            )
            calls = [["i", "-C", str(tmp), "hello"], ["i", "--version"]] + [[SCRIPTS[f], "--version"] for f in WORKERS]
            calls += [["i-budget"]]
            for argv in calls:
                done = subprocess.run(
                    [str(env_path / "bin" / argv[0]), *argv[1:]],
                    env=env,
                    capture_output=True,
                    text=True,
                    stdin=subprocess.DEVNULL,
                    timeout=60,
                )
                lines = done.stderr.strip().splitlines()
                folder = folders[argv[0]]
                if installed is not None and _fits(installed, _needs_at(head_build(folder))):
                    if done.returncode != 0 or "needs i-protocol" in done.stderr:
                        raise Failed(f"{' '.join(argv)} accepts i-protocol {installed} but exit {done.returncode}")
                    works.append(argv[0])
                    continue
                if done.returncode != 7 or len(lines) != 1 or "needs i-protocol>=" not in lines[0]:
                    raise Failed(f"{' '.join(argv)}: exit {done.returncode}, stderr {done.stderr.strip()[:300]!r}")
                if expect not in lines[0]:
                    raise Failed(f"{' '.join(argv)}: {lines[0][:200]!r} does not say {expect!r}")
                seen.append(lines[0])
            if model.requests:
                raise Failed(f"{len(model.requests)} request(s) reached the model")
        shutil.rmtree(tmp, ignore_errors=True)
        example = seen[0].split("; fix:")[0]
        accepted = f"; {len(works)} accept it and work ({', '.join(dict.fromkeys(works))})" if works else ""
        return f"{len(seen)} commands: one line each, exit 7, no request{accepted}; {example}"

    return run


def mixed_pip_env(protocol: Build) -> Callable[[], Path]:
    """Today's packages in one venv (one pip call), then an older i-protocol in a second pip call."""

    def make() -> Path:
        path = new_venv(CACHE / "venvs" / f"mixed-{protocol.tree[:10]}")
        python = path / "bin" / "python"
        everything = [wheel(head_build(f)) for f in ("protocol", *SCRIPTS)]
        pip("install", "-q", "--no-index", *map(str, everything), python=python)
        second = pip("install", "--no-index", str(wheel(protocol)), python=python)
        if "incompatible" not in second.stderr:  # pip only warns: that is the point of the row
            print(f"  (pip did not warn about the conflict: {second.stderr.strip()[:120]!r})", file=sys.stderr)
        return path

    return make


def other_build_env(protocol: Build | None) -> Callable[[], Path]:
    """Today's packages on another build of the i-protocol version they need: ``protocol`` from
    the history, or (None) today's version doctored."""

    def make() -> Path:
        built = wheel(protocol) if protocol is not None else doctored_protocol_wheel()[1]
        path = new_venv(CACHE / "venvs" / f"otherbuild-{built.parent.name}")
        python = path / "bin" / "python"
        pip("install", "-q", "--no-index", "--no-deps", *(str(wheel(head_build(f))) for f in SCRIPTS), python=python)
        pip("install", "-q", "--no-index", "--no-deps", str(built), python=python)
        return path

    return make


def other_build_of_fitting_protocol(needs: str) -> Build | None:
    """A build git log shows for an i-protocol version in ``needs`` other than the build its
    changelog records (the newest such version, its first other build): pip takes it, the version
    check passes."""
    released = {b.version: b.tree for b in changelog_builds("protocol")}
    found = [
        Build("protocol", version, commit, tree)
        for version, tree, commit in releases.history("protocol")
        if _fits(version, needs) and version in released and tree != released[version]
    ]
    newest = max((b.version for b in found), key=releases.version_key, default=None)
    return next((b for b in found if b.version == newest), None)  # its first other build


def too_old_protocol(needs: str) -> Build | None:
    """The newest i-protocol release outside ``needs`` (below its range)."""
    floors = [clause.strip()[2:] for clause in needs.split(",") if clause.strip().startswith(">=")]
    for build in changelog_builds("protocol"):
        if floors and _fits(build.version, f"<{floors[0]}"):
            return build
    return None


# -- worker tests against i-protocol releases -------------------------------------------------


def worker_tests_row(folder: str) -> Callable[[], str]:
    def run() -> str:
        worker = head_build(folder)
        oldest = oldest_protocol_for(worker)
        newest = head_build("protocol")
        if oldest.tree == newest.tree:
            env_name = f"py311-{folder.split('-')[-1]}"
            raise Skipped(f"the oldest supported i-protocol {oldest.version} is the newest build (tox {env_name})")
        env = venv(worker, oldest)
        done = subprocess.run(
            [
                str(env / "bin" / "python"),
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "--import-mode=importlib",
                "--",
                f"packages/{folder}/tests",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=900,
        )
        tail = done.stdout.strip().splitlines()[-1:] or [""]
        if done.returncode != 0:
            raise Failed(f"on i-protocol {oldest.version} ({oldest.tree[:8]}): {tail[0]}")
        return f"on i-protocol {oldest.version} ({oldest.tree[:8]}): {tail[0]}"

    return run


# -- the rows ---------------------------------------------------------------------------------


def node_check(session: Session, model: Any) -> None:
    system = model.requests[0].body["messages"][0]["content"]
    if "House rules" not in system:
        raise Failed("the Node prompts worker's rules are not in the system prompt")


def rows(pins: list[str]) -> list[Row]:
    core_now, workers_now = head_build("core"), today()
    found: list[Row] = [
        Row(f"today: {core_now.label} + today's workers", session_row(core_now, workers_now)),
    ]
    for folder in WORKERS:
        prev = previous_build(folder)
        if prev is None:
            continue
        mixed = {**workers_now, folder: prev}
        found.append(Row(f"today's core + previous {prev.label}", session_row(core_now, mixed)))
    prev_core = previous_build("core")
    if prev_core is not None:
        found.append(Row(f"previous {prev_core.label} + today's workers", session_row(prev_core, workers_now)))
    old_budget = build_of("worker-budget", "0.1.0")
    found.append(
        Row(
            f"today's core + {old_budget.label} (5061af3)",
            refused_row(core_now, {**workers_now, "worker-budget": old_budget}, "i-worker-budget>=0.2.0"),
        )
    )
    needs = _needs_at(core_now)
    older_protocol = too_old_protocol(needs)
    if older_protocol is not None:
        found.append(
            Row(
                f"one venv, two pip calls: today's packages, then i-protocol {older_protocol.version}",
                stop_row(
                    mixed_pip_env(older_protocol),
                    f"but i-protocol {older_protocol.version} is installed",
                    installed=older_protocol.version,
                ),
            )
        )
    other = other_build_of_fitting_protocol(needs)
    if other is not None:
        title = f"today's packages on i-protocol {other.version} as built at {other.commit[:7]}"
    else:
        version = head_build("protocol").version
        title = f"today's packages on i-protocol {version}, another build (exit_fast and Worker.run removed)"
    found.append(Row(title, stop_row(other_build_env(other), "is another build")))

    def node_row() -> str:
        node_program = shutil.which("node")
        if node_program is None:
            raise Skipped("node is not installed")
        node = {"prompts": {"exec": [node_program, str(ROOT / "examples" / "node_prompt" / "house_prompt.js")]}}
        core_env, bins = pipx_layout(core_now, workers_now)
        return "Node prompts worker bound; " + Session(core_env, bins, bindings=node).run(node_check)

    found.append(Row("today's core + a worker not built on i-protocol (examples/node_prompt)", node_row))
    for folder in WORKERS:
        found.append(
            Row(f"{releases.package(folder).dist} tests on the oldest supported i-protocol", worker_tests_row(folder))
        )
    for pin in pins:
        dist, _, version = pin.partition("==")
        folder = releases.package(dist).folder
        pinned = build_of(folder, version)
        if folder == "core":
            found.append(Row(f"pin: {pinned.label} + today's workers", session_row(pinned, workers_now)))
        else:
            found.append(
                Row(f"pin: today's core + {pinned.label}", session_row(core_now, {**workers_now, folder: pinned}))
            )
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/skew-matrix", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="run the rows whose name contains this text")
    parser.add_argument("--pin", action="append", default=[], help="DIST==VERSION: a row with that release")
    args = parser.parse_args(argv)
    started = time.monotonic()
    head = releases.git("rev-parse", "--short", "HEAD")
    print(f"skew matrix at {head} (wheels and environments cached in {CACHE})", flush=True)
    selected = [r for r in rows(args.pin) if not args.only or args.only in r.name]
    counts = {"pass": 0, "FAIL": 0, "skip": 0, "xfail": 0, "XPASS": 0}
    width = max((len(r.name) for r in selected), default=10)
    for row in selected:
        t0 = time.monotonic()
        try:
            detail = row.run()
            row.result = "XPASS" if row.xfail else "pass"
            turn_on = f"\n    passed although expected to fail ({row.xfail}): turn it on"
            row.detail = detail + (turn_on if row.xfail else "")
        except Skipped as exc:
            row.result, row.detail = "skip", str(exc)
        except Exception as exc:  # a row's failure is reported, the next row runs
            reason = f"{type(exc).__name__}: {exc}" if not isinstance(exc, Failed) else str(exc)
            expected = f"{reason}\n    expected: {row.xfail}"
            row.result, row.detail = ("xfail", expected) if row.xfail else ("FAIL", reason)
        row.seconds = time.monotonic() - t0
        counts[row.result] += 1
        print(f"{row.name.ljust(width)}  {row.result:5}  {row.seconds:6.1f}s  {row.detail}", flush=True)
    passed = counts["pass"] + counts["XPASS"]
    print(
        f"skew: {passed} passed, {counts['FAIL']} failed, {counts['skip']} skipped, {counts['xfail']} xfailed"
        + (f" ({counts['XPASS']} xpassed)" if counts["XPASS"] else "")
        + f" in {time.monotonic() - started:.0f} s",
        flush=True,
    )
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
