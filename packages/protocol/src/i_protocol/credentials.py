"""Whether a field name looks like it holds a credential (config.json of the core, env names of mcp.json).

Apart from the secret table (``i_protocol.secrets``, which re-exports it) because a program that
checks only names — the core validating config.json before it starts any worker — should not pay
for compiling the table's patterns (~15 ms at start).
"""

from __future__ import annotations

# Credential-looking names, compared after lowercasing and dropping "-" and "_": an exact match, or
# a name ending in one of the suffixes (``openai_api_key``, ``x-api-key``, ``github_token``,
# ``client_secret``). ``max_tokens``, ``tokenizer``, ``prompt_cache_key`` and ``stop_token_ids`` pass.
_SECRET_NAMES = frozenset(
    {
        "apikey",
        "key",
        "token",
        "accesstoken",
        "secret",
        "password",
        "passwd",
        "passphrase",
        "authorization",
        "auth",
        "bearer",
        "credential",
        "credentials",
        "cookie",
        "privatekey",
        "sessionid",
    }
)
_SECRET_SUFFIXES = (
    "apikey",
    "token",
    "secret",
    "password",
    "passwd",
    "authorization",
    "credentials",
    "privatekey",
    "bearer",
)
# A URL's query carries credentials under a few more names: signed URLs (``sig``, ``signature``,
# ``X-Amz-Signature``, ``X-Goog-Signature``) and OAuth codes.
_SECRET_QUERY_NAMES = _SECRET_NAMES | {
    "sig",
    "signature",
    "code",
    "xamzsignature",
    "xgoogsignature",
    "xamzcredential",
    "xamzsecuritytoken",
}
_SECRET_QUERY_SUFFIXES = (*_SECRET_SUFFIXES, "signature")


def _normal(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "")


def looks_like_credential(name: str, *, query: bool = False) -> bool:
    """True when a field (or, with ``query``, a URL query parameter) name looks like it holds a secret."""
    normal = _normal(name)
    names, suffixes = (_SECRET_QUERY_NAMES, _SECRET_QUERY_SUFFIXES) if query else (_SECRET_NAMES, _SECRET_SUFFIXES)
    return normal in names or normal.endswith(suffixes)
