"""Whether a name holds a secret: the one name rule of the secret table.

Every check of a *name* uses this rule: the core's config.json fields, the MCP worker's env names
in mcp.json, and the secret table's ``NAME=value``, ``NAME: value`` and ``--name value`` patterns
(``i_protocol.secrets``, which re-exports :func:`looks_like_credential`). It is apart from the
table because a program that checks only names — the core validating config.json before it starts
any worker — should not pay for compiling the table's patterns (~15 ms at start): this module
compiles nothing.

The rule, on the name's words (split on ``_ . -`` and white space, lower-cased; a camelCase name
is one word, so its ending decides: ``apiKey``, ``dbPassword``):

- a **secret word** is ``pass`` or ``pwd``; or ends in ``password``, ``passwd``, ``passphrase``,
  ``secret(s)``, ``token``, ``credential(s)``; or is ``key`` after a qualifier (``api``, ``access``,
  ``private``, ``secret``, ``client``, ``signing``, ``encryption``, ``master``: ``access_key``,
  ``OPENAIAPI_KEY``) or ends in ``key`` right after one (``apikey``, ``secretKey``);
- ``auth``, ``authorization``, ``bearer`` and ``cookie`` are secret words only as the last word
  (``Authorization``, ``basic_auth``, ``Set-Cookie``; ``auth_mode`` and ``cookie_name`` are not);
- a name holds a secret when it has a secret word, unless the word before it says it is an id
  needed to resume (``next_page_token``), or the name's last word, after the secret word, says
  what it holds instead (``password_file``, ``api_key_env``, ``token_id``, ``token_budget``,
  ``secret_store.py``). ``DB_PASSWORD_PROD`` holds one.

Not secret names: ``key`` alone (dict keys, cache keys, sort keys: data, not credentials),
``session_id`` (an id), ``max_tokens``, ``tokenizer``, ``prompt_cache_key``, ``public_key``.

A URL's query (``query=True``) has a few more names that carry a credential there: signed URLs
(``sig``, ``signature``, ``X-Amz-Signature``), OAuth ``code`` and Google's ``key``.
"""

from __future__ import annotations

__all__ = ["looks_like_credential"]

_SECRET_ENDINGS = ("password", "passwd", "passphrase", "secret", "secrets", "token", "credential", "credentials")
_KEY_QUALIFIERS = ("api", "access", "private", "secret", "client", "signing", "encryption", "master")
_LAST_WORDS = frozenset({"auth", "authorization", "bearer", "cookie"})
# A last word that says the value is about the secret, not the secret itself (a file extension
# too: ``secret_store.py:12`` is a file and a line).
_NOT_SECRET_SUFFIXES = frozenset(
    "id ids uuid name names env var vars variable file files path paths dir url uri endpoint host "  # noqa: SIM905
    "type kind len length size count limit limits budget max min ttl expiry expires expiration timeout "
    "lifetime age policy prompt hint hints field header label mode enabled required format rotation "
    "scope scopes version cmd command helper source store location ref arn prefix suffix pattern usage index "
    "stdin py js ts go rs rb java json jsonl yaml yml toml txt md cfg ini sh log pem crt csv xml html lock".split()
)
# Tokens that are ids needed to resume (pagination), not credentials.
_NOT_SECRET_QUALIFIERS = frozenset({"page", "continuation", "next"})
_QUERY_NAMES = frozenset({"sig", "signature", "code", "key"})
_SEPARATORS = str.maketrans(dict.fromkeys(".- \t\r\n", "_"))


def _words(name: str) -> list[str]:
    return [word for word in name.lower().translate(_SEPARATORS).split("_") if word]


def _is_secret_word(words: list[str], index: int) -> bool:
    word = words[index]
    if word in ("pass", "pwd") or word.endswith(_SECRET_ENDINGS):
        return True
    if word == "key":
        return index > 0 and words[index - 1].endswith(_KEY_QUALIFIERS)
    if word.endswith("key") and word[:-3].endswith(_KEY_QUALIFIERS):
        return True
    return index == len(words) - 1 and word in _LAST_WORDS


def _is_secret_name(words: list[str]) -> bool:
    last = -1
    for index in range(len(words)):
        if _is_secret_word(words, index):
            last = index
    if last < 0 or (last and words[last - 1] in _NOT_SECRET_QUALIFIERS):
        return False
    return last == len(words) - 1 or words[-1] not in _NOT_SECRET_SUFFIXES


def looks_like_credential(name: str, *, query: bool = False) -> bool:
    """True when a name (a config field, an env variable, the ``NAME`` of ``NAME=value``) holds a
    secret; with ``query``, as a URL query parameter, which has a few more such names."""
    words = _words(name)
    if _is_secret_name(words):
        return True
    return query and ("".join(words) in _QUERY_NAMES or (bool(words) and words[-1].endswith("signature")))
