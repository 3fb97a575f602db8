"""Secrets kept out of what the user sees: stderr diagnostics, ``I_DEBUG=1`` tracebacks, ``--json`` errors.

A server's error body can quote the request's API key verbatim (a 401 "invalid key sk-…"), and a
worker's stderr tail or a tool's output can hold credentials. Before such text is shown,
:meth:`Redactor.scrub` replaces the configured key's value (the environment variable named by
``api_key_env``) by ``[REDACTED:NAME]`` and then every value the secret table flags
(``i_protocol.secrets.redact``). A value shorter than :data:`MIN_VALUE_CHARS` is not looked for
by value (a one-letter dummy key on loopback would mangle every message); the table still runs.
"""

from __future__ import annotations

__all__ = ["MIN_VALUE_CHARS", "Redactor"]

MIN_VALUE_CHARS = 8


class Redactor:
    """The secrets of one run: known values (the configured API key) and the secret table."""

    def __init__(self) -> None:
        self._values: dict[str, str] = {}  # value -> the name of its environment variable

    def add(self, name: str, value: str | None) -> None:
        """Scrub ``value`` (the value of the environment variable ``name``) from now on."""
        if value is not None and len(value.strip()) >= MIN_VALUE_CHARS:
            self._values[value.strip()] = name

    def scrub(self, text: str) -> str:
        """``text`` without the known values and without what the secret table flags."""
        # Imported here, not at start-up: the table compiles on first use (a failure, not every run).
        from i_protocol.secrets import MARKER, redact

        for value in sorted(self._values, key=len, reverse=True):
            text = text.replace(value, MARKER.format(name=self._values[value]))
        return redact(text)[0]
