"""Every committed secret form (i_protocol.testing.secret_forms) is refused by ``memory_set``, as
a value and as a key, without the refusal repeating it; nothing is stored."""

from __future__ import annotations

import pytest
from memory_harness import Env, tool_error

from i_memory.entry import refuse_credentials
from i_memory.errors import MemoryStoreError
from i_protocol.host import WorkerProcess
from i_protocol.testing import SecretForm, secret_forms

FORMS = secret_forms()


@pytest.mark.parametrize("form", FORMS, ids=[form["id"] for form in FORMS])
def test_each_form_is_refused_as_a_value(form: SecretForm) -> None:
    with pytest.raises(MemoryStoreError) as refused:
        refuse_credentials("memory_set", "value", f"remember for the deploy:\n{form['text']}")
    message = str(refused.value)
    assert "refused" in message and [secret for secret in form["secrets"] if secret in message] == []


def test_memory_set_stores_none_of_the_forms(env: Env, worker: WorkerProcess) -> None:
    for form in FORMS:
        error = tool_error(worker, env, "memory_set", key=f"deploy.{form['id']}", value=form["text"])
        assert "refused" in error, form["id"]
        assert [secret for secret in form["secrets"] if secret in error] == [], form["id"]
    assert not env.memory_file.exists()
