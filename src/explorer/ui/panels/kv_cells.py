"""What the KV cache grid draws: the cell states, the grid's data computed once per refresh
from the run's step traces, and the painting of cells shared by the grid and its legend."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QColor, QPainter, QPen

from ...session import Session, TokenState
from ..theme import Theme, text_on

STATES = ("processed", "selected", "pending")   # cell codes 0, 1, 2
CODE = {TokenState.PROCESSED: 0, TokenState.SELECTED: 1, TokenState.PENDING: 2}
VALUES_PER_LINE = 2            # numbers per text line inside a cell


def paint_cells(p: QPainter, theme: Theme, cells: list[tuple[QRect, int, list[str]]]) -> None:
    """Cells (rect, state code, text lines): processed and pending filled, selected empty
    with a dashed outline. Batched by state: a few calls per paint, not a few per cell."""
    inner = [[rect.adjusted(1, 1, -1, -1) for rect, code, _ in cells if code == k] for k in range(3)]
    fills = (theme.processed, theme.background, theme.pending)
    p.setPen(Qt.NoPen)
    for rects, fill in zip(inner, fills):
        p.setBrush(QColor(fill))
        p.drawRects(rects)
    p.setBrush(Qt.NoBrush)
    p.setPen(QPen(theme.color("selected"), 2, Qt.DashLine))
    p.drawRects([r.adjusted(1, 1, -1, -1) for r in inner[1]])
    for code, color in enumerate((text_on(fills[0]), theme.text, text_on(fills[2]))):
        p.setPen(QColor(color))
        for rect, _, lines in (cell for cell in cells if cell[1] == code):
            p.drawText(rect, Qt.AlignCenter, "\n".join(lines))


MARKS = ("reused", "invalidated")        # what a prefix cache did to a column: see `marks_of`
MARK_FILLS = {"reused": "kept", "invalidated": "chosen"}      # theme colours


def paint_marked(p: QPainter, theme: Theme, cells: list[tuple[QRect, str, list[str]]]) -> None:
    """Processed cells a prefix cache gave (reused) or could not give (invalidated): filled in
    the mark's own colour, with a solid outline in the text colour and the mark's label."""
    for rect, mark, lines in cells:
        fill = theme.color(MARK_FILLS[mark])
        p.setPen(QPen(theme.color("text"), 1))
        p.setBrush(fill)
        p.drawRect(rect.adjusted(1, 1, -2, -2))
        p.setPen(QColor(text_on(fill.name())))
        p.drawText(rect, Qt.AlignCenter, "\n".join(lines))
    p.setBrush(Qt.NoBrush)


def mark_at(data: "GridData", col: int) -> str:
    return data.marks[col] if data.marks else ""


@dataclass(frozen=True)
class GridData:
    """Everything the grid draws, computed once per refresh."""
    codes: np.ndarray            # [c] state code per column (0 processed, 1 selected, 2 pending)
    pieces: tuple[str, ...]      # [c] token piece per column
    split: tuple[str, ...]       # [c] characters the column's token holds only some bytes of ("" none)
    row_labels: tuple[str, ...]  # [2L] "L0 K", "L0 V", ... ("L0 K · 512" with sliding windows)
    unread: tuple[int, ...]      # [2L] leading columns the row's layer no longer reads (its window)
    labels: tuple[str, ...]      # state code -> label drawn in the cell
    source: np.ndarray           # [c, 2] (step index, row in that step's forward) per processed column
    written: tuple[int, int] | None   # first, last column written by the current forward
    values: dict                 # (row, col) -> text lines of the vector, for small models only
    marks: tuple[str, ...] = ()  # [c] "reused" (K/V from a prefix cache), "invalidated" or "" per column

    @property
    def n_rows(self) -> int:
        return len(self.row_labels)

    @property
    def n_cols(self) -> int:
        return len(self.codes)


def same_grid(a: GridData, b: GridData) -> bool:
    """Whether two grids draw the same (a rerun that changed nothing here repaints nothing)."""
    return (a.pieces == b.pieces and a.row_labels == b.row_labels and a.labels == b.labels
            and a.unread == b.unread
            and a.written == b.written and a.values == b.values and a.marks == b.marks
            and np.array_equal(a.codes, b.codes) and np.array_equal(a.source, b.source))


def vector_size(layers) -> int:
    """Numbers in one layer's K (or V) vector of one position: K/V heads x head size."""
    if not layers:
        return 0
    g, _, e = layers[0].k.shape
    return g * e


def source_of_positions(steps, n: int) -> np.ndarray:  # -> [n, 2] (step, row in its forward)
    """Position p's K/V come from the step whose forward fed p; -1 where no step did."""
    source = np.full((n, 2), -1, np.int64)
    for step in steps:
        positions = np.asarray(step.positions)
        inside = positions < n
        source[positions[inside], 0] = step.index
        source[positions[inside], 1] = np.arange(len(positions))[inside]
    return source


def vector(steps, source, row: int, col: int, prefix=None) -> np.ndarray:  # -> [g, e]
    """K (even rows) or V (odd rows) of layer row // 2 at position col, from the step that fed it
    (or, for a position no step fed, from the prefix cache's copy the run started from)."""
    step, index = source[col]
    if step < 0 and prefix is not None:
        return (prefix.cache.values if row % 2 else prefix.cache.keys)(row // 2)[:, col]
    layer = steps[step].trace.layers[row // 2]
    return (layer.v if row % 2 else layer.k)[:, index, :]


def value_lines(vector: np.ndarray) -> tuple[str, ...]:  # [g, e] -> lines of VALUES_PER_LINE numbers
    values = [f"{x:.2f}" for x in vector.ravel()]
    return tuple("  ".join(values[i:i + VALUES_PER_LINE]) for i in range(0, len(values), VALUES_PER_LINE))


def marks_of(run, codes: np.ndarray) -> tuple[str, ...]:
    """[c] per processed column: "reused" where the run's Prefill took its K/V from a prefix cache,
    "invalidated" where the cache held it but an earlier token had changed; else ""."""
    hit = run.prefix
    if hit is None:
        return ()
    marks = [""] * len(codes)
    for col in np.flatnonzero(codes == 0):
        marks[col] = "reused" if col < hit.reused else "invalidated" if col in hit.match.invalidated else ""
    return tuple(marks)


def written_columns(session: Session) -> tuple[int, int] | None:
    """First and last position fed by the current frame's forward (prefill / decode frames)."""
    if not session.frame.shows_forward:
        return None
    positions = session.step.positions
    return positions[0], positions[-1]
