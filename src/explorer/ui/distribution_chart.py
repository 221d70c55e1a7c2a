"""The painted part of the distribution panel: one bar row per stage and the ruler.

One widget paints everything with QPainter from plain records (BarRow, Ruler) that the
panel builds from the core's Distribution: no plot library, no item per bar. A slider
drag repaints seven rows of a few dozen bars and labels in well under a millisecond,
which a stack of plot widgets (each with its own scene, axes and layout) cannot do.

Geometry, top to bottom: the bar rows share the height (each at least ROW_MIN_PX), each
with its column names below it, or, for many narrow columns, names written upwards under
the last row only; then the ruler. On the left, a column of row titles and a 0 / 0.5 / 1
probability axis. Bars keep their column on every row, so a candidate can be followed
down the stages.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from .theme import Theme, text_on

Y_TOP = 1.32            # the probability axis shows 0..1; the headroom holds the labels
BAR_WIDTH = 0.8         # of a column
ROW_MIN_PX = 48         # a stage row's plot is never shorter than this
NAME_MAX_PX = 96        # upright column names longer than this are elided
RULER_LABEL_MIN = 0.05  # a ruler interval gets its piece written in it when at least this wide
RULER_TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)
AXIS_TICKS = (0.0, 0.5, 1.0)
GAP = 2                 # px between rows
PAD = 4                 # px around text


@dataclass(frozen=True, eq=False)     # holds arrays: compared by _same_rows
class BarRow:
    """One stage's bars. All sequences have one entry per column."""

    name: str                   # "raw", a stage name, or "final"
    title: str                  # shown left of the row (may hold a line break)
    values: np.ndarray          # (c,) the probability each column stands for
    drawn: np.ndarray           # (c,) the bar heights (a removed candidate keeps its cut height)
    roles: tuple[str, ...]      # (c,) "kept" | "removed" | "chosen" | "other"
    labels: tuple[str, ...]     # (c,) the text on or above each bar ("" = none)
    names: tuple[str, ...]      # (c,) column names below the row ("" = none)


@dataclass(frozen=True, eq=False)     # holds arrays: compared by _same_ruler
class Ruler:
    """The final intervals [lo, hi) side by side on 0..1, the rest of 0..1 as "other"."""

    title: str
    ids: np.ndarray             # (m,)
    lo: np.ndarray              # (m,)
    hi: np.ndarray              # (m,)
    pieces: tuple[str, ...]     # (m,) written in the intervals wide enough
    chosen: int | None          # id drawn in the chosen colour
    u: float | None             # the marker (None: hidden)
    note: str                   # the text above the ruler


@dataclass
class _Layout:
    """Pixel geometry of the current content at the current size."""

    plots: list[QRectF] = field(default_factory=list)   # one per row: its bar area
    names: list[QRectF] = field(default_factory=list)   # one per row: the band of its column names
    ruler: QRectF = field(default_factory=QRectF)       # the intervals' band
    ruler_top: float = 0.0                              # where the ruler's note line starts
    titles_width: float = 0.0


