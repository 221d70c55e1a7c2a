"""Plain-text tables for the terminal that stay aligned with Chinese (double-width) text."""

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
