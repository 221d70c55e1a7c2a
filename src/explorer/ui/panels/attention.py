"""Attention panel: a heatmap of one layer and head's weights, query positions against the
key positions they could read; causally masked cells are hatched, never a zero colour."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFontMetrics
from PySide6.QtWidgets import (QCheckBox, QComboBox, QGraphicsItem, QHBoxLayout, QLabel,
                               QVBoxLayout, QWidget)

from ...core.models.attention import attention_weights
from ...i18n import add_messages
from ...session import Session
from ..fonts import readable_font
from .panel import Panel, answer_tooltip
from ..theme import text_on

COLOR_MAP = "cividis"          # colour-blind safe, and dark at 0 so a zero weight is clearly not grey
VALUES_IN_CELLS = 12           # print the weights when the matrix is at most this many rows and columns
VALUE_FORMAT = "{:.2f}"        # and when a cell is as wide as "0.00" and as tall as a line
MAX_TICKS = 40                 # label at most this many positions per axis
BAR_TICKS = ((0, 1), (0, 0.5, 1), (0, 0.25, 0.5, 0.75, 1), (0, 0.2, 0.4, 0.6, 0.8, 1))   # colour bar, by room

add_messages({
    "attention.layer": {"en": "layer {i}", "zh": "第{i}层"},
    "attention.layer_local": {"en": "layer {i} · local {w}", "zh": "第{i}层 · 局部{w}"},
    "attention.layer_global": {"en": "layer {i} · global", "zh": "第{i}层 · 全局"},
    "attention.head": {"en": "head {i}", "zh": "头{i}"},
    "attention.kv_head": {"en": "query head {h} reads K/V head {g} (shared by heads {first}–{last})",
                          "zh": "查询头{h}读取K/V头{g}（头{first}–{last}共用）"},
    "attention.full": {"en": "full matrix (all steps so far)", "zh": "完整矩阵（到目前为止的所有步骤）"},
    "attention.query": {"en": "query (token·position)", "zh": "查询（Token·位置）"},
    "attention.key": {"en": "key (token·position)", "zh": "键（Token·位置）"},
    "attention.weight": {"en": "weight", "zh": "权重"},
    "attention.caption": {"en": "{phase}: queries × keys = {rows} × {cols}",
                          "zh": "{phase}：查询 × 键 = {rows} × {cols}"},
    "attention.caption_full": {"en": "full matrix up to {phase}: queries × keys = {rows} × {cols}",
                               "zh": "截至{phase}的完整矩阵：查询 × 键 = {rows} × {cols}"},
    "attention.boundary": {"en": "; rows under the line come from Decode steps",
                           "zh": "；线下方的行来自Decode步骤"},
    "attention.legend": {"en": "grey hatched = masked (future), not a zero weight",
                         "zh": "灰色斜线 = 被遮蔽（未来位置），不是权重为0"},
    "attention.tip": {"en": "query {query} → key {cell_key}: weight {weight:.4f}",
                      "zh": "查询 {query} → 键 {cell_key}：权重 {weight:.4f}"},
    "attention.tip_masked": {"en": "query {query} → key {cell_key}: masked (a future position, not a zero weight)",
                             "zh": "查询 {query} → 键 {cell_key}：被遮蔽（未来位置，不是权重为0）"},
    "attention.legend_window": {"en": "grey hatched = masked: a future position, or one older than this layer's "
                                      "window (it reads only the latest {w} positions); not a zero weight",
                                "zh": "灰色斜线 = 被遮蔽：未来位置，或超出本层窗口的旧位置（本层只读最近{w}个位置）；"
                                      "不是权重为0"},
    "attention.tip_window": {"en": "query {query} → key {cell_key}: masked (older than this layer's window of the "
                                   "latest {w} positions, not a zero weight)",
                             "zh": "查询 {query} → 键 {cell_key}：被遮蔽（超出本层最近{w}个位置的窗口，不是权重为0）"},
    "attention.not_run": {"en": "the model has not run yet", "zh": "模型还没有运行"},
    "attention.no_layers": {"en": "this model has no attention layers", "zh": "该模型没有注意力层"},
})


@dataclass(frozen=True)
class _Matrix:
    """What the heatmap shows: one head's weights and mask with their row/column tokens."""
    weights: np.ndarray          # [r, t] attention weights
    mask: np.ndarray             # [r, t] True where the query may attend to the key
    row_ids: np.ndarray          # [r] token ids of the queries
    row_positions: np.ndarray    # [r]
    key_ids: np.ndarray          # [t]
    key_positions: np.ndarray    # [t]
    prefill_rows: int            # rows that came from the Prefill forward

    @property
    def image(self) -> np.ndarray:  # [r, t] weights, NaN where masked
        return np.where(self.mask, self.weights, np.nan)


