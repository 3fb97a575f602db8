"""The committed secret forms (i_protocol/secret_forms.json) are each masked by the table: as
plain text and inside a JSON string (a tool call's arguments), leaving the words around them."""

from __future__ import annotations

import json

import pytest

from i_protocol.secrets import contains_secret, find_secrets, redact
from i_protocol.testing import SecretForm, secret_forms

FORMS = secret_forms()
REQUIRED = {
    "docker-login-p", "redis-cli-a", "curl-u-user-pass", "aws-credentials-file", "aws-secret-bare-after-key-id",
    "yaml-password", "db-pass", "mysql-p-attached", "mysql-p-spaced", "basic-auth-header", "cookie-header",
    "set-cookie-header", "bearer-header", "sk-key", "ghp-token", "akia-key-id",
}  # fmt: skip


def test_the_fixture_holds_the_forms_asked_for() -> None:
    ids = [form["id"] for form in FORMS]
    assert len(ids) == len(set(ids)) >= 21 and set(ids) >= REQUIRED
    assert all(form["secrets"] and all(secret in form["text"] for secret in form["secrets"]) for form in FORMS)


@pytest.mark.parametrize("form", FORMS, ids=[form["id"] for form in FORMS])
def test_each_form_is_masked_and_only_its_values(form: SecretForm) -> None:
    assert contains_secret(form["text"]) is not None and find_secrets(form["text"])
    out, _ = redact(form["text"])
    assert [secret for secret in form["secrets"] if secret in out] == []
    assert [word for word in form["kept"] if word not in out] == []


@pytest.mark.parametrize("form", FORMS, ids=[form["id"] for form in FORMS])
def test_each_form_is_masked_inside_a_json_string(form: SecretForm) -> None:
    arguments = json.dumps({"command": form["text"]})
    out, _ = redact(arguments)
    assert json.loads(out)["command"] != form["text"]
    assert [secret for secret in form["secrets"] if secret in json.loads(out)["command"]] == []
