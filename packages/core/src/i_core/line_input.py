"""Multi-line requests at the console's prompt.

- A line that ends with ``\\`` goes on: the backslash is dropped and the next line (prompt ``… ``)
  joins it after a newline.
- Alt-Enter (ESC then Enter) puts a newline into the line being edited (readline's quoted insert).
- A bracketed paste (readline's ``enable-bracketed-paste``, which CPython turns off) lands in the
  line as it is, newlines included; Enter sends it as one request.

Without GNU readline (libedit, or none) only the trailing backslash works.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

CONTINUATION_PROMPT = "… "
_BINDINGS = (
    "set enable-bracketed-paste on",
    r'"\e\C-m": "\C-v\C-j"',  # Alt-Enter: a newline into the line (quoted-insert of LF)
    r'"\e\C-j": "\C-v\C-j"',  # the same where Enter sends LF
)


def set_up(readline: ModuleType | None) -> None:
    """Bind Alt-Enter and turn bracketed paste on (GNU readline only; libedit keeps its defaults)."""
    if readline is None or "libedit" in (getattr(readline, "__doc__", "") or ""):
        return
    for binding in _BINDINGS:
        readline.parse_and_bind(binding)


def read_request(ask: Callable[[str], str], prompt: str = "> ") -> str:
    """One request from ``ask`` (``input``): a line, and the lines a trailing backslash continues to."""
    lines = [ask(prompt)]
    while lines[-1].endswith("\\") and not lines[-1].endswith("\\\\"):
        lines[-1] = lines[-1][:-1]
        try:
            lines.append(ask(CONTINUATION_PROMPT))
        except EOFError:
            break
    return "\n".join(lines)