def step_matrix(step, layer: int, head: int) -> _Matrix:
    """One forward: its new positions' queries against every key they could read."""
    lt, tr = step.trace.layers[layer], step.trace
    return _Matrix(attention_weights(lt, head), lt.mask, tr.ids, tr.positions, tr.key_ids, tr.key_positions,
                   len(tr.ids) if step.phase == "prefill" else 0)


def stacked_matrix(steps, layer: int, head: int) -> _Matrix:
    """The rows of every forward in `steps`, each padded with masked cells up to the keys of
    the last one: Prefill rows then one row per Decode step, as one [r, t] matrix."""
    parts = [step_matrix(s, layer, head) for s in steps]
    first, last = parts[0], parts[-1]
    t = len(last.key_ids)
    # a speculative run's pass whose drafts were rolled back read keys the cache no longer
    # holds: only the passes whose keys are all still there share the last one's key axis
    parts = [p for p in parts if len(p.key_ids) <= t and np.array_equal(p.key_ids, last.key_ids[:len(p.key_ids)])]

    def padded(a, fill):  # [n, t_s] -> [n, t]
        return np.pad(a, ((0, 0), (0, t - a.shape[1])), constant_values=fill)

    return _Matrix(np.concatenate([padded(p.weights, 0.0) for p in parts]),
                   np.concatenate([padded(p.mask, False) for p in parts]),
                   np.concatenate([p.row_ids for p in parts]),
                   np.concatenate([p.row_positions for p in parts]),
                   last.key_ids, last.key_positions, first.prefill_rows if parts[0] is first else 0)


def masked_runs(mask: np.ndarray):  # [r, t] bool, True = masked -> rows, starts, stops [m]
    """Horizontal runs of masked cells, one rectangle per run instead of one per cell."""
    edges = np.diff(np.pad(mask.astype(np.int8), ((0, 0), (1, 1))), axis=1)   # [r, t+1]
    rows, starts = np.nonzero(edges == 1)
    _, stops = np.nonzero(edges == -1)        # row-major order pairs every start with its stop
    return rows, starts, stops


class _MaskOverlay(QGraphicsItem):
    """Grey cells with hatching drawn in screen pixels, so the hatch keeps its spacing at
    any zoom (a pattern brush in data coordinates would be stretched with the cells).
    One rectangle per run of masked cells, drawn with one call per brush."""

    def __init__(self):
        super().__init__()
        self.setZValue(5)
        self.fill, self.hatch = QBrush(), QBrush()
        self._rects: list[QRectF] = []
        self._bounds = QRectF()

    def set_mask(self, masked: np.ndarray) -> None:  # [r, t] True = masked
        self.prepareGeometryChange()
        self._rects = [QRectF(float(start), float(r), float(stop - start), 1.0)
                       for r, start, stop in zip(*masked_runs(masked))]
        self._bounds = QRectF(0, 0, masked.shape[1], masked.shape[0]) if masked.size else QRectF()

    def boundingRect(self) -> QRectF:
        return self._bounds

    def set_colors(self, fill: str, hatch: str) -> None:
        self.fill = QBrush(QColor(fill))
        line = QColor(hatch)
        line.setAlpha(150)
        self.hatch = QBrush(line, Qt.BDiagPattern)
        self.update()

    def paint(self, painter, _option, _widget=None):
        if not self._rects:
            return
        to_device = painter.transform()
        device = [to_device.mapRect(r) for r in self._rects]
        painter.save()
        painter.resetTransform()
        painter.setPen(Qt.NoPen)
        for brush in (self.fill, self.hatch):
            painter.setBrush(brush)
            painter.drawRects(device)
        painter.restore()


