"""HTML to readable text with the stdlib parser: drops scripts, styles, navigation and hidden
elements; keeps headings, paragraphs, lists, tables, preformatted text and links."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import urljoin

# Subtrees whose text is never page content (or is chrome that repeats on every page).
_SKIP = frozenset(
    {
        "script",
        "style",
        "noscript",
        "template",
        "svg",
        "math",
        "nav",
        "iframe",
        "object",
        "embed",
        "canvas",
        "select",
        "button",
        "dialog",
    }
)
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
)
_BLOCK = frozenset(
    {
        "p",
        "div",
        "section",
        "article",
        "main",
        "header",
        "footer",
        "aside",
        "blockquote",
        "form",
        "fieldset",
        "table",
        "ul",
        "ol",
        "dl",
        "figure",
        "figcaption",
        "address",
        "details",
        "summary",
        "hr",
        "pre",
        "body",
        "caption",
        "legend",
        "center",
    }
)
_LINE = frozenset({"br", "tr", "dt", "dd", "li", "option"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
_SPACES = re.compile(r"\s+")
_MAX_LINK_CHARS = 500


@dataclass(frozen=True)
class PageText:
    """The extracted title (may be empty) and body text of an HTML document."""

    title: str
    text: str


def html_to_text(html: str, base_url: str = "") -> PageText:
    """Convert an HTML document to plain text with light Markdown (``#`` headings, ``-`` items, links)."""
    parser = _Extractor(base_url)
    try:
        parser.feed(html)
        parser.close()
    except Exception:  # a parser hiccup on hostile markup keeps what was extracted
        pass
    return PageText(_SPACES.sub(" ", parser.title).strip(), parser.text())


class _Extractor(HTMLParser):
    def __init__(self, base_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.title = ""
        self._in_title = False
        self._title_done = False
        self._out: list[str] = []
        self._pending = 0  # newlines owed before the next text
        self._prefix = ""  # list marker or heading hashes owed before the next text
        self._line_start = True
        self._skip_tag: str | None = None
        self._skip_depth = 0
        self._pre = 0
        self._lists: list[list[int]] = []  # per open list: [is_ordered, counter]
        self._link: str | None = None
        self._link_open = False
        self._cells = 0

    # -- structure ----------------------------------------------------------------------

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._skip_tag is not None:
            if tag == self._skip_tag:
                self._skip_depth += 1
            return
        attributes = {name: value or "" for name, value in attrs}
        if tag == "title" and not self._title_done:
            self._in_title = True
            return
        if tag == "base" and attributes.get("href"):
            self.base_url = urljoin(self.base_url, attributes["href"])
        if tag in _VOID:
            self._void(tag, attributes)
            return
        if tag in _SKIP or _hidden(attributes):
            self._skip_tag, self._skip_depth = tag, 1
            return
        self._open(tag, attributes)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._skip_tag is None and tag in _VOID:
            self._void(tag, {name: value or "" for name, value in attrs})

    def handle_endtag(self, tag: str) -> None:
        if self._skip_tag is not None:
            if tag == self._skip_tag:
                self._skip_depth -= 1
                if self._skip_depth == 0:
                    self._skip_tag = None
            return
        if tag == "title" and self._in_title:
            self._in_title, self._title_done = False, True
            return
        if tag in _HEADINGS or tag in _BLOCK:
            self._break(2)
        elif tag in _LINE:
            self._break(1)
        if tag == "pre" and self._pre:
            self._pre -= 1
        elif tag in ("ul", "ol") and self._lists:
            self._lists.pop()
        elif tag == "a" and self._link is not None:
            if self._link_open:
                self._out.append(f"]({self._link})")
            self._link, self._link_open = None, False

    def _open(self, tag: str, attributes: dict[str, str]) -> None:
        level = _HEADINGS.get(tag)
        if level is not None:
            self._break(2)
            self._prefix = "#" * level + " "
        elif tag in ("ul", "ol"):
            self._break(1)
            self._lists.append([tag == "ol", 0])
        elif tag == "li":
            self._break(1)
            indent = "  " * max(0, len(self._lists) - 1)
            if self._lists and self._lists[-1][0]:
                self._lists[-1][1] += 1
                self._prefix = f"{indent}{self._lists[-1][1]}. "
            else:
                self._prefix = f"{indent}- "
        elif tag == "tr":
            self._break(1)
            self._cells = 0
        elif tag in ("td", "th"):
            if self._cells:
                self._write_inline(" | ")
            self._cells += 1
        elif tag == "pre":
            self._break(2)
            self._pre += 1
        elif tag == "a" and self._link is None:
            self._link = _link_target(self.base_url, attributes.get("href", ""))
            self._link_open = False
        elif tag in _BLOCK:
            self._break(2)
        elif tag in _LINE:
            self._break(1)

    def _void(self, tag: str, attributes: dict[str, str]) -> None:
        if tag == "br":
            self._break(1)
        elif tag == "hr":
            self._break(2)
        elif tag == "img":
            alt = _SPACES.sub(" ", attributes.get("alt", "")).strip()
            if alt:
                self._text(f"[image: {alt}]")

    # -- text ---------------------------------------------------------------------------

    def handle_data(self, data: str) -> None:
        if self._skip_tag is not None:
            return
        if self._in_title:
            self.title += data
            return
        self._text(data)

    def _text(self, data: str) -> None:
        if not self._pre:
            data = _SPACES.sub(" ", data)
            if self._line_start or self._pending:
                data = data.lstrip()
        if not data:
            return
        if self._pending:
            self._out.append("\n" * self._pending)
            self._pending = 0
        if self._prefix:
            self._out.append(self._prefix)
            self._prefix = ""
        if self._link is not None and not self._link_open:
            self._out.append("[")
            self._link_open = True
        self._out.append(data)
        self._line_start = data.endswith("\n")

    def _write_inline(self, text: str) -> None:
        if not self._line_start and not self._pending:
            self._out.append(text)

    def _break(self, count: int) -> None:
        if self._out:
            self._pending = max(self._pending, count)
        self._line_start = True

    def text(self) -> str:
        """The assembled text, trailing spaces removed and blank runs collapsed."""
        joined = "".join(self._out)
        lines = [line.rstrip() for line in joined.split("\n")]
        return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _hidden(attributes: dict[str, str]) -> bool:
    """Elements a browser would not show: their text is a classic carrier of injected prompts."""
    return (
        "hidden" in attributes
        or attributes.get("aria-hidden", "").lower() == "true"
        or bool(_HIDDEN_STYLE.search(attributes.get("style", "")))
    )


def _link_target(base_url: str, href: str) -> str | None:
    href = href.strip()
    if not href or href.startswith("#"):
        return None
    target = urljoin(base_url, href)
    if not target.lower().startswith(("http://", "https://")) or len(target) > _MAX_LINK_CHARS:
        return None
    return target.replace(" ", "%20").replace(")", "%29")
