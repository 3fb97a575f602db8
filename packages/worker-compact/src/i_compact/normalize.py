"""Canonical ``<continuation_summary>`` normalization of a summary (seed 002)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from i_protocol.jsonsafe import replace_surrogates as scrub
from i_protocol.summary import CONTINUATION_CLOSE, CONTINUATION_OPEN

from .folding import folded

_OPEN = re.compile(r"<\s*continuation_summary\b[^<>\n]*>", re.I)
_CLOSE = re.compile(r"<\s*/\s*continuation_summary\s*>", re.I)
_TAG = re.compile(r"<\s*(/\s*)?continuation_summary\b[^<>\n]*>", re.I)
# Tag fragments a model sometimes emits: "<continuation_summary", "continuation_summary>", "</continuation_summary".
_FRAGMENT = re.compile(r"<\s*/?\s*continuation_summary\b[^<>\n]*>?|(?<![\w<])/?continuation_summary\s*>", re.I)
_FENCE_LINE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*$", re.M)
_BLANKS = re.compile(r"\n{3,}")
_TAG_NAME = "continuation_summary"


def may_name_tag(text: str) -> bool:
    """Whether a case-blind pattern could find the tag's name in ``text``; False means no tag or
    fragment of one is there (a C scan instead of :data:`_FRAGMENT` tried at every place)."""
    return _TAG_NAME in folded(text)


PLAIN_TEXT = "plain_text"
WRAPPED_BLOCK = "wrapped_block"
EXTRACTED_BLOCK = "extracted_block"
REPAIRED_TAGS = "repaired_tags"


@dataclass(frozen=True)
class Normalized:
    """The canonical block (empty string when the body is empty) and how it was obtained."""

    summary: str
    body: str
    kind: str
    blocks: int


def normalize_summary(text: str) -> Normalized:
    """One canonical block from plain text, a wrapped block, several blocks or malformed tags."""
    text = scrub(text).strip()  # line endings stay: requests are kept verbatim (issue 30)
    spans = _outer_blocks(text)
    blocks = [text[start:end] for start, end, _ in spans]
    if blocks:
        ends = [0, *(span[2] for span in spans)]
        starts = [*(span[0] for span in spans), len(text)]
        outside = "".join(text[a:b] for a, b in zip(ends, starts, strict=True))
        outside = _FENCE_LINE.sub("", _OPEN.sub("", outside)).strip()
        kind = WRAPPED_BLOCK if len(blocks) == 1 and not outside else EXTRACTED_BLOCK
        bodies = [_clean_body(b) for b in blocks]
        body = "\n\n".join(b for b in bodies if b)
    elif _OPEN.search(text) or _CLOSE.search(text) or _FRAGMENT.search(text):
        kind = REPAIRED_TAGS
        opened = _OPEN.search(text)
        if opened:
            text = text[opened.end() :]
        closed = _CLOSE.search(text)
        if closed:
            text = text[: closed.start()]
        body = _clean_body(text)
    else:
        kind = PLAIN_TEXT
        body = _clean_body(text)
    if not body:
        return Normalized(summary="", body="", kind=kind, blocks=len(blocks))
    return Normalized(summary=canonical(body), body=body, kind=kind, blocks=len(blocks))


def _outer_blocks(text: str) -> list[tuple[int, int, int]]:
    """``(body start, body end, block end)`` of each outermost block, nested ones inside it.

    A block nested in another (a model quoting the previous summary) is part of the outer
    one's body, so the text after it is kept. A last block left open runs to the end of the
    text once a complete block was found (otherwise the tags are repaired as fragments).
    """
    spans: list[tuple[int, int, int]] = []
    depth, start = 0, 0
    for tag in _TAG.finditer(text):
        if tag.group(1) is None:  # an open tag
            if depth == 0:
                start = tag.end()
            depth += 1
        elif depth > 0:
            depth -= 1
            if depth == 0:
                spans.append((start, tag.start(), tag.end()))
    if depth > 0 and spans:
        spans.append((start, len(text), len(text)))
    return spans


def canonical(body: str) -> str:
    """Wrap a cleaned body in the single canonical block."""
    return f"{CONTINUATION_OPEN}\n{body}\n{CONTINUATION_CLOSE}"


def _clean_body(text: str) -> str:
    text = _FRAGMENT.sub("", text) if may_name_tag(text) else text
    text = _strip_outer_fence(text.strip())
    return _fold_blanks(text).strip()


_VERBATIM = re.compile(r'<user_request n="\d+"(?: part="[a-z]+")?>\n.*?\n</user_request>', re.S)


def _fold_blanks(text: str) -> str:
    """Runs of blank lines folded to one, except inside a verbatim request (``actions``)."""
    if "<user_request" not in text:
        return _BLANKS.sub("\n\n", text)
    out: list[str] = []
    last = 0
    for match in _VERBATIM.finditer(text):
        out += [_BLANKS.sub("\n\n", text[last : match.start()]), match.group(0)]
        last = match.end()
    out.append(_BLANKS.sub("\n\n", text[last:]))
    return "".join(out)


def _strip_outer_fence(text: str) -> str:
    lines = text.split("\n")
    if len(lines) >= 2 and _FENCE_LINE.fullmatch(lines[0]) and _FENCE_LINE.fullmatch(lines[-1]):
        return "\n".join(lines[1:-1]).strip()
    if lines and _FENCE_LINE.fullmatch(lines[0]) and len(lines) == 1:
        return ""
    return text
