"""Every committed secret form (i_protocol.testing.secret_forms) is masked in each place of
compaction that keeps or sends text: the local summary and its state record's ``request:`` line,
the model-mode transcript sent for summarisation, and ``after_compact``'s scrub of a summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from builders import assistant, tool, user

from i_compact.state_record import parse_record
from i_compact.worker import worker
from i_protocol.testing import SecretForm, secret_forms

FORMS = secret_forms()
IDS = [form["id"] for form in FORMS]


def call(event: str, data: dict[str, Any], dirs: dict[str, str]) -> dict[str, Any]:
    response = worker.handle({"id": 1, "event": event, "data": data, "paths": dirs})
    assert "error" not in response, response
    return response["data"]


def history(form: SecretForm) -> list[dict[str, Any]]:
    """The form in a user message, a shell call's arguments, its output and the latest request."""
    text = form["text"]
    messages = [
        user(f"Set up the deploy box.\n{text}"),
        assistant("Running it.", [("c1", "shell", json.dumps({"cmd": text}))]),
        tool("c1", f"$ {text}\nok\n"),
    ]
    for step in range(12):  # enough work before that a local summary has room for whole lines
        messages += [
            assistant(f"Step {step}.", [(f"s{step}", "shell", json.dumps({"cmd": f"make step-{step}"}))]),
            tool(f"s{step}", "".join(f"building target {step}.{line} of the deploy image: ok\n" for line in range(30))),
        ]
    return [*messages, assistant("Done; the service answers."), user(f"Now do the same on staging:\n{text}")]


def before_compact(form: SecretForm, dirs: dict[str, str]) -> dict[str, Any]:
    messages = history(form)
    return call("before_compact", {"messages": messages, "cut": len(messages), "model": "m", "budget": {}}, dirs)


def leaked(form: SecretForm, text: str) -> list[str]:
    """The form's secret values found in ``text``, as they are or JSON-escaped."""
    return [secret for secret in form["secrets"] if secret in text or json.dumps(secret)[1:-1] in text]


@pytest.mark.parametrize("form", FORMS, ids=IDS)
def test_the_local_summary_and_its_request_line_keep_no_secret(form: SecretForm, dirs: dict[str, str]) -> None:
    (Path(dirs["config_dir"]) / "compact.json").write_text(json.dumps({"mode": "local"}))
    summary = before_compact(form, dirs)["summary"]
    record = parse_record(summary)
    assert record is not None and record.request.startswith("Now do the same on staging:")
    assert "not kept]" not in record.request  # the whole request is there, masked
    assert leaked(form, record.request) == []
    assert leaked(form, summary) == []


@pytest.mark.parametrize("form", FORMS, ids=IDS)
def test_the_transcript_sent_for_a_model_summary_holds_no_secret(form: SecretForm, dirs: dict[str, str]) -> None:
    data = before_compact(form, dirs)
    assert "prompt" in data  # the model route: this is what the summariser is sent
    sent = orjson.dumps(data).decode()
    assert "Now do the same on staging" in sent
    assert leaked(form, sent) == []


@pytest.mark.parametrize("form", FORMS, ids=IDS)
def test_after_compact_scrubs_every_form_from_a_summary(form: SecretForm, dirs: dict[str, str]) -> None:
    summary = f"## Progress\nThe user ran:\n{form['text']}\nand asked to repeat it on staging."
    final = call("after_compact", {"summary": summary, "state": {}}, dirs)["summary"]
    assert "repeat it on staging" in final
    assert leaked(form, final) == []