class AttentionPanel(Panel):
    panel_id = "attention"
    title_key = "attention.title"
    SLIDE_STRETCHES = True        # a chart: it fills the room a slide gives it

    def __init__(self, session: Session, parent=None):
        super().__init__(session, parent)
        self._matrix: _Matrix | None = None
        self._computed = None              # (traces read, (step, layer, head, toggle), matrix) last recomputed
        self._shown = None                 # (theme, language, font, toggle) of the last drawing
        self._toggle_before_view = None    # the toggle as the teacher left it, while a frame's view overrides it
        self._pickers_before_view = None   # (layer, head) as the teacher left them, while a frame chooses
        self._pickers_chosen_for = None    # (cursor, choice) last applied: the teacher may pick again there
        self._build_controls()
        self._build_plot()
        layout = QVBoxLayout(self)
        controls = QHBoxLayout()
        for w in (self.layer_picker, self.head_picker):
            controls.addWidget(w)
        controls.addStretch(1)
        controls.addWidget(self.full_matrix_toggle)
        layout.addLayout(controls)
        self._kv_note.setWordWrap(True)      # its own line: a long note must not widen the dock
        self._caption.setWordWrap(True)      # the full matrix's caption is a sentence long
        layout.addWidget(self._kv_note)
        layout.addWidget(self._caption)
        layout.addWidget(self._plot_widget, 1)
        layout.addWidget(self._legend)
        self._apply_font()
        self.refresh()

    def _build_controls(self) -> None:
        self.layer_picker = QComboBox(self)
        self.head_picker = QComboBox(self)
        self.full_matrix_toggle = QCheckBox(self)
        self._kv_note = QLabel(self)
        self._caption = QLabel(self)
        self._legend = QLabel(self)
        self._legend.setWordWrap(True)
        self.layer_picker.currentIndexChanged.connect(self.refresh)
        self.head_picker.currentIndexChanged.connect(self.refresh)
        self.full_matrix_toggle.toggled.connect(self.refresh)

    def _build_plot(self) -> None:
        self._plot_widget = pg.PlotWidget(self)
        plot = self._plot = self._plot_widget.getPlotItem()
        plot.invertY(True)
        plot.hideButtons()
        plot.setMenuEnabled(False)
        plot.getViewBox().setMouseEnabled(False, False)
        self._image = pg.ImageItem(axisOrder="row-major")
        plot.addItem(self._image)
        self._cmap = pg.colormap.get(COLOR_MAP)
        self._colorbar = pg.ColorBarItem(values=(0, 1), colorMap=self._cmap, interactive=False)
        self._colorbar.setImageItem(self._image, insert_in=plot)
        self._mask_item = _MaskOverlay()
        plot.addItem(self._mask_item)
        self._boundary = pg.InfiniteLine(angle=0, movable=False)
        self._boundary.setZValue(20)
        plot.addItem(self._boundary)
        self._message = pg.TextItem(anchor=(0.5, 0.5))
        plot.addItem(self._message)
        self._value_items: list[pg.TextItem] = []   # a pool, reused across refreshes
        self._values_shown = 0                       # how many of the pool hold this matrix's weights
        self._values_fit = False                     # whether every cell has room for its weight
        for name in ("left", "bottom", "top", "right"):     # hidden ones too: each resize re-set their labels
            plot.getAxis(name).enableAutoSIPrefix(False)
        self._colorbar.axis.enableAutoSIPrefix(False)
        self._all_ticks: tuple[list, list] = ([], [])
        self._bar_ticks: list[tuple[float, str]] = []     # the colour bar's, set with the axes'
        plot.getViewBox().sigResized.connect(self._fit_ticks)
        self._plot_widget.viewport().installEventFilter(self)      # hovering a cell names its weight

    def slide_chrome(self) -> list[QWidget]:
        return [self.layer_picker, self.head_picker, self.full_matrix_toggle]

    def has_content(self) -> bool:
        """Weights to show: a forward has run, on a model with layers."""
        return self.session.step is not None and self.model_has_layers()

    # ---------------------------------------------------------------- refresh
    def refresh(self) -> None:
        self._update_pickers()
        self._follow_frame_view()
        self._update_kv_note()
        matrix = self._current_matrix()
        font = readable_font(self.font())
        step = self.session.step
        shown = (self.theme, self.session.lang, font.family(), font.pointSizeF(),
                 self.full_matrix_toggle.isChecked(), None if step is None else step.index,
                 bool(self.session.run.steps[0].trace.layers))
        if shown == self._shown and _same_matrix(matrix, self._matrix):
            return                         # a rerun that left this head's weights as they were
        self._shown = shown
        self._apply_theme()
        self._retranslate()
        self._matrix = matrix
        if matrix is None:
            self._show_message()
        else:
            self._show_matrix(matrix)

    def _follow_frame_view(self) -> None:
        """A lesson frame with the view "attention_full" shows the stacked matrix: the toggle is
        checked while the player is on that frame (the teacher may still uncheck it there),
        and put back as it was when the player leaves."""
        wanted = "attention_full" in self.session.frame.view
        if wanted and self._toggle_before_view is None:
            self._toggle_before_view = self.full_matrix_toggle.isChecked()
            self._set_toggle(True)
        elif not wanted and self._toggle_before_view is not None:
            self._set_toggle(self._toggle_before_view)
            self._toggle_before_view = None
        self._follow_frame_choice()

    def _follow_frame_choice(self) -> None:
        """A lesson frame that names a layer and head turns the pickers to them when the
        player arrives (the teacher may pick others there), and puts them back on leaving."""
        choice = self.session.frame.attention
        arrived = (self.session.cursor, choice)
        if choice is not None and arrived != self._pickers_chosen_for:
            if self._pickers_before_view is None:
                self._pickers_before_view = (self.layer_picker.currentIndex(), self.head_picker.currentIndex())
            self._set_pickers(*choice)
        elif choice is None and self._pickers_before_view is not None:
            self._set_pickers(*self._pickers_before_view)
            self._pickers_before_view = None
        self._pickers_chosen_for = arrived

    def _set_pickers(self, layer: int, head: int) -> None:
        for picker, index in ((self.layer_picker, layer), (self.head_picker, head)):
            picker.blockSignals(True)                   # refresh() is already running
            picker.setCurrentIndex(min(index, picker.count() - 1))
            picker.blockSignals(False)

    def _set_toggle(self, checked: bool) -> None:
        self.full_matrix_toggle.blockSignals(True)      # refresh() is already running
        self.full_matrix_toggle.setChecked(checked)
        self.full_matrix_toggle.blockSignals(False)

    def _current_matrix(self) -> _Matrix | None:
        step, layers = self.session.step, self.session.run.steps[0].trace.layers
        if step is None or not layers:
            return None
        layer = max(0, self.layer_picker.currentIndex())
        head = max(0, self.head_picker.currentIndex())
        full, run = self.full_matrix_toggle.isChecked(), self.session.run
        chosen = (step.index, layer, head, full)
        # the forwards the matrix reads: a slider drag on a recorded step makes a new run
        # holding the same traces, whose weights need not be recomputed
        traces = tuple(s.trace for s in run.steps[:step.index + 1]) if full else (step.trace,)
        if (self._computed is not None and self._computed[1] == chosen and len(self._computed[0]) == len(traces)
                and all(a is b for a, b in zip(self._computed[0], traces))):
            return self._computed[2]       # the weights are recomputed on demand: once per choice
        matrix = stacked_matrix(run.steps[:step.index + 1], layer, head) if full else step_matrix(step, layer, head)
        self._computed = (traces, chosen, matrix)
        return matrix

    def _window(self) -> int:
        """How many of the latest positions the picked layer reads (0: all, a global layer)."""
        layers = self.session.run.steps[0].trace.layers
        return layers[max(0, self.layer_picker.currentIndex())].window if layers else 0

    def _counts(self) -> tuple[int, int, int]:
        """Layers, query heads and K/V heads of the model the run used."""
        layers = self.session.run.steps[0].trace.layers
        return (len(layers), layers[0].q.shape[0], layers[0].k.shape[0]) if layers else (0, 0, 0)

    def _update_pickers(self) -> None:
        """One item per layer / head; shown only when there is a choice."""
        n_layers, n_heads, _ = self._counts()
        layers = self.session.run.steps[0].trace.layers
        windowed = any(lt.window for lt in layers)      # a model with sliding-window layers
        _fill(self.layer_picker, [self.tr("attention.layer", i=i) if not windowed else
                                  self.tr("attention.layer_local", i=i, w=lt.window) if lt.window else
                                  self.tr("attention.layer_global", i=i) for i, lt in enumerate(layers)])
        _fill(self.head_picker, [self.tr("attention.head", i=i) for i in range(n_heads)])
        self.layer_picker.setVisible(n_layers > 1 and not self.on_slide)
        self.head_picker.setVisible(n_heads > 1 and not self.on_slide)

    def _update_kv_note(self) -> None:
        """Which K/V head the picked query head reads (grouped heads only)."""
        _, n_heads, n_kv = self._counts()
        self._kv_note.setVisible(0 < n_kv < n_heads)
        if 0 < n_kv < n_heads:
            h, group = max(0, self.head_picker.currentIndex()), n_heads // n_kv
            g = h // group
            self._kv_note.setText(self.tr("attention.kv_head", h=h, g=g,
                                          first=g * group, last=(g + 1) * group - 1))

    def _show_message(self) -> None:
        layers = self.session.run.steps[0].trace.layers
        self._image.clear()
        self._mask_item.set_mask(np.zeros((0, 0), bool))
        self._boundary.hide()
        self._show_values(None)
        self._set_ticks([], [])
        self._caption.setText("")
        self._message.setText(self.tr("attention.not_run" if layers else "attention.no_layers"),
                              color=self.theme.text)
        self._message.setPos(0.5, 0.5)
        self._message.show()
        self._plot.setRange(xRange=(0, 1), yRange=(0, 1), padding=0)

    def _show_matrix(self, m: _Matrix) -> None:
        rows, cols = m.weights.shape
        self._message.hide()
        self._image.setImage(m.image, levels=(0, 1), autoLevels=False)
        self._image.setRect(0, 0, cols, rows)
        self._mask_item.set_mask(~m.mask)
        decode_rows = self.full_matrix_toggle.isChecked() and 0 < m.prefill_rows < rows
        self._boundary.setPos(m.prefill_rows)
        self._boundary.setVisible(decode_rows)
        self._set_ticks(_tick_labels(self.piece, m.row_ids, m.row_positions),
                        _tick_labels(self.piece, m.key_ids, m.key_positions))
        self._show_values(m if rows <= VALUES_IN_CELLS and cols <= VALUES_IN_CELLS else None)
        self._caption.setText(self._caption_text(m))
        self._plot.setRange(xRange=(0, cols), yRange=(0, rows), padding=0.02)

    def _caption_text(self, m: _Matrix) -> str:
        step = self.session.step
        phase = (self.tr("phase.prefill") if step.phase == "prefill"
                 else self.tr("phase.verify" if step.phase == "verify" else "phase.decode", n=step.index))
        key = "attention.caption_full" if self.full_matrix_toggle.isChecked() else "attention.caption"
        text = self.tr(key, phase=phase, rows=m.weights.shape[0], cols=m.weights.shape[1])
        n_layers, n_heads, _ = self._counts()
        if self.on_slide and (n_layers > 1 or n_heads > 1):     # no pickers on a slide to say which
            text = (f"{self.layer_picker.currentText()} · {self.head_picker.currentText()} · " + text)
        return text + (self.tr("attention.boundary") if self._boundary.isVisible() else "")

    def _set_ticks(self, rows: list, cols: list) -> None:
        self._all_ticks = (rows, cols)
        self._fit_ticks()

    def _fit_ticks(self) -> None:
        """Label every cell that has room (long prompts: every n-th); the left axis is as
        wide as its longest label, so the axis title never overlaps the labels."""
        rows, cols = self._all_ticks
        fm = QFontMetrics(readable_font(self.font()))
        size = self._plot.getViewBox().size()
        widest_col = max((fm.horizontalAdvance(t) for _, t in cols), default=0) + fm.height()
        self._plot.getAxis("left").setTicks([_every_nth(rows, size.height() / fm.height())])
        bottom = self._plot.getAxis("bottom")
        bottom.setTicks(_key_ticks(cols, fm, size.width()) if self.on_slide   # no hovering on a slide
                        else [_every_nth(cols, size.width() / widest_col)])
        # the first and last column's labels are centred on the plot's edges: let them reach
        # half a label past the axis, into the empty corners, instead of being left out
        overflow = widest_col // 2 + 1
        if overflow != bottom.style["hideOverlappingLabels"]:
            bottom.setStyle(hideOverlappingLabels=overflow)
        widest_row = max((fm.horizontalAdvance(t) for _, t in rows), default=0)
        left = self._plot.getAxis("left")
        left.setWidth(widest_row + 2 * fm.height() + 8)
        # written upwards, the axis title needs the plot's height (the heading above names
        # the rows too: "queries x keys")
        titled = size.height() >= fm.horizontalAdvance(self.tr("attention.query"))
        if titled != left.label.isVisible():        # each call redraws and may resize the axis
            left.showLabel(titled)
        # the colour bar is as tall as the plot: as many weights as fit without overlapping
        room = size.height() / (1.5 * fm.height())
        ticks = next((t for t in reversed(BAR_TICKS) if len(t) <= room), BAR_TICKS[0])
        bar_ticks = [(v, f"{v:.1f}") for v in ticks]
        if bar_ticks != self._bar_ticks:
            self._bar_ticks = bar_ticks
            self._colorbar.axis.setTicks([bar_ticks, []])
        # as wide as its labels in this type (pyqtgraph learns it only from a first paint)
        bar_width = max(fm.horizontalAdvance(label) for _, label in bar_ticks) + fm.height()
        if bar_width != self._colorbar.axis.fixedWidth:
            self._colorbar.axis.setWidth(bar_width)
        self._fit_values(fm, size)

    def _fit_values(self, fm: QFontMetrics, size) -> None:
        """The weights stay in their cells only while every cell has room for one: a wide
        panel shows a 12 x 12 matrix's numbers, a narrow one only its colours."""
        rows, cols = (0, 0) if self._matrix is None else self._matrix.weights.shape
        fits = (cols > 0 and size.width() / cols >= fm.horizontalAdvance(VALUE_FORMAT.format(0)) + 4
                and size.height() / rows >= fm.height())
        if fits != self._values_fit:
            self._values_fit = fits
            for item in self._value_items[:self._values_shown]:
                item.setVisible(fits)

    def _show_values(self, m: _Matrix | None) -> None:
        """Weights printed in the cells (small matrices only); masked cells stay blank."""
        cells = [] if m is None else list(zip(*np.nonzero(m.mask)))
        while len(self._value_items) < len(cells):
            item = pg.TextItem(anchor=(0.5, 0.5))
            item.setZValue(10)
            self._plot.addItem(item)
            self._value_items.append(item)
        colors = self._cmap.map(np.array([m.weights[r, c] for r, c in cells]), mode="byte") if cells else []
        font = readable_font(self.font())
        for item, (r, c), rgb in zip(self._value_items, cells, colors):
            item.setText(VALUE_FORMAT.format(m.weights[r, c]), color=text_on(_hex(rgb)))
            item.setFont(font)
            item.setPos(c + 0.5, r + 0.5)
            item.setVisible(self._values_fit)
        for item in self._value_items[len(cells):]:
            item.hide()
        self._values_shown = len(cells)

    # ---------------------------------------------------------------- hover
    def tip_at(self, pos: QPointF) -> str:
        """What hovering the plot at `pos` (viewport pixels) shows: the cell's query and key
        tokens and its weight, or that it is masked; "" off the matrix. Every weight can be
        read this way, also where the cells are too small to print it."""
        m = self._matrix
        if m is None:
            return ""
        view = self._plot.getViewBox().mapSceneToView(self._plot_widget.mapToScene(pos.toPoint()))
        row, col = int(np.floor(view.y())), int(np.floor(view.x()))
        if not (0 <= row < m.weights.shape[0] and 0 <= col < m.weights.shape[1]):
            return ""
        query = _token_label(self.piece, m.row_ids[row], m.row_positions[row])
        key = _token_label(self.piece, m.key_ids[col], m.key_positions[col])
        if not m.mask[row, col]:
            window = self._window()
            if window and m.key_positions[col] <= m.row_positions[row] - window:
                return self.tr("attention.tip_window", query=query, cell_key=key, w=window)
            return self.tr("attention.tip_masked", query=query, cell_key=key)
        return self.tr("attention.tip", query=query, cell_key=key, weight=float(m.weights[row, col]))

    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Type.ToolTip and watched is self._plot_widget.viewport():
            return answer_tooltip(event, self.tip_at(QPointF(event.pos())), watched)
        return super().eventFilter(watched, event)

    # ---------------------------------------------------------------- look and language
    def _apply_theme(self) -> None:
        theme = self.theme
        self._plot_widget.setBackground(theme.background)
        for axis in (self._plot.getAxis("left"), self._plot.getAxis("bottom"), self._colorbar.axis):
            axis.setPen(theme.text)
            axis.setTextPen(theme.text)
        self._mask_item.set_colors(theme.masked, theme.text)
        self._boundary.setPen(pg.mkPen(theme.accent, width=3))

    def _retranslate(self) -> None:
        size = f"{readable_font(self.font()).pointSizeF():g}pt"
        self._plot.setLabel("left", self.tr("attention.query"), **{"font-size": size})
        self._plot.setLabel("bottom", self.tr("attention.key"), **{"font-size": size})
        self.full_matrix_toggle.setText(self.tr("attention.full"))
        window = self._window()
        self._legend.setText(self.tr("attention.legend_window", w=window) if window else self.tr("attention.legend"))

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.FontChange, QEvent.ApplicationFontChange):
            self._apply_font()
            self.refresh()                 # axis titles, cell numbers and tick spacing follow the size

    def _apply_font(self) -> None:
        font = readable_font(self.font())
        for child in (self.layer_picker, self.head_picker, self.full_matrix_toggle, self._kv_note,
                      self._caption, self._legend, self._message):
            child.setFont(font)
        for axis in (self._plot.getAxis("left"), self._plot.getAxis("bottom"), self._colorbar.axis):
            axis.setTickFont(font)
        # the key axis as tall as a line of its tick labels in this type (pyqtgraph learns it only
        # from a first paint: a slide, drawn once, had the labels over the axis title)
        self._plot.getAxis("bottom").setStyle(autoExpandTextSpace=False, tickTextHeight=QFontMetrics(font).height())
        # room above the plot for the upper half of the colour bar's top label ("1.0")
        half_line = QFontMetrics(font).height() // 2
        self._plot.layout.setContentsMargins(0, half_line, 0, 0)


