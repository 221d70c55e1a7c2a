"""Distribution panel: how the next token was chosen, stage by stage.

One row of bars per stage (raw -> every active stage of the configured order -> final),
the same candidate in the same column on every row, so a teacher sees at a glance which
stage removed which candidate: a removed candidate stays as a hatched grey ghost at the
height it had when it was cut, labelled "✕ top-k" (text, never colour alone). Below, the
cumulative "ruler": the final intervals [lo, hi) and the uniform draw u that falls in
one of them. The selected bar is marked only on "pick" and "stop" frames, so the class
sees the distribution before it sees the answer. Clicking a bar forces that token
(what-if). Big vocabularies show the top N candidates plus one "other" bar.

The panel draws Distribution records that core produced; it computes no model math.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics, QFontMetricsF, QPen
from PySide6.QtWidgets import (QGridLayout, QHBoxLayout, QLabel, QPushButton, QStackedWidget,
                               QVBoxLayout, QWidget)

from ..core.errors import ExplorerError
from ..core.sampling import STAGE_NAMES, Distribution, Stage
from ..i18n import add_messages, tr
from .panel import Panel
from .theme import Theme

MAX_ROWS = len(STAGE_NAMES) + 2   # raw, every stage, final
N_SHOWN = 20            # candidate columns for a big vocabulary; the rest is one "other" bar
NUMBERS_UP_TO = 12      # print every bar's probability when there are at most this many bars
Y_TOP = 1.32            # the probability axis shows 0..1; the headroom holds the labels
BAR_WIDTH = 0.8
ROW_MIN_PX = 48         # a stage row's plot is never shorter than this
NAME_MAX_PX = 96        # upright column names longer than this are elided
RULER_LABEL_MIN = 0.05  # a ruler interval gets its piece written in it when at least this wide
ERROR_COLOR = "#C00000"

add_messages({
    "distribution.title": {"en": "Next-token distribution", "zh": "下一个Token的概率分布"},
    "distribution.no_logits": {
        "en": "No logits yet: the prompt has not been through the model.\n"
              "Step forward to Prefill to see the first distribution.",
        "zh": "还没有logits：提示还没有送入模型。\n前进到Prefill，就能看到第一个概率分布。"},
    "distribution.stage.raw": {"en": "raw", "zh": "原始"},
    "distribution.stage.repetition_penalty": {"en": "penalty", "zh": "重复惩罚"},
    "distribution.stage.temperature": {"en": "temperature", "zh": "温度"},
    "distribution.stage.top_k": {"en": "top-k", "zh": "top-k"},
    "distribution.stage.top_p": {"en": "top-p", "zh": "top-p"},
    "distribution.stage.min_p": {"en": "min-p", "zh": "min-p"},
    "distribution.stage.final": {"en": "final", "zh": "最终"},
    "distribution.raw_note": {"en": "softmax", "zh": "softmax"},
    "distribution.off": {"en": "Off (no effect): {stages}", "zh": "未启用（不起作用）：{stages}"},
    "distribution.all_on": {"en": "Every stage is on.", "zh": "所有步骤都已启用。"},
    "distribution.other": {"en": "other ({count:,})", "zh": "其他（{count:,}）"},
    "distribution.chosen": {"en": "chosen", "zh": "选中"},
    "distribution.forced": {"en": "forced", "zh": "人为指定"},
    "distribution.status.before": {
        "en": "Step {step} · {phase}: probabilities from the logits at position {pos}. "
              "The pick is shown on the next frame.",
        "zh": "第{step}步 · {phase}：位置{pos}的logits给出的概率。下一帧才揭晓选中的Token。"},
    "distribution.status.pick": {"en": "Step {step}: picked “{piece}” (p = {p:.3f}).",
                                 "zh": "第{step}步：选中“{piece}”（p = {p:.3f}）。"},
    "distribution.status.forced": {
        "en": "Step {step}: “{piece}” was forced (what-if); the model gives it p = {p:.3f}.",
        "zh": "第{step}步：“{piece}”是人为指定的（假设实验）；模型给它的概率 p = {p:.3f}。"},
    "distribution.ruler": {"en": "cumulative\n[lo, hi)", "zh": "累积区间\n[lo, hi)"},
    "distribution.greedy": {"en": "greedy: no draw (the most likely token is taken)",
                            "zh": "贪心：不抽随机数（直接取概率最大的Token）"},
    "distribution.u_later": {"en": "u is drawn at the pick (next frame)",
                             "zh": "随机数u在选择时才抽取（下一帧）"},
    "distribution.u": {"en": "u = {u:.3f}", "zh": "u = {u:.3f}"},
    "distribution.u_forced": {"en": "u = {u:.3f} (not used: forced)",
                              "zh": "u = {u:.3f}（未使用：人为指定）"},
    "distribution.back": {"en": "Back to the model's choice", "zh": "恢复模型的选择"},
    "distribution.undo": {"en": "Undo", "zh": "撤销"},
    "distribution.hint": {"en": "Click a bar to force that token (what-if).",
                          "zh": "点击柱子可强制选这个Token（假设实验）。"},
    "distribution.rejected": {"en": "Not applied: {error}", "zh": "未应用：{error}"},
})


def stage_label(name: str, lang: str) -> str:
    """Short display name of a stage ("raw", a STAGE_NAMES entry or "final")."""
    return tr(f"distribution.stage.{name}", lang)


# ---------------------------------------------------------------------------- what to show

def candidate_ids(dist: Distribution, final_top: np.ndarray, n: int) -> np.ndarray:  # -> (k,) k <= n
    """The ids that get a column: the selected id, then the final survivors, then the raw
    favourites, at most n; ordered by raw probability (descending, lower id first) so the
    columns stay put while the sliders move. final_top: `dist.top(n)`."""
    survivors = final_top[dist.probs[final_top] > 0]
    pool = np.concatenate(([dist.selected_id], survivors, dist.top(n, 0)))
    _, first = np.unique(pool, return_index=True)
    ids = pool[np.sort(first)][:n]                                     # (k,) first occurrences
    raw = dist.stages[0].probs
    return ids[np.lexsort((ids, -raw[ids]))]


def cut_heights(stages: tuple[Stage, ...], ids: np.ndarray) -> np.ndarray:  # (k,) -> (k,)
    """The probability each id had just before a stage removed it (0 if never removed)."""
    cut = np.zeros(ids.size)
    for before, stage in zip(stages, stages[1:]):
        removed_here = before.kept[ids] & ~stage.kept[ids]             # (k,)
        cut[removed_here] = before.probs[ids][removed_here]
    return cut


# ---------------------------------------------------------------------------- plot rows

def _quiet_plot(bottom: pg.AxisItem | None = None) -> pg.PlotWidget:
    """A plot that does not pan, zoom or offer a context menu: it is a slide, not a tool."""
    plot = pg.PlotWidget(axisItems={"bottom": bottom} if bottom else None)
    item = plot.getPlotItem()
    item.setMenuEnabled(False)
    item.hideButtons()
    item.setMouseEnabled(x=False, y=False)
    item.getViewBox().setDefaultPadding(0)
    return plot


class _Labels(pg.GraphicsObject):
    """All the value labels of one plot in one item, drawn in screen pixels at points of
    the plot: a refresh hands over a list (no text item per bar, no text layout per
    label) and the item repaints only when the list changed. `anchor` as in pg.TextItem:
    (0.5, 1) puts the middle of the text's bottom edge on the point. Vertical labels are
    written upwards, starting at the point."""

    def __init__(self, anchor=(0.5, 1)):
        super().__init__()
        self.anchor = anchor
        self.vertical = False
        self.labels: list[tuple[float, float, str]] = []    # (x, y, text)
        self.font, self.color = QFont(), QColor("black")
        self._bounds = QRectF()

    def set_labels(self, labels, vertical: bool, bounds: QRectF) -> None:
        """labels: (x, y, text) in data coordinates; bounds: the data rect they are drawn in."""
        if labels == self.labels and vertical == self.vertical and bounds == self._bounds:
            return
        if bounds != self._bounds:
            self.prepareGeometryChange()
            self._bounds = bounds
        self.labels, self.vertical = labels, vertical
        self.update()

    def set_style(self, font: QFont, color) -> None:
        self.font, self.color = QFont(font), QColor(color)
        self.update()

    def boundingRect(self) -> QRectF:
        return self._bounds

    def paint(self, p, *_args) -> None:
        if not self.labels:
            return
        to_device = p.transform()
        fm = QFontMetricsF(self.font)
        height = fm.height()
        p.save()
        p.resetTransform()
        p.setFont(self.font)
        p.setPen(self.color)
        ax, ay = self.anchor
        for x, y, text in self.labels:
            at = to_device.map(QPointF(x, y))
            width = fm.horizontalAdvance(text) + 2
            if self.vertical:
                p.save()
                p.translate(at)
                p.rotate(-90)
                p.drawText(QRectF(0, -height / 2, width, height), Qt.AlignmentFlag.AlignLeft, text)
                p.restore()
            else:
                p.drawText(QRectF(at.x() - ax * width, at.y() - ay * height, width, height),
                           Qt.AlignmentFlag.AlignLeft, text)
        p.restore()


class _Bars(pg.BarGraphItem):
    """A BarGraphItem whose bounds are the plot's fixed data rect: pg's own boundingRect
    works out pen padding in pixels on every call, a dozen times per repaint. The view
    box clips what it holds, so a pen reaching past the rect is cut either way."""

    def __init__(self, bounds: QRectF, **opts):
        self._bounds = bounds
        super().__init__(**opts)

    def set_bounds(self, bounds: QRectF) -> None:
        if bounds != self._bounds:
            self.prepareGeometryChange()
            self._bounds = bounds

    def boundingRect(self) -> QRectF:
        return QRectF(self._bounds)


class _NameAxis(pg.AxisItem):
    """A bottom axis with one name per column: written across when the columns are wide,
    upwards (reading bottom to top, ending at the axis) when there are many narrow ones."""

    def __init__(self):
        super().__init__("bottom")
        self.upright: list[str] = []           # names written upwards; [] = ordinary ticks
        self._names = None                     # (names, upright) last set
        self._height = 0

    def set_names(self, names: list[str], upright: bool) -> int:
        """-> the height the upright names need (0 when written across). Unchanged names
        keep the axis as drawn (new ticks would regenerate its picture)."""
        if (names, upright) == self._names:
            return self._height
        self._names = (list(names), upright)
        self.upright = self._elided(names) if upright else []
        self.setTicks([[(i, "" if upright else name) for i, name in enumerate(names)], []])
        height = self._height = self._upright_height() if upright else 0
        self.setHeight(height or None)
        return height

    def forget_names(self) -> None:
        """The font changed: the next set_names measures again."""
        self._names = None

    def _metrics(self) -> QFontMetrics:
        return QFontMetrics(self.style["tickFont"] or self.font())

    def _elided(self, names: list[str]) -> list[str]:
        fm = self._metrics()
        return [fm.elidedText(n, Qt.TextElideMode.ElideRight, NAME_MAX_PX) for n in names]

    def _upright_height(self) -> int:
        fm = self._metrics()
        return max(fm.horizontalAdvance(n) for n in self.upright) + 12

    def drawPicture(self, p, axisSpec, tickSpecs, textSpecs):
        super().drawPicture(p, axisSpec, tickSpecs, [] if self.upright else textSpecs)
        if not self.upright:
            return
        height = self._metrics().height()
        for (_pen, top, _bottom), name in zip(tickSpecs, self.upright):
            p.save()
            p.translate(top.x(), top.y() + 6)
            p.rotate(-90)
            p.drawText(QRectF(-NAME_MAX_PX * 2, -height / 2, NAME_MAX_PX * 2, height),
                       int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter), name)
            p.restore()


class _BarRow:
    """One stage: a title, a plot with one BarGraphItem updated in place, and a fixed
    pool of text labels (one per possible column)."""

    def __init__(self, on_click: Callable[[float], None]):
        self.title = QLabel()
        self.title.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.axis = _NameAxis()
        self.plot = _quiet_plot(self.axis)
        self.plot.setMinimumHeight(ROW_MIN_PX)
        item = self.plot.getPlotItem()
        left = item.getAxis("left")
        left.enableAutoSIPrefix(False)
        left.setTicks([[(0.0, "0"), (0.5, "0.5"), (1.0, "1")], []])
        left.setWidth(30)
        item.setYRange(0, Y_TOP, padding=0)
        self.bars = _Bars(QRectF(-0.5, 0, 0, Y_TOP), x=np.zeros(0), height=np.zeros(0), width=BAR_WIDTH)
        item.addItem(self.bars)
        self.texts = _Labels(anchor=(0.5, 1))
        item.addItem(self.texts, ignoreBounds=True)
        self.columns = -1                      # columns the x range was set for
        self.name = ""                          # stage shown: "raw", a stage name, "final"
        self.values = np.zeros(0)               # (c,) the probability each column stands for
        self.labels: list[str] = []             # (c,) the text on or above each bar
        self._on_click = on_click
        self.plot.scene().sigMouseClicked.connect(self._clicked)

    def set_names(self, names: list[str], upright: bool) -> None:
        """Column names on the x axis; upright names get their own height below the bars."""
        self.plot.setMinimumHeight(ROW_MIN_PX + self.axis.set_names(names, upright))

    def draw(self, values, drawn, roles, labels, paint, vertical) -> None:
        """values/drawn: (c,) probabilities and bar heights (a ghost keeps its cut height);
        roles: (c,) "kept" | "removed" | "chosen" | "other"; labels: (c,) text at each bar;
        paint: role -> (pen, brush). vertical: many narrow columns, labels written upwards."""
        self.values, self.labels = values, labels
        if values.size != self.columns:        # a new range regenerates the axes: only when needed
            self.columns = values.size
            self.plot.getPlotItem().setXRange(-0.5, values.size - 0.5, padding=0)
        self.bars.set_bounds(QRectF(-0.5, 0, values.size, Y_TOP))
        self.bars.setOpts(x=np.arange(values.size), height=drawn, width=BAR_WIDTH,
                          pens=[paint[r][0] for r in roles], brushes=[paint[r][1] for r in roles])
        self.texts.set_labels([(i, 0.02 if vertical else float(drawn[i]), text)
                               for i, text in enumerate(labels) if text],
                              vertical, QRectF(-0.5, 0, values.size, Y_TOP))

    def _clicked(self, event) -> None:
        box = self.plot.getPlotItem().getViewBox()
        if box.sceneBoundingRect().contains(event.scenePos()):
            self._on_click(box.mapSceneToView(event.scenePos()).x())


class _Ruler:
    """The final intervals [lo, hi) side by side on 0..1 and a marker at u."""

    def __init__(self):
        self.title = QLabel()
        self.title.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.plot = _quiet_plot()
        self.plot.setFixedHeight(84)
        item = self.plot.getPlotItem()
        item.hideAxis("left")
        bottom = item.getAxis("bottom")
        bottom.enableAutoSIPrefix(False)
        bottom.setTicks([[(v, f"{v:g}") for v in (0, 0.25, 0.5, 0.75, 1.0)], []])
        item.setXRange(0, 1, padding=0.01)
        item.setYRange(0, 1.95, padding=0)
        self.bars = _Bars(QRectF(0, 0, 1, 1), x0=np.zeros(0), width=np.zeros(0), y0=0.0, height=1.0)
        item.addItem(self.bars)
        self.texts = _Labels(anchor=(0.5, 0.5))
        item.addItem(self.texts, ignoreBounds=True)
        self.u_line = pg.InfiniteLine(angle=90, movable=False)
        item.addItem(self.u_line, ignoreBounds=True)
        self.note = pg.TextItem(anchor=(0.5, 0))
        item.addItem(self.note, ignoreBounds=True)
        self._note_at = None                    # (text, anchor, pos) of the note as drawn
        self.ids = np.zeros(0, dtype=np.int64)  # (m,) the ids of the drawn intervals
        self.lo = self.hi = np.zeros(0)         # (m,) their ends
        self.u: float | None = None             # where the marker is, None when hidden

    def draw(self, ids, lo, hi, pieces, chosen, paint) -> None:
        """ids, lo, hi: (m,) intervals; the rest of 0..1 is one "other" interval.
        chosen: the id to mark, or None."""
        self.ids, self.lo, self.hi = ids, lo, hi
        top = float(hi[-1]) if hi.size else 0.0
        other = top < 1 - 1e-12
        x0 = np.append(lo, top) if other else lo                          # (m [+1],)
        x1 = np.append(hi, 1.0) if other else hi
        roles = ["chosen" if i == chosen else ("kept" if n % 2 == 0 else "kept_alt")
                 for n, i in enumerate(ids)] + (["other"] if other else [])
        self.bars.setOpts(x0=x0, width=x1 - x0, y0=0.0, height=1.0,
                          pens=[paint["edge"][0]] * len(roles), brushes=[paint[r][1] for r in roles])
        names = list(pieces) + ([""] if other else [])
        self.texts.set_labels([(float(x0[n] + x1[n]) / 2, 0.5, name) for n, name in enumerate(names)
                               if name and x1[n] - x0[n] >= RULER_LABEL_MIN],
                              False, QRectF(0, 0, 1, 1))

    def mark(self, u: float | None, note: str) -> None:
        """The u marker (None: hidden) and the text above the ruler."""
        self.u = u
        self.u_line.setVisible(u is not None)
        if u is not None and u != self.u_line.value():
            self.u_line.setValue(u)
        right = u is not None and u > 0.7                 # the text goes on the roomier side of u
        at = (note, (1, 0) if right else (0.5 if u is None else 0, 0),
              (0.5 if u is None else u + (-0.01 if right else 0.01), 1.9))
        if at != self._note_at:                           # setText lays the text out again
            self._note_at = at
            self.note.setText(note)
            self.note.setAnchor(at[1])
            self.note.setPos(*at[2])


# ---------------------------------------------------------------------------- the panel

class DistributionPanel(Panel):
    panel_id = "distribution"
    title_key = "distribution.title"

    def __init__(self, session, parent=None):
        super().__init__(session, parent)
        self._status = QLabel(wordWrap=True)
        self._error = QLabel(wordWrap=True)
        self._error.setStyleSheet(f"color: {ERROR_COLOR};")
        self._message = QLabel(alignment=Qt.AlignmentFlag.AlignCenter, wordWrap=True)
        self._rows: list[_BarRow] = []            # built when first needed (start-up stays quick)
        self._ruler: _Ruler | None = None         # likewise
        self._small = QFont()                     # the plots' text font (_sync_font)
        self._off = QLabel(wordWrap=True)
        self.back_button = QPushButton(clicked=self._back)
        self.undo_button = QPushButton(clicked=self._undo)
        self._hint = QLabel()
        self._ids = np.zeros(0, dtype=np.int64)   # (k,) the candidate of each column
        self._n_hidden = 0                        # special tokens with raw probability 0: no column
        self._ticks: list[str] = []               # (c,) x tick labels
        self._marked: int | None = None
        self._paint: dict = {}
        self._font_key = None
        self._stack = QStackedWidget()
        self._stack.addWidget(self._message)
        self._stack.addWidget(self._plots_page())
        self._layout()
        self._style(self.theme)
        self.refresh()

    # ------------------------------------------------------------------ read-only, for tests
    def bar_ids(self) -> np.ndarray:  # (k,)
        """The candidate id of each column (the "other" column, if any, is not included)."""
        return self._ids.copy()

    def bar_heights(self, stage: str) -> np.ndarray:  # (c,)
        """The probability each column of a stage's row stands for ("raw", a stage name or
        "final"); the last entry is the "other" mass when that column is shown."""
        return self._row(stage).values.copy()

    def bar_labels(self) -> list[str]:
        """The x tick labels: token pieces (and "other (n)")."""
        return list(self._ticks)

    def value_labels(self, stage: str) -> list[str]:
        """The text on or above each bar of a stage's row (numbers, "✕ top-k", the mark)."""
        return list(self._row(stage).labels)

    def shown_stages(self) -> list[str]:
        return [row.name for row in self._rows if row.plot.isVisibleTo(self)]

    def marked_id(self) -> int | None:
        """The id marked as selected (None before the pick)."""
        return self._marked

    def ruler_u(self) -> float | None:
        """Where the u marker is drawn (None: greedy, or not yet drawn)."""
        return None if self._ruler is None else self._ruler.u

    def ruler_intervals(self):
        """(ids, lo, hi) of the drawn ruler intervals."""
        if self._ruler is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0)
        return self._ruler.ids.copy(), self._ruler.lo.copy(), self._ruler.hi.copy()

    def ruler_note(self) -> str:
        return "" if self._ruler is None else self._ruler.note.toPlainText()

    def status_text(self) -> str:
        return self._status.text()

    def error_text(self) -> str:
        return self._error.text()

    def message_text(self) -> str:
        """The centred message, or "" when the plots are shown."""
        return self._message.text() if self._stack.currentWidget() is self._message else ""

    def off_text(self) -> str:
        return self._off.text()

    # ------------------------------------------------------------------ actions
    def click_candidate(self, token_id: int) -> None:
        """What-if: force `token_id` at the current step (what clicking its bar does)."""
        step = self.session.step
        if step is not None:
            self._guarded(self.session.force, step.index, int(token_id))

    def _clicked_at(self, x: float) -> None:
        column = int(round(x))
        if 0 <= column < self._ids.size and abs(x - column) <= BAR_WIDTH / 2:
            self.click_candidate(self._ids[column])

    def _back(self) -> None:
        step = self.session.step
        if step is not None:
            self._guarded(self.session.unforce, step.index)

    def _undo(self) -> None:
        self._guarded(self.session.undo)

    def _guarded(self, action, *args) -> None:
        try:
            action(*args)
        except ExplorerError as err:
            self._error.setText(self.tr("distribution.rejected", error=err))
            self._error.show()
            return
        self._error.hide()

    # ------------------------------------------------------------------ building
    def _plots_page(self) -> QWidget:
        page = QWidget()
        grid = self._grid = QGridLayout(page)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setVerticalSpacing(2)
        grid.setColumnStretch(1, 1)
        grid.addWidget(self._off, MAX_ROWS + 1, 0, 1, 2)     # stage rows 0.., the ruler at MAX_ROWS
        return page

    def _row_at(self, r: int) -> _BarRow:
        """Stage row r, built and styled the first time a distribution needs it."""
        while len(self._rows) <= r:
            row = _BarRow(self._clicked_at)
            self._grid.addWidget(row.title, len(self._rows), 0)
            self._grid.addWidget(row.plot, len(self._rows), 1)
            self._rows.append(row)
            self._style_plot(row.plot, row.texts)
            self._show_row(len(self._rows) - 1, False)
        return self._rows[r]

    def _ruler_built(self) -> _Ruler:
        if self._ruler is None:
            ruler = self._ruler = _Ruler()
            self._grid.addWidget(ruler.title, MAX_ROWS, 0)
            self._grid.addWidget(ruler.plot, MAX_ROWS, 1)
            self._style_plot(ruler.plot, ruler.texts)
            ruler.note.setColor(self.theme.text)
            ruler.note.setFont(self._small)
            ruler.u_line.setPen(self._paint["accent"][0])
            ruler.title.setText(self.tr("distribution.ruler"))
        return self._ruler

    def _layout(self) -> None:
        buttons = QHBoxLayout()
        buttons.addWidget(self.back_button)
        buttons.addWidget(self.undo_button)
        buttons.addWidget(self._hint, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(self._status)
        layout.addWidget(self._error)
        layout.addWidget(self._stack, 1)
        layout.addLayout(buttons)
        self._error.hide()

    def set_theme(self, theme: Theme) -> None:
        self._style(theme)
        super().set_theme(theme)

    def _style(self, theme: Theme) -> None:
        """Colours of plots, bars and labels. Removed bars are hatched as well as grey."""
        def pen(color, width=1.0, style=Qt.PenStyle.SolidLine):
            p = QPen(QColor(color), width, style)
            p.setCosmetic(True)
            return p

        self._paint = {
            "kept": (pen(theme.text, 0.8), QBrush(QColor(theme.kept))),
            "kept_alt": (pen(theme.text, 0.8), QBrush(QColor(theme.kept).darker(125))),
            "removed": (pen(QColor(theme.removed).darker(140), 1.2, Qt.PenStyle.DashLine),
                        QBrush(QColor(theme.removed).darker(120), Qt.BrushStyle.BDiagPattern)),
            "chosen": (pen(theme.text, 2.0), QBrush(QColor(theme.chosen))),
            "other": (pen(theme.grid), QBrush(QColor(theme.pending), Qt.BrushStyle.Dense4Pattern)),
            "edge": (pen(theme.background, 1.5), None),
            "accent": (pen(theme.accent, 3.0), None),
        }
        self._theme_applied = theme
        for row in self._rows:
            self._style_plot(row.plot, row.texts)
        if self._ruler is not None:
            self._style_plot(self._ruler.plot, self._ruler.texts)
            self._ruler.note.setColor(theme.text)
            self._ruler.u_line.setPen(self._paint["accent"][0])

    def _style_plot(self, plot: pg.PlotWidget, labels: _Labels) -> None:
        """Colours and font of one plot (a row or the ruler) and of its labels."""
        theme = self._theme_applied
        plot.setBackground(theme.background)
        for side in ("left", "bottom"):
            axis = plot.getPlotItem().getAxis(side)
            axis.setPen(theme.grid)
            axis.setTextPen(theme.text)
            axis.setTickFont(self._small)
        labels.set_style(self._small, theme.text)

    def _sync_font(self) -> None:
        """Plot text follows the widget font (zoom, presentation mode) when it changes."""
        font = self.font()
        key = (font.family(), font.pointSizeF())
        if key == self._font_key:
            return
        self._font_key = key
        small = self._small = QFont(font)
        small.setPointSizeF(max(font.pointSizeF() * 0.9, 6.0))
        for row in self._rows:
            row.axis.forget_names()
            self._style_plot(row.plot, row.texts)
        if self._ruler is not None:
            self._style_plot(self._ruler.plot, self._ruler.texts)
            self._ruler.note.setFont(small)

    # ------------------------------------------------------------------ drawing
    def _row(self, stage: str) -> _BarRow:
        for row in self._rows:
            if row.name == stage and row.plot.isVisibleTo(self):
                return row
        raise KeyError(f"stage {stage!r} is not shown; shown: {self.shown_stages()}")

    def refresh(self) -> None:
        self._sync_font()
        self._retranslate()
        step = self.session.step
        self.back_button.setEnabled(step is not None and step.forced)
        self.undo_button.setEnabled(self.session.can_undo)
        if step is None:
            self._show_message()
            return
        self._stack.setCurrentIndex(1)
        dist = step.distribution
        reveal = self.session.frame.shows_distribution
        final_top = dist.top(N_SHOWN)                                    # (n,)
        hidden = self._hidden_ids(dist)
        ids = candidate_ids(dist, final_top, N_SHOWN)
        self._ids = ids[~np.isin(ids, hidden)]
        self._n_hidden = hidden.size
        self._marked = dist.selected_id if reveal else None
        self._draw_rows(dist)
        self._draw_ruler(dist, final_top, reveal)
        self._status.setText(self._status_line(step, reveal))

    def _hidden_ids(self, dist: Distribution) -> np.ndarray:  # -> (h,)
        """Special tokens the model never gives any probability (the context token "…" of a
        logits lesson): no bar, they are not candidates. The selected one is always shown."""
        raw = dist.stages[0].probs
        specials = np.array(sorted(set(self.session.model.vocab.specials.values())), dtype=np.int64)
        specials = specials[(specials >= 0) & (specials < raw.size)]
        return specials[(raw[specials] == 0) & (specials != dist.selected_id)]

    def _retranslate(self) -> None:
        self.back_button.setText(self.tr("distribution.back"))
        self.undo_button.setText(self.tr("distribution.undo"))
        self._hint.setText(self.tr("distribution.hint"))
        if self._ruler is not None:
            self._ruler.title.setText(self.tr("distribution.ruler"))

    def _show_message(self) -> None:
        self._stack.setCurrentIndex(0)
        self._message.setText(self.tr("distribution.no_logits"))
        self._status.setText("")
        self._ids, self._marked, self._ticks = np.zeros(0, dtype=np.int64), None, []
        if self._ruler is not None:
            self._ruler.u = None

    def _status_line(self, step, reveal: bool) -> str:
        dist = step.distribution
        if not reveal:
            phase = (tr("phase.prefill", self.session.lang) if step.phase == "prefill"
                     else tr("phase.decode", self.session.lang, n=step.index))
            return self.tr("distribution.status.before", step=step.index, phase=phase,
                           pos=step.logits_position)
        key = "distribution.status.forced" if dist.forced else "distribution.status.pick"
        return self.tr(key, step=step.index, piece=self._piece(dist.selected_id),
                       p=float(dist.probs[dist.selected_id]))

    def _piece(self, token_id) -> str:
        return self.session.model.vocab.display_piece(int(token_id))

    def _draw_rows(self, dist: Distribution) -> None:
        ids, lang = self._ids, self.session.lang
        vocab_size = dist.probs.size - self._n_hidden
        other = vocab_size > ids.size
        columns = ids.size + other
        self._ticks = [self._piece(i) for i in ids]
        if other:
            self._ticks.append(self.tr("distribution.other", count=vocab_size - ids.size))
        few = columns <= NUMBERS_UP_TO
        cut = cut_heights(dist.stages, ids)                               # (k,)
        removers = [stage_label(r, lang) if r else "" for r in dist.removed_by[ids]]
        shown = [s for s in dist.stages if s.active or s.name == "raw"]
        final = (dist.probs, dist.stages[-1].kept, "final")
        entries = [(s.probs, s.kept, s.name) for s in shown] + [final]
        self._row_at(len(entries) - 1)
        for r, row in enumerate(self._rows):
            self._show_row(r, r < len(entries))
            row.name = entries[r][2] if r < len(entries) else ""
        for row, entry in zip(self._rows, entries):
            values, drawn, roles, labels = self._row_data(*entry, cut, removers, few, other)
            row.title.setText(self._row_title(dist, entry[2]))
            row.draw(values, drawn, roles, labels, self._paint, vertical=not few)
            # many narrow columns: only the bottom row names them, written upwards
            names = self._ticks if few or entry is final else [""] * columns
            row.set_names(names, upright=not few and entry is final)
        off = [f"{stage_label(s.name, lang)} ({s.note})" for s in dist.stages if not s.active]
        self._off.setText(self.tr("distribution.off", stages=" · ".join(off)) if off
                          else self.tr("distribution.all_on"))

    def _show_row(self, r: int, visible: bool) -> None:
        """Rows of inactive stages are hidden and give their height to the others."""
        row = self._rows[r]
        row.title.setVisible(visible)
        row.plot.setVisible(visible)
        self._grid.setRowStretch(r, int(visible))

    def _row_data(self, probs, kept_mask, name, cut, removers, few, other):
        """What one row shows: values (c,), drawn heights (c,), roles (c,), labels (c,)."""
        ids = self._ids
        values = probs[ids]                                               # (k,)
        kept = kept_mask[ids]                                             # (k,)
        drawn = np.where(kept, values, cut)
        roles = np.where(kept, "kept", "removed").tolist()
        labels = [(f"{v:.3f}" if few else "") if k else f"✕ {r}"
                  for v, k, r in zip(values, kept, removers)]
        if name == "final" and self._marked is not None:
            column = int(np.flatnonzero(ids == self._marked)[0])
            roles[column] = "chosen"
            mark = self.tr("distribution.forced" if self.session.step.forced else "distribution.chosen")
            labels[column] = f"▼ {mark} {values[column]:.3f}" if few else f"◀ {mark}"
        if other:
            rest = max(0.0, 1.0 - float(values.sum()))
            values, drawn = np.append(values, rest), np.append(drawn, rest)
            roles.append("other")
            labels.append(f"{rest:.3f}")
        return values, drawn, roles, labels

    def _row_title(self, dist: Distribution, name: str) -> str:
        label = stage_label(name, self.session.lang)
        if name == "raw":
            return f"{label}\n{self.tr('distribution.raw_note')}"
        if name == "final":
            return label
        note = next(s.note for s in dist.stages if s.name == name)
        return f"{label}\n{note}"

    def _draw_ruler(self, dist: Distribution, final_top: np.ndarray, reveal: bool) -> None:
        ids, lo, hi = dist.ruler_head(final_top.size)
        ruler = self._ruler_built()
        ruler.draw(ids, lo, hi, [self._piece(i) for i in ids], self._marked, self._paint)
        if dist.greedy:
            ruler.mark(None, self.tr("distribution.greedy"))
        elif not reveal:
            ruler.mark(None, self.tr("distribution.u_later"))
        else:
            key = "distribution.u_forced" if dist.forced else "distribution.u"
            ruler.mark(dist.u, self.tr(key, u=dist.u))
