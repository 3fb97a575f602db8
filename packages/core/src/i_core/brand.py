"""The brand: one glyph, rendered for a terminal (ANSI colour, plain, ASCII) and as SVG (seed 001 §10).

The logo is UI only: ``i --runtime logo`` prints it and the interactive console shows it on
stderr at start (unless ``--no-logo``). It never enters a prompt, a tool schema or the history.
"""

from __future__ import annotations

GLYPH = (
    "...oo...",
    "...oo...",
    "........",
    "..###...",
    "...##...",
    "...##...",
    "...##...",
    "..####..",
)
"""The one glyph definition: a lower-case i on a grid; ``o`` is its dot (the accent), ``#`` its stem."""

TAGLINE = "i - an agent runtime for the terminal"
CELL_PX = 16
_ANSI = {"o": "\x1b[38;5;208m", "#": "\x1b[38;5;39m"}
_SVG_FILL = {"o": "#ff8700", "#": "#00afff"}
_RESET = "\x1b[0m"


def render_text(*, color: bool, ascii_only: bool = False) -> str:
    """The glyph as terminal lines (two characters a cell), then the tagline; ends with a newline.

    ``color`` adds ANSI escapes; ``ascii_only`` draws cells with ``#`` instead of block characters.
    """
    lines = []
    for row in GLYPH:
        line = ""
        for cell in row:
            if cell == ".":
                line += "  "
                continue
            block = "##" if ascii_only else "\u2588\u2588"
            line += f"{_ANSI[cell]}{block}{_RESET}" if color else block
        lines.append(line.rstrip())
    return "\n".join([*lines, "", TAGLINE]) + "\n"


def render_svg() -> str:
    """The glyph as a standalone SVG document (one square per filled cell)."""
    width, height = len(GLYPH[0]) * CELL_PX, len(GLYPH) * CELL_PX
    cells = [
        f'  <rect x="{x * CELL_PX}" y="{y * CELL_PX}" width="{CELL_PX}" height="{CELL_PX}" fill="{_SVG_FILL[cell]}"/>'
        for y, row in enumerate(GLYPH)
        for x, cell in enumerate(row)
        if cell != "."
    ]
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="i">\n'
        f"  <title>{TAGLINE}</title>\n" + "\n".join(cells) + "\n</svg>\n"
    )


def can_draw_blocks(stream: object) -> bool:
    """True when ``stream``'s encoding can show the block character (else draw in ASCII)."""
    encoding = getattr(stream, "encoding", None) or "ascii"
    try:
        "\u2588".encode(encoding)
    except (LookupError, UnicodeEncodeError):
        return False
    return True