def _same_matrix(a: _Matrix | None, b: _Matrix | None) -> bool:
    if a is None or b is None:
        return a is b
    return (a.prefill_rows == b.prefill_rows
            and all(np.array_equal(getattr(a, f), getattr(b, f))
                    for f in ("weights", "mask", "row_ids", "row_positions", "key_ids", "key_positions")))


def _fill(combo: QComboBox, items: list[str]) -> None:
    """Replace the items of `combo` when they changed, keeping the index and emitting nothing."""
    if [combo.itemText(i) for i in range(combo.count())] == items:
        return
    index = combo.currentIndex()
    combo.blockSignals(True)
    combo.clear()
    combo.addItems(items)
    combo.setCurrentIndex(min(max(index, 0), len(items) - 1))
    combo.blockSignals(False)


def _tick_labels(piece, ids, positions) -> list[tuple[float, str]]:
    """Ticks at cell centres: (i + 0.5, "学习·2")."""
    return [(i + 0.5, _token_label(piece, t, p)) for i, (t, p) in enumerate(zip(ids, positions))]


def _token_label(piece, token_id, position) -> str:
    """A row's or column's token and position, "学习·2"."""
    return f"{piece(token_id)}·{int(position)}"


def _key_ticks(cols: list[tuple[float, str]], fm: QFontMetrics, width: float) -> list[list]:
    """The key axis's ticks, [labelled, unlabelled]: every key named, a long token cut short
    with "…" before its "·position" to fit its column ("<b…·0"); where the columns are too
    narrow even for that, every n-th key named and the others marked by a short tick."""
    if not cols:
        return [[], []]
    room = width / len(cols) - fm.height() / 2           # a column, less a gap between labels
    fitted = [(x, _fitted_label(label, fm, room)) for x, label in cols]
    if all(label for _, label in fitted):
        return [fitted, []]
    named = _every_nth(cols, width / (max(fm.horizontalAdvance(t) for _, t in cols) + fm.height()))
    return [named, [(x, "") for x, label in cols if (x, label) not in named]]


def _fitted_label(label: str, fm: QFontMetrics, room: float) -> str:
    """`label` ("学习·2") within `room` pixels: whole, or its token elided and its position
    kept ("学…·2"); "" when not even that fits."""
    if fm.horizontalAdvance(label) <= room:
        return label
    piece, dot, position = label.rpartition("·")
    tail = dot + position
    head = fm.elidedText(piece, Qt.TextElideMode.ElideRight, int(room - fm.horizontalAdvance(tail)))
    return head + tail if head and head != "…" else ""


def _every_nth(ticks: list, room: float) -> list:
    """Every n-th tick so that at most `room` labels (and never more than MAX_TICKS) are drawn."""
    fit = max(1, min(MAX_TICKS, int(room)))
    return ticks[::max(1, -(-len(ticks) // fit))]



def _hex(rgb) -> str:
    return "#{:02x}{:02x}{:02x}".format(*(int(v) for v in rgb[:3]))