class StageChart(QWidget):
    """Paints BarRows and a Ruler; a click on a bar reports its column."""

    clicked = Signal(float)        # the x of a click in column units (column i spans i ± 0.5)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: tuple[BarRow, ...] = ()
        self.ruler: Ruler | None = None
        self.upright = False        # many narrow columns: vertical labels, upright names
        self._paint: dict = {}
        self._theme: Theme | None = None
        self._small = QFont()
        self._layout = _Layout()
        self._layout_key = None
        self.setMouseTracking(True)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    # ------------------------------------------------------------------ content and style
    def set_content(self, rows: tuple[BarRow, ...], ruler: Ruler | None, upright: bool) -> None:
        """Repaint (only) when something shown changed."""
        if _same_rows(rows, self.rows) and _same_ruler(ruler, self.ruler) and upright == self.upright:
            return
        reshaped = (len(rows) != len(self.rows) or upright != self.upright
                    or [r.names for r in rows] != [r.names for r in self.rows]
                    or [r.title for r in rows] != [r.title for r in self.rows])
        self.rows, self.ruler, self.upright = tuple(rows), ruler, upright
        if reshaped:
            self._layout_key = None
            self.updateGeometry()
        self.update()

    def set_style(self, theme: Theme, paint: dict, small: QFont) -> None:
        """paint: role -> (pen, brush) for "kept", "kept_alt", "removed", "chosen", "other",
        "edge", "accent"; small: the font of labels, names and ticks."""
        self._theme, self._paint, self._small = theme, paint, QFont(small)
        self._layout_key = None
        self.updateGeometry()
        self.update()

    # ------------------------------------------------------------------ geometry
    def minimumSizeHint(self) -> QSize:
        line = QFontMetricsF(self._small).height()
        rows = len(self.rows)
        height = rows * (ROW_MIN_PX + GAP) + self._bands_height(line)
        return QSize(200, int(height + self._ruler_height(line)) if self.ruler else int(height))

    def sizeHint(self) -> QSize:
        return self.minimumSizeHint().expandedTo(QSize(600, 400))

    def _names_height(self, line: float) -> float:
        if not self.upright:
            return line + PAD
        fm = QFontMetricsF(self._small)
        widest = max((fm.horizontalAdvance(_elided(fm, n, NAME_MAX_PX))
                      for r in self.rows for n in r.names), default=0.0)
        return widest + 3 * PAD

    def _bands_height(self, line: float) -> float:
        """All rows' name bands: one each, or the upright names under the last row and a
        small gap under each other row."""
        names, rows = self._names_height(line), len(self.rows)
        return names + 2 * PAD * max(rows - 1, 0) if self.upright else names * rows

    @staticmethod
    def _ruler_height(line: float) -> float:
        return line + PAD + max(24.0, 1.6 * line) + line + 2 * PAD     # note, band, ticks

    def _laid_out(self) -> _Layout:
        key = (self.width(), self.height(), len(self.rows), self.upright, self.ruler is not None,
               tuple(r.title for r in self.rows), self._small.key())
        if key == self._layout_key:
            return self._layout
        self._layout_key = key
        fm, fm_title = QFontMetricsF(self._small), QFontMetricsF(self.font())
        line = fm.height()
        titles = [line_ for r in self.rows for line_ in r.title.split("\n")]
        if self.ruler is not None:
            titles += self.ruler.title.split("\n")
        titles_width = max((fm_title.horizontalAdvance(t) for t in titles), default=0.0) + 2 * PAD
        x0 = titles_width + fm.horizontalAdvance("0.5") + 2 * PAD     # the plots' left edge
        x1 = self.width() - PAD
        names = self._names_height(line)
        ruler_h = self._ruler_height(line) if self.ruler is not None else 0.0
        rows = len(self.rows)
        bands = self._bands_height(line)
        plot_h = max(float(ROW_MIN_PX), (self.height() - ruler_h - bands - rows * GAP) / max(rows, 1))
        out = _Layout(titles_width=titles_width)
        y = 0.0
        for r in range(rows):
            out.plots.append(QRectF(x0, y, x1 - x0, plot_h))
            y += plot_h
            band = names if (not self.upright or r == rows - 1) else 2 * PAD   # unnamed: a gap
            out.names.append(QRectF(x0, y, x1 - x0, band))
            y += band + GAP
        out.ruler_top = y
        band = max(24.0, 1.6 * line)
        out.ruler = QRectF(x0 + PAD, y + line + PAD, x1 - x0 - 2 * PAD, band)
        self._layout = out
        return out

    # ------------------------------------------------------------------ reading positions
    def bar_center(self, row: int, column: int) -> QPointF:
        """Where the middle of a bar's foot is, in widget pixels (tests click there)."""
        plot = self._laid_out().plots[row]
        width = plot.width() / len(self.rows[row].values)
        return QPointF(plot.left() + (column + 0.5) * width, plot.bottom() - 3)

    def column_at(self, pos: QPointF) -> float | None:
        """The x of `pos` in column units if it is inside a row's bar area, else None."""
        layout = self._laid_out()
        for plot, row in zip(layout.plots, self.rows):
            if plot.contains(pos) and len(row.values):
                return (pos.x() - plot.left()) / (plot.width() / len(row.values)) - 0.5
        return None

    def mousePressEvent(self, event) -> None:
        x = self.column_at(event.position()) if event.button() == Qt.MouseButton.LeftButton else None
        if x is None:
            super().mousePressEvent(event)
            return
        self.clicked.emit(x)

    def mouseMoveEvent(self, event) -> None:
        x = self.column_at(event.position())
        on_bar = x is not None and abs(x - round(x)) <= BAR_WIDTH / 2
        self.setCursor(Qt.CursorShape.PointingHandCursor if on_bar else Qt.CursorShape.ArrowCursor)
        super().mouseMoveEvent(event)

    # ------------------------------------------------------------------ painting
    def paintEvent(self, _event) -> None:
        if self._theme is None:
            return
        p = QPainter(self)
        p.fillRect(self.rect(), QColor(self._theme.background))
        layout = self._laid_out()
        for r, row in enumerate(self.rows):
            self._paint_row(p, row, layout.plots[r], layout.names[r], layout.titles_width)
        if self.ruler is not None:
            self._paint_ruler(p, self.ruler, layout)
        p.end()

    def _title(self, p: QPainter, text: str, right: float, middle: float) -> None:
        """Right-aligned lines centred on `middle`, in the widget's own font."""
        p.setFont(self.font())
        p.setPen(QColor(self._theme.text))
        lines = text.split("\n")
        line = QFontMetricsF(self.font()).height()
        top = middle - line * len(lines) / 2
        for n, text_line in enumerate(lines):
            p.drawText(QRectF(0, top + n * line, right - PAD, line),
                       Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, text_line)

    def _paint_row(self, p: QPainter, row: BarRow, plot: QRectF, names: QRectF, titles: float) -> None:
        theme, fm = self._theme, QFontMetricsF(self._small)
        line = fm.height()
        self._title(p, row.title, titles, plot.center().y())

        def y_of(v):
            return plot.bottom() - float(v) / Y_TOP * plot.height()

        # the probability axis: a line, ticks and their values
        p.setFont(self._small)
        p.setPen(QPen(QColor(theme.grid), 1))
        p.drawLine(QPointF(plot.left(), plot.top()), QPointF(plot.left(), plot.bottom()))
        p.drawLine(QPointF(plot.left(), plot.bottom()), QPointF(plot.right(), plot.bottom()))
        text_pen = QColor(theme.text)
        for v in AXIS_TICKS:
            y = y_of(v)
            p.setPen(QPen(QColor(theme.grid), 1))
            p.drawLine(QPointF(plot.left() - 3, y), QPointF(plot.left(), y))
            p.setPen(text_pen)
            p.drawText(QRectF(titles, y - line / 2, plot.left() - titles - 5, line),
                       Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, f"{v:g}")
        columns = len(row.values)
        if not columns:
            return
        width = plot.width() / columns
        bar = width * BAR_WIDTH
        p.save()
        p.setClipRect(plot.adjusted(0, -1, 1, 1))
        for i, (height, role) in enumerate(zip(row.drawn, row.roles)):
            pen, brush = self._paint[role]
            top = y_of(height)
            p.setPen(pen)
            p.setBrush(brush)
            p.drawRect(QRectF(plot.left() + i * width + (width - bar) / 2, top, bar, plot.bottom() - top))
        p.restore()
        p.setPen(text_pen)
        for i, text in enumerate(row.labels):
            if text:
                self._value_label(p, fm, text, plot.left() + (i + 0.5) * width, y_of(row.drawn[i]),
                                  width, plot)
        if names.height() > 0:
            self._names(p, fm, row.names, names, width)

    def _value_label(self, p, fm, text: str, x: float, y: float, width: float, plot: QRectF) -> None:
        line = fm.height()
        if self.upright:           # written upwards from the foot of the column
            p.save()
            p.translate(x, plot.bottom() - 0.02 / Y_TOP * plot.height())
            p.rotate(-90)
            p.drawText(QRectF(0, -line / 2, fm.horizontalAdvance(text) + 2, line),
                       Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, text)
            p.restore()
            return
        lines = [text]
        if fm.horizontalAdvance(text) > width and " " in text:   # a long mark: two lines, not over its neighbours
            head, _, tail = text.rpartition(" ")
            lines = [head, tail]
        top = max(plot.top(), y - line * len(lines) - 1)
        for n, text_line in enumerate(lines):
            p.drawText(QRectF(x - width / 2, top + n * line, width, line),
                       Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignVCenter, text_line)

    def _names(self, p, fm, names, band: QRectF, width: float) -> None:
        line = fm.height()
        p.setPen(QColor(self._theme.text))
        for i, name in enumerate(names):
            if not name:
                continue
            x = band.left() + (i + 0.5) * width
            if self.upright:       # reading upwards, ending just under the axis
                shown = _elided(fm, name, NAME_MAX_PX)
                p.save()
                p.translate(x, band.top() + PAD)
                p.rotate(-90)
                p.drawText(QRectF(-band.height(), -line / 2, band.height() - PAD, line),
                           Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, shown)
                p.restore()
            else:
                p.drawText(QRectF(x - width / 2, band.top() + 1, width, line),
                           Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop,
                           _elided(fm, name, width))

    def _paint_ruler(self, p: QPainter, ruler: Ruler, layout: _Layout) -> None:
        theme, fm = self._theme, QFontMetricsF(self._small)
        band, line = layout.ruler, fm.height()
        self._title(p, ruler.title, layout.titles_width, band.center().y())

        def x_of(v):
            return band.left() + float(v) * band.width()

        top = float(ruler.hi[-1]) if ruler.hi.size else 0.0
        spans = [(float(lo), float(hi), int(i), piece)
                 for i, lo, hi, piece in zip(ruler.ids, ruler.lo, ruler.hi, ruler.pieces)]
        if top < 1 - 1e-12:
            spans.append((top, 1.0, None, ""))
        edge = self._paint["edge"][0]
        p.setFont(self._small)
        for n, (lo, hi, token, piece) in enumerate(spans):
            role = ("other" if token is None else "chosen" if token == ruler.chosen
                    else "kept" if n % 2 == 0 else "kept_alt")
            brush = self._paint[role][1]
            rect = QRectF(x_of(lo), band.top(), x_of(hi) - x_of(lo), band.height())
            p.setPen(edge)
            p.setBrush(brush)
            p.drawRect(rect)
            if piece and hi - lo >= RULER_LABEL_MIN:
                p.setPen(QColor(text_on(brush.color().name())))
                p.drawText(rect, Qt.AlignmentFlag.AlignCenter, _elided(fm, piece, rect.width() - 2))
        # ticks under the band
        p.setPen(QPen(QColor(theme.grid), 1))
        p.drawLine(QPointF(band.left(), band.bottom() + 1), QPointF(band.right(), band.bottom() + 1))
        for v in RULER_TICKS:
            x = x_of(v)
            p.setPen(QPen(QColor(theme.grid), 1))
            p.drawLine(QPointF(x, band.bottom() + 1), QPointF(x, band.bottom() + 4))
            p.setPen(QColor(theme.text))
            p.drawText(QRectF(x - 40, band.bottom() + 4, 80, line), Qt.AlignmentFlag.AlignHCenter, f"{v:g}")
        # u and the note, on the roomier side of u
        note_top = layout.ruler_top
        if ruler.u is not None:
            x = x_of(ruler.u)
            p.setPen(self._paint["accent"][0])
            p.drawLine(QPointF(x, note_top), QPointF(x, band.bottom()))
        p.setPen(QColor(theme.text))
        width = fm.horizontalAdvance(ruler.note) + 2
        if ruler.u is None:
            left = band.center().x() - width / 2
        elif ruler.u > 0.7:
            left = x_of(ruler.u) - 2 * PAD - width
        else:
            left = x_of(ruler.u) + 2 * PAD
        p.drawText(QRectF(left, note_top, width, line), Qt.AlignmentFlag.AlignLeft, ruler.note)


def _elided(fm: QFontMetricsF, text: str, width: float) -> str:
    return fm.elidedText(text, Qt.TextElideMode.ElideRight, max(0.0, width))


def _same_rows(a, b) -> bool:
    return len(a) == len(b) and all(
        x.name == y.name and x.title == y.title and x.roles == y.roles and x.labels == y.labels
        and x.names == y.names and np.array_equal(x.drawn, y.drawn) and np.array_equal(x.values, y.values)
        for x, y in zip(a, b))


def _same_ruler(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return (a.title == b.title and a.pieces == b.pieces and a.chosen == b.chosen and a.u == b.u
            and a.note == b.note and np.array_equal(a.ids, b.ids)
            and np.array_equal(a.lo, b.lo) and np.array_equal(a.hi, b.hi))
