"""The painted part of the distribution panel: one bar row per stage and the ruler, painted
with QPainter from plain records (BarRow, Ruler)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from PySide6.QtCore import QEvent, QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetricsF,
    QPainter,
    QPen,
    QStaticText,
    QTransform,
)
from PySide6.QtWidgets import QSizePolicy, QWidget

from .panel import answer_tooltip
from ..theme import Theme, text_on

Y_TOP = 1.32            # the probability axis shows 0..its end (`axis_end`); the headroom holds the labels
AXIS_STEPS = (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10)   # a zoomed axis ends at one of these times a power of ten
ZOOM_BELOW = 0.3        # the axis ends at 1 unless every candidate's bar stays under this (a few
                        # pixels tall: the teaching model's 0.3..0.9 keep the whole axis)
BAR_WIDTH = 0.8         # of a column
ROW_MIN_PX = 48         # a stage row asks for a plot at least this tall
NAME_MAX_PX = 96        # upright token names longer than this are elided ("other (n)" never is)
RULER_LABEL_MIN = 0.05  # a ruler interval gets its piece written in it when at least this wide
RULER_TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)
SCREEN_SHARE = 0.3      # the chart never asks for more of the screen's height than this
HOVER_ALPHA = 60        # of 255: the tint over the column a click would force (its bar still reads)
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
    """Paints BarRows and a Ruler; a click reports the column of the bar nearest it, which
    hovering highlights."""

    clicked = Signal(int)          # the column of the bar a click forces (`bar_near`)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: tuple[BarRow, ...] = ()
        self.ruler: Ruler | None = None
        self.upright = False        # many narrow columns: vertical labels, upright names
        self.end = 1.0              # where the rows' probability axis ends (`axis_end`)
        self._paint: dict = {}
        self._colors: dict[str, QColor] = {}
        self._theme: Theme | None = None
        self._small = QFont()
        self._line = QFontMetricsF(self._small).height()     # line height of the small font
        self._texts = _Texts(lambda kind: self.font() if kind == "title" else self._small)
        self._layout = _Layout()
        self._layout_key = None
        self._widest_name: float | None = None    # upright names' longest width, once per content
        self._widest_label: float | None = None   # upright bar labels' longest width, likewise
        self._height_cap: int | None = None       # the window's limit (`set_height_cap`)
        self.hovered: tuple[int, int] | None = None   # (row, column) of the bar a click would force
        self.setMouseTracking(True)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    # ------------------------------------------------------------------ content and style
    def set_content(self, rows: tuple[BarRow, ...], ruler: Ruler | None, upright: bool) -> None:
        """Repaint (only) when something shown changed."""
        if _same_rows(rows, self.rows) and _same_ruler(ruler, self.ruler) and upright == self.upright:
            return
        names_changed = [r.names for r in rows] != [r.names for r in self.rows]
        # the minimum size depends on the rows, the ruler and the upright names' length
        resized = (len(rows) != len(self.rows) or upright != self.upright
                   or (ruler is None) != (self.ruler is None) or (upright and names_changed))
        relaid = resized or names_changed or [r.title for r in rows] != [r.title for r in self.rows]
        row_min = self._row_min()
        self.rows, self.ruler, self.upright = tuple(rows), ruler, upright
        self.end = axis_end(self.rows)
        if relaid:                  # a title (T=0.8 -> 0.9) changes the titles' width
            self._layout_key = None
        if names_changed:
            self._widest_name = None
        self._widest_label = None
        if resized or self._row_min() != row_min:     # "0.204" -> "0.198" keeps the width
            self.updateGeometry()
        self.update()

    def set_style(self, theme: Theme, paint: dict, small: QFont) -> None:
        """paint: role -> (pen, brush) for "kept", "kept_alt", "removed", "chosen", "other",
        "edge", "accent"; small: the font of labels, names and ticks."""
        self._theme, self._paint, self._small = theme, paint, QFont(small)
        self._line = QFontMetricsF(self._small).height()
        self._colors = {name: QColor(getattr(theme, name)) for name in ("background", "text", "grid")}
        for role in ("kept", "kept_alt", "chosen", "other"):      # text written on a ruler interval
            self._colors["on_" + role] = QColor(text_on(paint[role][1].color().name()))
        self._texts.clear()
        self._layout_key = None
        self._widest_name = self._widest_label = None
        self.updateGeometry()
        self.update()

    def minimumSizeHint(self) -> QSize:
        """Room for every row, band and the ruler, but never more than SCREEN_SHARE of the
        screen nor the window's `set_height_cap`: beyond that, rows get shorter (and leave
        out labels they cannot hold) rather than the window growing past the screen (many
        stages of a big vocabulary at presentation size, a 768-line screen)."""
        height = self._needed_height(self._row_min())
        height = min(height, SCREEN_SHARE * self.screen().availableGeometry().height())
        if self._height_cap is not None:
            height = min(height, self._height_cap)
        return QSize(200, int(height))

    def height_with_rows(self, row_plot: float) -> float:
        """The height of rows with plots of `row_plot` px, their bands and the ruler."""
        return self._needed_height(row_plot)

    def _needed_height(self, row_plot: float) -> float:
        """Rows with plots of `row_plot` px, their bands and the ruler."""
        height = len(self.rows) * (row_plot + GAP) + self._bands_height(self._line)
        return height + (self._ruler_height(self._line) if self.ruler else 0)

    def set_height_cap(self, cap: int | None) -> bool:
        """Ask for at most `cap` px (None: no limit): the window gives height up here when
        its panels' minimums add up to more than the screen has. True if the minimum changed."""
        before = self.minimumSizeHint().height()
        self._height_cap = cap
        if self.minimumSizeHint().height() == before:
            return False
        self.updateGeometry()
        return True

    def sizeHint(self) -> QSize:
        return self.minimumSizeHint().expandedTo(QSize(600, 400))

    def _row_min(self) -> float:
        """The least plot height a row asks for: ROW_MIN_PX, and in upright mode room for its
        longest label written upwards ("◀ chosen", "✕ top-p", the rest's share)."""
        if not self.upright:
            return ROW_MIN_PX
        if self._widest_label is None:
            self._widest_label = max((self._texts.width(t, "small") for r in self.rows for t in r.labels if t),
                                     default=0.0)
        return max(ROW_MIN_PX, round(self._widest_label) + 2 * PAD)

    def _names_height(self, line: float) -> float:
        if not self.upright:
            return line + PAD
        if self._widest_name is None:      # measured with the laid-out texts the paint reuses
            self._widest_name = max((self._texts.width(self._upright_name(n, role), "small")
                                     for r in self.rows for n, role in zip(r.names, r.roles)), default=0.0)
        return self._widest_name + 3 * PAD

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
               tuple(r.title for r in self.rows), self._small.key(), self.end)
        if key == self._layout_key:
            return self._layout
        self._layout_key = key
        fm, fm_title = QFontMetricsF(self._small), QFontMetricsF(self.font())
        line = fm.height()
        titles = [line_ for r in self.rows for line_ in r.title.split("\n")]
        if self.ruler is not None:
            titles += self.ruler.title.split("\n")
        titles_width = max((fm_title.horizontalAdvance(t) for t in titles), default=0.0) + 2 * PAD
        ticks = max(fm.horizontalAdvance(f"{v:g}") for v in self.ticks())
        x0 = titles_width + ticks + 2 * PAD     # the plots' left edge
        x1 = self.width() - PAD
        names = self._names_height(line)
        ruler_h = self._ruler_height(line) if self.ruler is not None else 0.0
        rows = len(self.rows)
        bands = self._bands_height(line)
        # rows share what is left; squeezed below their minimum (a small dock at a large type
        # size), they get shorter rather than pushing the ruler out of sight
        plot_h = max(line, (self.height() - ruler_h - bands - rows * GAP) / max(rows, 1))
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

    def ticks(self) -> tuple[float, float, float]:
        """The probability axis's ticks: 0, the middle, the end."""
        return 0.0, self.end / 2, self.end

    # ------------------------------------------------------------------ reading positions
    def row_plots(self) -> list[QRectF]:
        """Each stage row's bar area, in widget pixels, as it is drawn at the current size."""
        return list(self._laid_out().plots)

    def bar_center(self, row: int, column: int) -> QPointF:
        """Where the middle of a bar's foot is, in widget pixels (tests click there)."""
        plot = self._laid_out().plots[row]
        width = plot.width() / len(self.rows[row].values)
        return QPointF(plot.left() + (column + 0.5) * width, plot.bottom() - 3)

    def _nearest(self, pos: QPointF) -> tuple[int, int] | None:
        """(row, column) of the bar nearest `pos` in the row whose bar area holds it (a point
        between two thin bars belongs to the nearer: column i spans i ± 0.5); None off the rows."""
        for r, (plot, row) in enumerate(zip(self._laid_out().plots, self.rows)):
            if plot.contains(pos) and len(row.values):
                x = (pos.x() - plot.left()) / (plot.width() / len(row.values)) - 0.5
                return r, min(max(round(x), 0), len(row.values) - 1)
        return None

    def bar_near(self, pos: QPointF) -> tuple[int, int] | None:
        """(row, column) of the bar a click at `pos` forces: the nearest, unless it stands for
        the rest of the vocabulary ("other", no one token)."""
        near = self._nearest(pos)
        return None if near is None or self.rows[near[0]].roles[near[1]] == "other" else near

    def tip_at(self, pos: QPointF) -> str:
        """What the bar nearest `pos` stands for: its token, the row's stage, its probability and
        its mark ("✕ top-k", "◀ chosen"); "" off the rows. Hovering shows it: the numbers of
        many narrow columns, or of a squeezed row that had no room to write them."""
        near = self._nearest(pos)
        if near is None:
            return ""
        row, column = self.rows[near[0]], near[1]
        name = next((r.names[column] for r in reversed(self.rows) if r.names[column]), "")
        mark = row.labels[column]
        tip = f"{name} · {row.title.replace(chr(10), ' ')}: p = {row.values[column]:.4f}"
        return tip + (f"  {mark}" if mark and not mark.replace(".", "", 1).isdigit() else "")

    def event(self, event) -> bool:
        if event.type() == QEvent.Type.ToolTip:
            return answer_tooltip(event, self.tip_at(QPointF(event.pos())), self)
        return super().event(event)

    def mousePressEvent(self, event) -> None:
        bar = self.bar_near(event.position()) if event.button() == Qt.MouseButton.LeftButton else None
        if bar is None:
            super().mousePressEvent(event)
            return
        self.clicked.emit(bar[1])

    def mouseMoveEvent(self, event) -> None:
        self._set_hovered(self.bar_near(event.position()))
        super().mouseMoveEvent(event)

    def leaveEvent(self, event) -> None:
        self._set_hovered(None)
        super().leaveEvent(event)

    def _set_hovered(self, bar: tuple[int, int] | None) -> None:
        self.setCursor(Qt.CursorShape.ArrowCursor if bar is None else Qt.CursorShape.PointingHandCursor)
        if bar != self.hovered:
            self.hovered = bar
            self.update()

    def _paint_hovered(self, p: QPainter, layout: _Layout) -> None:
        """The column a click would force, tinted and outlined in the accent colour."""
        if self.hovered is None or self.hovered[0] >= len(self.rows):
            return
        r, column = self.hovered
        columns = len(self.rows[r].values)
        if column >= columns:             # the content changed under the pointer
            return
        plot = layout.plots[r]
        width = plot.width() / columns
        band = QRectF(plot.left() + column * width, plot.top(), width, plot.height())
        accent = QColor(self._paint["accent"][0].color())
        p.setPen(QPen(accent, 2.0))
        accent.setAlpha(HOVER_ALPHA)
        p.setBrush(accent)
        p.drawRect(band.adjusted(1, 1, -1, -1))

    # ------------------------------------------------------------------ painting
    def changeEvent(self, event) -> None:
        if event.type() == QEvent.Type.FontChange:      # titles are in the widget's font
            self._texts.clear()
            self._layout_key = None
        super().changeEvent(event)

    def paintEvent(self, _event) -> None:
        if self._theme is None:
            return
        p = QPainter(self)
        p.fillRect(self.rect(), self._colors["background"])
        layout = self._laid_out()
        for r, row in enumerate(self.rows):
            self._paint_row(p, row, layout.plots[r], layout.names[r], layout.titles_width)
        if self.ruler is not None:
            self._paint_ruler(p, self.ruler, layout)
        self._paint_hovered(p, layout)
        p.end()

    def _title(self, p: QPainter, text: str, right: float, middle: float, room: float | None = None) -> None:
        """Right-aligned lines centred on `middle`, in the widget's own font; only the first
        (the stage's name) when the lines would not fit in `room` px (a squeezed row)."""
        p.setFont(self.font())
        p.setPen(self._colors["text"])
        lines = text.split("\n")
        line = QFontMetricsF(self.font()).height()
        if room is not None and len(lines) * line > room:
            lines = lines[:1]
        top = middle - line * (len(lines) - 1) / 2
        for n, text_line in enumerate(lines):
            self._texts.draw(p, text_line, "title", right - PAD, top + n * line, 1.0)

    def _paint_row(self, p: QPainter, row: BarRow, plot: QRectF, names: QRectF, titles: float) -> None:
        colors, texts = self._colors, self._texts
        self._title(p, row.title, titles, plot.center().y(), plot.height() + 2 * PAD)
        end = self.end
        scale = plot.height() / (Y_TOP * end)         # px per unit of probability
        ceiling = plot.bottom() - end * scale

        # the probability axis: a line, ticks and their values
        p.setFont(self._small)
        p.setPen(colors["grid"])
        p.drawLine(QPointF(plot.left(), plot.top()), QPointF(plot.left(), plot.bottom()))
        p.drawLine(QPointF(plot.left(), plot.bottom()), QPointF(plot.right(), plot.bottom()))
        for v in self.ticks():
            y = plot.bottom() - v * scale
            p.drawLine(QPointF(plot.left() - 3, y), QPointF(plot.left(), y))
        if end < 1:                # a zoomed axis: its end drawn across the row, so no bar reads as 1
            p.setPen(QPen(colors["grid"], 1, Qt.PenStyle.DashLine))
            p.drawLine(QPointF(plot.left(), ceiling), QPointF(plot.right(), ceiling))
        p.setPen(colors["text"])
        # only the values that fit: 0, then the end, then (on a whole 0..1 axis) the middle 0.5
        written = {0.0: True, end: scale * end >= self._line, end / 2: end == 1 and scale * end / 2 >= self._line}
        for v in self.ticks():
            if written[v]:
                texts.draw(p, f"{v:g}", "small", plot.left() - 5, plot.bottom() - v * scale, 1.0)
        columns = len(row.values)
        if not columns:
            return
        width = plot.width() / columns
        bar = width * BAR_WIDTH
        tops = plot.bottom() - np.asarray(row.drawn, dtype=float) * scale     # (c,) px
        p.save()
        p.setClipRect(plot.adjusted(0, -1, 1, 1))
        for role in dict.fromkeys(row.roles):        # one pen and brush change per role
            pen, brush = self._paint[role]
            p.setPen(pen)
            p.setBrush(brush)
            for i in (i for i, r in enumerate(row.roles) if r == role):
                p.drawRect(QRectF(plot.left() + i * width + (width - bar) / 2, tops[i],
                                  bar, plot.bottom() - tops[i]))
        for i in np.flatnonzero(tops < ceiling - 1):     # past a zoomed axis's end ("other"): broken
            self._break_mark(p, plot.left() + i * width + (width - bar) / 2, bar, (ceiling + plot.bottom()) / 2)
        p.restore()
        tops = np.maximum(tops, plot.top())           # a broken bar's value is written at the top of the row
        p.setFont(self._small)
        p.setPen(colors["text"])
        for i, text in enumerate(row.labels):
            if text:
                self._value_label(p, text, plot.left() + (i + 0.5) * width, float(tops[i]), width, plot,
                                  row.roles[i])
        if names.height() > 0:
            self._names(p, row, names, width)

    def _break_mark(self, p: QPainter, left: float, width: float, y: float) -> None:
        """A slanted gap, edged in the text colour, across a bar that goes on past the axis's end."""
        rise, gap = min(8.0, width / 4), 5.0
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(self._colors["background"])
        ends = (QPointF(left - 2, y + rise / 2), QPointF(left + width + 2, y - rise / 2))
        p.drawPolygon([ends[0] + QPointF(0, gap / 2), ends[1] + QPointF(0, gap / 2),
                       ends[1] - QPointF(0, gap / 2), ends[0] - QPointF(0, gap / 2)])
        p.setPen(QPen(self._colors["text"], 1.5))
        for dy in (-gap / 2, gap / 2):
            p.drawLine(ends[0] + QPointF(0, dy), ends[1] + QPointF(0, dy))

    def _value_label(self, p, text: str, x: float, y: float, width: float, plot: QRectF, role: str) -> None:
        line = self._line
        lines = self._level_lines(text, width - PAD, plot)
        if lines is None:     # written upwards from the top of the bar (lower if it would leave the plot)
            text = text.replace("▼", "◀")                  # turned with the text, it still points down at its bar
            foot = plot.bottom() - 0.02 / Y_TOP * plot.height()        # (a fixed gap, whatever the axis's end)
            room = foot - plot.top()
            if self._texts.width(text, "small") > room:   # a row squeezed below its minimum:
                sign = text.split(" ")[0]                   # the mark's sign alone ("✕", "◀"),
                if sign == text or self._texts.width(sign, "small") > room:
                    return                                  # else nothing over the next row's
                text = sign
            sign, headroom = text.split(" ")[0], y - PAD - plot.top()
            if sign != text and self._texts.width(text, "small") > headroom >= self._texts.width(sign, "small"):
                text = sign                                 # over a tall bar: the mark alone, clear of it
            length = self._texts.width(text, "small")
            start = min(foot, max(y - PAD, plot.top() + length))
            p.save()
            p.translate(x, start)
            p.rotate(-90)
            self._texts.draw(p, text, "small", 0.0, 0.0, 0.0, 0.5)
            p.restore()
            return
        top = y - line * len(lines) - PAD          # above the bar, clear of its top edge
        # a bar reaching into the headroom: the label inside its top, in the bar's text colour
        inside = top < plot.top() and plot.bottom() - y >= line * len(lines) + 2 * PAD
        if inside:
            top = y + PAD
            p.setPen(self._colors.get("on_" + role, self._colors["text"]))
        for n, text_line in enumerate(lines):
            self._texts.draw(p, text_line, "small", x, max(plot.top(), top) + n * line, 0.5, 0.0)
        if inside:
            p.setPen(self._colors["text"])

    def _level_lines(self, text: str, room: float, plot: QRectF) -> list[str] | None:
        """`text` as the lines it is written level in, each within `room` (its column's width,
        never over its neighbours'): whole; a long mark of few columns on two lines, or in a
        squeezed row its sign and value ("▼ 0.246"). None: it is written upwards (many
        narrow columns, or a number wider than its column)."""
        def fits(t: str) -> bool:
            return self._texts.width(t, "small") <= room

        if fits(text):
            return [text]
        if self.upright or " " not in text:
            return None
        head, _, tail = text.rpartition(" ")
        if plot.height() >= 2.5 * self._line and fits(head) and fits(tail):
            return [head, tail]
        short = f"{head.split(' ')[0]} {tail}"
        return [short] if fits(short) else None

    def _upright_name(self, name: str, role: str) -> str:
        """A column name written upwards: token pieces elided; "other (n)" whole, the count
        on a second line (a line separator: QStaticText does not break at a newline)."""
        if role != "other":
            return self._texts.elided(name, "small", NAME_MAX_PX)
        for bracket in ("（", "("):
            head, sep, tail = name.partition(bracket)
            if sep:
                return f"{head.rstrip()}\u2028{sep}{tail}"
        return name

    def _upright_box(self, text: str, x: float, top: float) -> QRectF:
        """Where an upright name centred on column x, starting at `top`, is drawn. A two-line
        name ("other" over its count) is wider than a column: the last one is moved left to
        stay inside the widget rather than lose its count at the edge."""
        size = self._texts.get(text, "small").size()       # unrotated: the box is size.height() wide
        x = min(x, self.width() - size.height() / 2)
        return QRectF(x - size.height() / 2, top, size.height(), size.width())

    def _names(self, p, row: BarRow, band: QRectF, width: float) -> None:
        p.setPen(self._colors["text"])
        for i, (name, role) in enumerate(zip(row.names, row.roles)):
            if not name:
                continue
            x = band.left() + (i + 0.5) * width
            if self.upright:       # reading upwards, ending just under the axis
                text = self._upright_name(name, role)
                box = self._upright_box(text, x, band.top() + PAD)
                p.save()
                p.translate(box.center().x(), box.top())
                p.rotate(-90)
                self._texts.draw(p, text, "small", 0.0, 0.0, 1.0, 0.5)
                p.restore()
            else:
                self._texts.draw(p, self._texts.elided(name, "small", width), "small", x, band.top() + 1, 0.5, 0.0)

    def _paint_ruler(self, p: QPainter, ruler: Ruler, layout: _Layout) -> None:
        colors, texts = self._colors, self._texts
        band = layout.ruler
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
            rect = QRectF(x_of(lo), band.top(), x_of(hi) - x_of(lo), band.height())
            p.setPen(edge)
            p.setBrush(self._paint[role][1])
            p.drawRect(rect)
            if piece and hi - lo >= RULER_LABEL_MIN:
                p.setPen(colors["on_" + role])
                texts.draw(p, texts.elided(piece, "small", rect.width() - 2), "small",
                           rect.center().x(), rect.center().y())
        # ticks under the band
        p.setPen(colors["grid"])
        p.drawLine(QPointF(band.left(), band.bottom() + 1), QPointF(band.right(), band.bottom() + 1))
        for v in RULER_TICKS:
            p.drawLine(QPointF(x_of(v), band.bottom() + 1), QPointF(x_of(v), band.bottom() + 4))
        p.setPen(colors["text"])
        for v in RULER_TICKS:
            texts.draw(p, f"{v:g}", "small", x_of(v), band.bottom() + 4, 0.5, 0.0)
        # u and the note, on the roomier side of u
        note_top = layout.ruler_top
        if ruler.u is not None:
            x = x_of(ruler.u)
            p.setPen(self._paint["accent"][0])
            p.drawLine(QPointF(x, note_top), QPointF(x, band.bottom()))
        p.setPen(colors["text"])
        if ruler.u is None:
            x, anchor = band.center().x(), 0.5
        elif ruler.u > 0.7:
            x, anchor = x_of(ruler.u) - 2 * PAD, 1.0
        else:
            x, anchor = x_of(ruler.u) + 2 * PAD, 0.0
        room = {0.0: self.width() - x, 1.0: x, 0.5: 2 * min(x, self.width() - x)}[anchor] - PAD
        texts.draw(p, texts.elided(ruler.note, "small", room), "small", x, note_top, anchor, 0.0)   # never cut at an edge


