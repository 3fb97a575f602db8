"""The model-facing schemas: exported as ``i_memory.schemas.TOOLS``, printed by ``i-memory schemas``."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import orjson
from memory_harness import EXE

from i_memory.__about__ import __version__
from i_memory.schemas import TOOLS
from i_memory.worker import worker
from i_protocol.testing import scaled

README = Path(__file__).resolve().parents[1] / "README.md"


def test_schemas_match_the_registered_tools() -> None:
    assert sorted(schema["name"] for schema in TOOLS) == worker.tools
    assert worker.tools == ["memory_delete", "memory_get", "memory_list", "memory_set"]
    assert worker.events == ["before_turn", "tool"]


def test_each_schema_is_a_valid_manifest_entry() -> None:
    for schema in TOOLS:
        assert set(schema) == {"name", "description", "parameters"}
        assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", schema["name"])
        assert schema["description"] and "approval" in schema["description"]
        parameters = schema["parameters"]
        assert parameters["type"] == "object" and parameters["additionalProperties"] is False
        assert set(parameters.get("required", [])) <= set(parameters["properties"])
    assert "Never store secrets" in next(s for s in TOOLS if s["name"] == "memory_set")["description"]


def test_cli_prints_the_same_json() -> None:
    done = subprocess.run([str(EXE), "schemas"], capture_output=True, check=True, timeout=scaled(30))
    assert orjson.loads(done.stdout) == TOOLS
    refused = subprocess.run([str(EXE), "schemas", "extra"], capture_output=True, timeout=scaled(30))
    assert refused.returncode == 2 and b"takes no arguments" in refused.stderr


def test_version_names_the_distribution_and_protocol() -> None:
    done = subprocess.run([str(EXE), "--version"], capture_output=True, check=True, timeout=scaled(30))
    assert done.stdout.decode().startswith(f"i-worker-memory {__version__} (i-protocol ")


def test_readme_documents_the_schemas_verbatim() -> None:
    text = README.read_text(encoding="utf-8")
    block = text.split("<!-- schemas:start -->", 1)[1].split("<!-- schemas:end -->", 1)[0]
    body = block.split("```json", 1)[1].rsplit("```", 1)[0]
    assert orjson.loads(body) == TOOLS
