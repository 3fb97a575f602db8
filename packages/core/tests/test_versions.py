"""`i --runtime versions`: each module's program, package, version and protocol, read without a
session (`PROGRAM --version` of real installed and bound workers)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from i_core import version_line, versions
from i_core.__about__ import __version__
from i_core.compatibility import OLDEST_WORKERS
from i_protocol import PROTOCOL_VERSION
from i_protocol import __version__ as LIBRARY
from i_protocol.testing import scaled

CORE = [sys.executable, "-m", "i_core"]


def rows(dirs) -> dict[str, versions.ModuleVersion]:
    return {r.module: r for r in versions.module_versions(dirs["config"])}


def installed(package: str) -> str:
    """The version in an installed worker's source (its metadata may be stale in an editable install)."""
    return str(pytest.importorskip(f"{package}.__about__").__version__)


def test_installed_workers_report_their_own_versions(dirs):
    found = rows(dirs)
    for module, dist in (("budget", "i-worker-budget"), ("compact", "i-worker-compact"), ("web", "i-worker-web")):
        row = found[module]
        expected = installed(f"i_{module}")
        assert (row.status, row.package, row.version, row.protocol) == ("installed", dist, expected, PROTOCOL_VERSION)
        assert row.exec is not None and row.exec[0].endswith("i-" + module)
    assert (found["approval"].status, found["approval"].version) == ("bundled", __version__)
    assert (found["responses"].status, found["responses"].version) == ("bundled", __version__)


def test_selection_follows_plugins_json(dirs):
    (dirs["config"] / "plugins.json").write_bytes(orjson.dumps({"profile": "compact", "disabled": ["budget"]}))
    selected = {m for m, r in rows(dirs).items() if r.selected}
    assert selected == {"compact", "steering"}


def test_a_bound_worker_is_asked_for_its_version(dirs, tmp_path):
    script = tmp_path / "my-compactor"
    script.write_text(f"#!{sys.executable}\nprint('my-compactor 2.3.4 (i-protocol 1)')\n")
    script.chmod(0o755)
    garbage = tmp_path / "noisy"
    garbage.write_text(f"#!{sys.executable}\nprint('hello')\n")
    garbage.chmod(0o755)
    bindings = {"compact": {"exec": [str(script)]}, "budget": {"exec": [str(garbage)]}}
    (dirs["config"] / "bindings.json").write_bytes(orjson.dumps(bindings))
    found = rows(dirs)
    assert (found["compact"].status, found["compact"].package, found["compact"].version) == (
        "bound",
        "my-compactor",
        "2.3.4",
    )
    assert found["budget"].status == "bound" and found["budget"].version is None
    assert "answered 'hello'" in (found["budget"].problem or "")
    result = subprocess.run([*CORE, "--runtime", "versions"], capture_output=True, text=True, timeout=scaled(60))
    assert result.returncode == 6  # a selected module whose version cannot be read


def test_a_missing_worker_names_the_package(dirs, monkeypatch):
    monkeypatch.setattr(versions, "find_script", lambda script: None if script == "i-web" else f"/bin/{script}")
    monkeypatch.setattr(versions, "ask_version", lambda argv, cwd=None: versions.VersionAnswer("pkg", "1", "1"))
    web = rows(dirs)["web"]
    assert (web.status, web.exec, web.problem) == ("missing", None, "run `pipx install i-worker-web`")


@pytest.mark.parametrize(
    ("line", "parsed"),
    [
        ("i-worker-budget 0.2.0 (i-protocol 1)", ("i-worker-budget", "0.2.0", "1")),
        ("i-core approval 0.1.0 (i-protocol 1)\n", ("i-core approval", "0.1.0", "1")),
        ("budget 1.0", None),
        ("", None),
    ],
)
def test_version_lines(line, parsed):
    assert version_line.parse_version_line(line) == parsed