class _Texts:
    """Laid-out text kept between paints: QStaticText draws several times faster than
    drawText, which lays the text out again on every call. Fonts by kind ("small" for
    labels, names and ticks, "title" for the row titles)."""

    LIMIT = 4096        # entries; the cache starts over beyond this (numbers change every tick)

    def __init__(self, font_of):
        self.font = font_of                  # kind -> QFont
        self._laid: dict[tuple[str, str], QStaticText] = {}
        self._elided: dict[tuple[str, str, int], str] = {}

    def clear(self) -> None:
        self._laid.clear()
        self._elided.clear()

    def get(self, text: str, kind: str) -> QStaticText:
        key = (text, kind)
        laid = self._laid.get(key)
        if laid is None:
            if len(self._laid) > self.LIMIT:
                self._laid.clear()
            laid = self._laid[key] = QStaticText(text)
            laid.setTextFormat(Qt.TextFormat.PlainText)
            laid.prepare(QTransform(), self.font(kind))
        return laid

    def width(self, text: str, kind: str) -> float:
        return self.get(text, kind).size().width()

    def elided(self, text: str, kind: str, width: float) -> str:
        key = (text, kind, int(width))
        shown = self._elided.get(key)
        if shown is None:
            if len(self._elided) > self.LIMIT:
                self._elided.clear()
            shown = self._elided[key] = QFontMetricsF(self.font(kind)).elidedText(
                text, Qt.TextElideMode.ElideRight, max(0.0, width))
        return shown

    def draw(self, p: QPainter, text: str, kind: str, x: float, y: float,
             h: float = 0.5, v: float = 0.5) -> None:
        """`text` placed so that its point (h, v) (0 = left / top, 1 = right / bottom of
        the text) is at (x, y). The painter's font must be this kind's."""
        laid = self.get(text, kind)
        size = laid.size()
        p.drawStaticText(QPointF(x - h * size.width(), y - v * size.height()), laid)


def axis_end(rows: tuple[BarRow, ...]) -> float:
    """Where the stage rows' probability axis ends: 1; or, when no candidate's bar reaches
    ZOOM_BELOW (a big vocabulary spreads its probability thin: Gemma 3's top p = 0.109), the
    round value at or just above the tallest candidate's bar (0.12), so the bars fill the
    rows and the axis's end says what they are measured against. One end for every row:
    the stages still compare bar for bar. The "other" bar (the rest of the vocabulary) may
    pass it: it is drawn broken, with its value written."""
    tallest = max((float(d) for r in rows for d, role in zip(r.drawn, r.roles) if role != "other"), default=0.0)
    if not 0.0 < tallest < ZOOM_BELOW:
        return 1.0
    decade = 10.0 ** np.floor(np.log10(tallest))
    return next(round(step * decade, 12) for step in AXIS_STEPS if step * decade >= tallest * (1 - 1e-9))


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
