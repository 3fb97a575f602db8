"""Masking with precision: a code expression after a secret name is not a secret, a bare word or
a quoted literal is; a mask never crosses a line end, real or escaped inside a JSON string."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from i_protocol.secrets import find_secrets, redact

CODE = [
    # a keyword first
    "const apiKey = await getApiKey(p)",
    "\t\t\tconst apiKey = await getApiKeyForModel(currentModel);",
    "password = yield",
    "secret_key = new SecretKey(bytes)",
    "const token = async () => fetchToken()",
    "password = lambda: read_password()",
    "token = typeof raw",
    # member access, a call, an index
    "const apiKey = options.apiKey;",
    "apiKey: config.apiKey,",
    "auth=request.auth,",
    "password = self.settings.db_password",
    "this.token = opts?.token",
    "API_KEY = os.environ['API_KEY']",
    "token = tokens[i]",
    "api_key = keys[0]",
    "password = get_password()",
    # a literal followed by a member, a call or an operator
    'pwd = "~" + pwd.slice(home.length);',
    'const secret = "abc".trim()',
    "token = t ?? fallback",
    "const token = first + second",
    "secret = a * b",
    # a variable passed on under its own name; a JavaScript value that is none
    "connect(password=password, user=user)",
    "self.token = token",
    "process.env.ANTHROPIC_API_KEY = undefined",
]

# A quote right after a name's separator that closes a string opens no value.
CLOSED = [
    '    ("x", "secret_flag", "--password "),',
    '    ("y", "cookie", "Cookie: "),',
    'print("password: ");',
    '{"prompt": "API key: ", "mask": true}',
]


@pytest.mark.parametrize("text", CLOSED)
def test_a_quote_that_closes_a_string_opens_no_value(text: str) -> None:
    assert redact(text) == (text, 0)


SECRETS = [
    ("DB_PASS=hunter2", "hunter2"),
    ("DB_PASS=hunter2 ./migrate", "hunter2"),
    ("export TOKEN=abc123 && ./run", "abc123"),
    ("export TOKEN=abc123 || exit 1", "abc123"),
    ("PASSWORD=hunter2 > out.log", "hunter2"),
    ('password = "hunter2"', "hunter2"),
    ("API_KEY='s3cr3t' # the staging key", "s3cr3t"),
    ('token: "abc.def"', "abc.def"),
    ("password: Tr0ub4dor - rotate monthly", "Tr0ub4dor"),
    ("staging\npassword: tangerine\n", "tangerine"),
    ("--password p4ss.w0rd", "p4ss.w0rd"),
    ("password=password1", "password1"),
]


@pytest.mark.parametrize("text", CODE)
def test_a_code_expression_after_a_secret_name_is_not_masked(text: str) -> None:
    assert redact(text) == (text, 0)


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_a_bare_word_or_a_quoted_literal_stays_a_secret(text: str, secret: str) -> None:
    out, count = redact(text)
    assert count == 1 and secret not in out


AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # the AWS documentation's example

LINES = [
    # (text as it appears inside a JSON string, the secret, the next line that must stay whole)
    ("password: hunter2\\n  mysql -u root -p", "hunter2", "\\n  mysql -u root -p"),
    ("DB_PASS=hunter2\\nnext line", "hunter2", "\\nnext line"),
    ("TOKEN: abcdef123456\\r\\nHost: example.com", "abcdef123456", "\\r\\nHost: example.com"),
    ('{"api_key": "abc123\\ndef"}', "abc123", "\\ndef"),
    (f"[default]\\naws_secret_access_key = {AWS_SECRET}\\nregion = eu-west-1", AWS_SECRET, "\\nregion"),
    ("run\\n--password hunter2_x1\\nnext", "hunter2_x1", "\\nnext"),
    ("password: tangerine\\n  host: db.internal", "tangerine", "\\n  host: db.internal"),
]


@pytest.mark.parametrize(("text", "secret", "after"), LINES)
def test_a_mask_never_crosses_an_escaped_line_end(text: str, secret: str, after: str) -> None:
    for document in (text, text.replace("\\n", "\n").replace("\\r", "\r")):
        out, count = redact(document)
        kept = after if document is text else after.replace("\\n", "\n").replace("\\r", "\r")
        assert count == 1 and secret not in out and kept in out, out


PIECES = st.sampled_from(
    ["password", "DB_PASS", "token", "api_key", "secret", ":", "=", " ", '"', "\\", "\\n", "\\r", "\n", "\r",
     "hunter2", "a1B2c3D4e5F6", "--password ", "mysql -u root -p", "Cookie: a=", "://u:", "@h", "x.y", "(", "+"]
)  # fmt: skip


def holds_a_line_end(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` holds a line end, real or escaped (``\\n`` after an odd run of
    backslashes: ``\\\\n`` is an escaped backslash and a letter)."""
    run = 0
    for index in range(start, end):
        char = text[index]
        if char in "\r\n" or (char in "rn" and run % 2 == 1):
            return True
        run = run + 1 if char == "\\" else 0
    return False


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECES, max_size=16).map("".join))
def test_no_mask_holds_a_line_end(text: str) -> None:
    for document in (text, json.dumps(text)):
        for found in find_secrets(document):
            assert not holds_a_line_end(document, found.start, found.end), (document, found)