def test_the_command_prints_json_and_a_table(dirs):
    memory = installed("i_memory")
    result = subprocess.run(
        [*CORE, "--runtime", "versions", "--json"], capture_output=True, text=True, timeout=scaled(60)
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["core"] == {
        "package": "i-core",
        "version": __version__,
        "protocol": PROTOCOL_VERSION,
        "python": sys.executable,
        "library": LIBRARY,
    }
    by_module = {m["module"]: m for m in document["modules"]}
    assert by_module["memory"]["version"] == memory
    table = subprocess.run([*CORE, "--runtime", "versions"], capture_output=True, text=True, timeout=scaled(60))
    assert table.returncode == 0
    assert any(line.split()[:3] == ["cache", "yes", "installed"] for line in table.stdout.splitlines())


def test_config_json_s_provider_is_reported_over_a_bindings_one(dirs, tmp_path):
    def program(name: str, line: str):
        path = tmp_path / name
        path.write_text(f"#!{sys.executable}\nprint({line!r})\n")
        path.chmod(0o755)
        return str(path)

    bound = program("bound-provider", "bound-provider 1.0.0 (i-protocol 1)")
    mine = program("my-provider", "my-provider 0.4.0 (i-protocol 1)")
    (dirs["config"] / "bindings.json").write_bytes(orjson.dumps({"provider": {"exec": [bound]}}))
    assert rows(dirs)["provider"].package == "bound-provider"
    config = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "protocol": "ollama", "provider": {"exec": [mine]}}
    (dirs["config"] / "config.json").write_bytes(orjson.dumps(config))
    row = rows(dirs)["provider"]
    assert (row.status, row.package, row.version) == ("bound", "my-provider", "0.4.0")


def program(tmp_path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(f"#!{sys.executable}\nimport sys\n{body}\n")
    path.chmod(0o755)
    return str(path)


def test_each_row_has_a_verdict(dirs, tmp_path):
    old_budget = program(tmp_path, "old-budget", "print('i-worker-budget 0.1.0 (i-protocol 1)')")
    stopped = program(
        tmp_path,
        "stopped-cache",
        "sys.stderr.write('i-cache: i-worker-cache 0.2.1 needs i-protocol>=0.2.2,<0.3, but i-protocol 0.2.1 is "
        "installed\\n'); sys.exit(7)",
    )
    node_like = program(tmp_path, "house-prompt", "print('house-prompt 1.0.0 (i-protocol 1)')")
    bindings = {"budget": {"exec": [old_budget]}, "cache": {"exec": [stopped]}, "prompts": {"exec": [node_like]}}
    (dirs["config"] / "bindings.json").write_bytes(orjson.dumps(bindings))
    found = rows(dirs)
    assert (found["budget"].verdict, found["budget"].problem) == (
        "incompatible",
        "this core works with i-worker-budget>=0.2.0 (docs/compatibility.md)",
    )
    assert found["cache"].verdict == "incompatible" and found["cache"].version is None
    assert "needs i-protocol>=0.2.2,<0.3, but i-protocol 0.2.1 is installed" in (found["cache"].problem or "")
    assert (found["prompts"].verdict, found["prompts"].problem) == ("unknown", None)
    assert found["approval"].verdict == "compatible"  # bundled
    table = subprocess.run([*CORE, "--runtime", "versions"], capture_output=True, text=True, timeout=60)
    assert table.returncode == 6  # a selected module is incompatible
    assert "VERDICT" in table.stdout.splitlines()[1]


def test_the_build_line_is_read_without_its_separators(tmp_path):
    # The second --version line as our console scripts print it: ';' ends each build, never part of it.
    line = "build 0123456789ab; i-protocol 0.2.3 build ba9876543210; needs i-protocol>=0.2.3,<0.3"
    argv = [program(tmp_path, "w", f"print('i-worker-web 0.1.3 (i-protocol 1)')\nprint({line!r})")]
    answer = version_line.ask_version(argv)
    assert (answer.build, answer.library, answer.library_build) == ("0123456789ab", "0.2.3", "ba9876543210")


def test_an_installed_worker_reports_its_library_and_build(dirs):
    installed("i_memory")
    memory = rows(dirs)["memory"]
    assert memory.verdict == "compatible"
    assert memory.library == LIBRARY and memory.build and len(memory.build) == 12
    document = json.loads(
        subprocess.run([*CORE, "--runtime", "versions", "--json"], capture_output=True, text=True, timeout=60).stdout
    )
    assert document["core"]["library"] == LIBRARY
    row = next(m for m in document["modules"] if m["module"] == "memory")
    assert row["verdict"] == "compatible" and row["library_build"]
    # The build is the 12-hex tree prefix alone, not the ';' that ends it on the --version line.
    assert re.fullmatch(r"[0-9a-f]{12}", row["library_build"]), row["library_build"]


def test_the_oldest_workers_are_docs_compatibility_s():
    # docs/compatibility.md, "This core and the workers": the current core's "works with" cell.
    doc = (Path(__file__).resolve().parents[3] / "docs" / "compatibility.md").read_text()
    row = next(line for line in doc.splitlines() if line.startswith(f"| i-core {__version__} |"))
    works_with = row.split("|")[3]
    listed = dict(re.findall(r"(i-worker-[a-z]+) >=([0-9.]+)", works_with))
    assert listed == OLDEST_WORKERS
