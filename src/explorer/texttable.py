"""Plain-text tables for the terminal that stay aligned with Chinese (double-width) text,
and long lists shortened to their ends."""

from __future__ import annotations

import unicodedata


def display_width(text: str) -> int:
    """Columns a string takes in a terminal: wide and full-width characters count 2."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def format_table(headers, rows, align_right=()) -> str:
    """Rows of cells (anything with str()) under headers, separated by two spaces.

    align_right: indexes of numeric columns."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(display_width(r[i]) for r in cells) for i in range(len(headers))]

    def line(row):
        out = []
        for i, cell in enumerate(row):
            gap = " " * (widths[i] - display_width(cell))
            out.append(gap + cell if i in align_right else cell + gap)
        return "  ".join(out).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule] + [line(r) for r in cells[1:]])


ENDS = 5      # a shortened list keeps this many items from each end


def elided(items: list[str], sep: str, ends: int = ENDS) -> str:
    """`items` joined by `sep`; a long list keeps `ends` from each end around "…(+n)…", so a
    real model's 36-token chat prompt does not fill a table row or a title."""
    if len(items) <= 2 * ends + 1:
        return sep.join(items)
    return sep.join([*items[:ends], f"…(+{len(items) - 2 * ends})…", *items[-ends:]])


def elided_list(values) -> str:
    """Numbers as Python prints a list, "[1, 2, 3]", shortened like `elided` when long."""
    return "[" + elided([str(v) for v in values], ", ") + "]"
