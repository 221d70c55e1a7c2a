"""Long lists shortened to their ends, for titles, table cells and explanations:
"[1, 9690, 198, 2683, 359, …(+26)…, 198, 1, 520, 9531, 198]"."""

from __future__ import annotations

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


def elided_indexes(n: int, room: int, head: int) -> list[int | None]:
    """Indexes 0..n-1 that fit in `room` slots: all of them, or the first `head` and as many
    of the last as fit, with None where the rest are left out (drawn as "…")."""
    if n <= room:
        return list(range(n))
    head = max(0, min(head, room - 2))
    tail = max(1, room - head - 1)
    return [*range(head), None, *range(n - tail, n)]
