"""Scripts: unknown step fields fail loudly, and script files load as a list or a steps object."""

from __future__ import annotations

from pathlib import Path

import pytest

from i_scripted import ScriptedModel, ScriptError, load_script


def test_unknown_step_fields_are_refused_up_front() -> None:
    with pytest.raises(ScriptError, match=r"step 0: unknown field.*txt"):
        ScriptedModel([{"txt": "typo"}])
    with pytest.raises(ScriptError, match="needs a name"):
        ScriptedModel([{"tool_calls": [{"arguments": {}}]}])


def test_load_script_accepts_a_list_or_a_steps_object(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('[{"text": "a"}]')
    (tmp_path / "b.json").write_text('{"steps": [{"text": "b"}]}')
    (tmp_path / "c.json").write_text('{"text": "c"}')
    assert load_script(tmp_path / "a.json") == [{"text": "a"}]
    assert load_script(tmp_path / "b.json") == [{"text": "b"}]
    with pytest.raises(ScriptError, match="a script is a JSON list of steps"):
        load_script(tmp_path / "c.json")
