"""KV cache grid: one column per visible position, a K row and a V row per layer.

Every cell shows the state of its position by colour AND a text label: processed (its
K/V are in the cache), selected (chosen, not yet processed: an empty cell with a dashed
outline, because no K/V exist for it yet) or pending (known input, not yet processed).
The columns the current forward writes are outlined. Hovering a processed cell shows its
vector, read from the trace of the step that processed the position.

The grid paints only the cells in view, so a few hundred positions x 30 layers stay
responsive: no widget or graphics item per cell, tooltips are built on hover.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEvent, QRect, QSize, Qt
from PySide6.QtGui import QBrush, QColor, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import QAbstractScrollArea, QLabel, QVBoxLayout

from ...core.elide import elided_indexes
from ...core.models.kv_memory import kv_memory
from ...core.decode.speculative import VerifyStep
from ...i18n import add_messages
from ..fonts import readable_font
from ...session import Session
from .kv_cells import CODE, STATES, VALUES_PER_LINE, GridData, mark_at, marks_of, paint_cells, paint_marked, \
    same_grid, source_of_positions, value_lines, vector, vector_size, written_columns
from .kv_legend import KVLegend
from .panel import Panel, answer_tooltip
from ...units import byte_size

VALUES_IN_CELLS = 4            # draw the vector inside the cells when it has at most this many numbers
FULL_LABEL_COLUMNS = 40        # up to this many columns the cells are wide enough for full labels
TOOLTIP_PER_LINE = 8           # numbers per tooltip line
SLIDE_LEAST_ROWS = 5           # a slide's layout makes room for L0 K/V, "…", the last layer's K/V
SLIDE_FEWEST_ROWS = 3          # and before the grid is drawn smaller, it keeps "…" and the last layer's K/V

add_messages({
    "kv.state.processed": {"en": "processed", "zh": "已处理"},
    "kv.state.selected": {"en": "selected", "zh": "已选中"},
    "kv.state.pending": {"en": "pending", "zh": "待处理"},
    "kv.short.processed": {"en": "proc", "zh": "存"},
    "kv.short.selected": {"en": "sel", "zh": "选"},
    "kv.short.pending": {"en": "pend", "zh": "待"},
    "kv.legend.processed": {"en": "its K/V are in the cache", "zh": "它的K/V已在缓存中"},
    "kv.legend.selected": {"en": "chosen, not yet processed: no K/V yet (empty cell)",
                           "zh": "已选出、尚未处理：还没有K/V（空格子）"},
    "kv.legend.pending": {"en": "known input, not yet processed", "zh": "已知输入，尚未处理"},
    "kv.legend.named": {"en": "{name}: {meaning}", "zh": "{name}：{meaning}"},
    "kv.legend.written": {"en": "thick outline: K/V written by this forward",
                          "zh": "粗框：本次前向刚写入的K/V"},
    "kv.legend.written_short": {"en": "written now", "zh": "本次写入"},
    "kv.counts": {"en": "visible sequence: {visible} · in cache: {cache}",
                  "zh": "可见序列：{visible} · 已缓存：{cache}"},
    "kv.counts_bytes": {"en": "visible sequence: {visible} · in cache: {cache} ({size})",
                        "zh": "可见序列：{visible} · 已缓存：{cache}（{size}）"},
    "kv.bytes.tip": {"en": "Bytes per cached position = 2 (K and V) × {layers} (layers) × {heads} (K/V heads) × "
                           "{dim} (head size) × {item} ({dtype}) = {per:,}.\n{cache} positions: {total:,} bytes. "
                           "Every token fed in adds {per:,} bytes.",
                     "zh": "每个已缓存位置的字节数 = 2（K和V）× {layers}（层）× {heads}（K/V头）× {dim}（头的维度）× "
                           "{item}（{dtype}）= {per:,}。\n{cache}个位置：{total:,}字节。每送入一个Token，增加{per:,}字节。"},
    "kv.written": {"en": "this forward writes positions {first}–{last}",
                   "zh": "本次前向写入位置{first}–{last}"},
    "kv.written_one": {"en": "this forward writes position {first}",
                       "zh": "本次前向写入位置{first}"},
    "kv.rolled_back": {"en": "rejected draft: {first}–{last} rolled back", "zh": "草稿被拒：{first}–{last}已回退"},
    "kv.no_layers": {"en": "this model has no layers: it stores no K/V",
                     "zh": "该模型没有层：不存储K/V"},
    "kv.corner": {"en": "token\nposition", "zh": "Token\n位置"},
    "kv.row": {"en": "L{i} {kv}", "zh": "L{i} {kv}"},
    "kv.row_local": {"en": "L{i} {kv} · {w}", "zh": "L{i} {kv} · {w}"},
    "kv.row_global": {"en": "L{i} {kv} · all", "zh": "L{i} {kv} · 全部"},
    "kv.windows": {"en": "{local} local layers (· {w}) read only the latest {w} positions, {glob} global ones "
                         "(· all) read every position; hatched: no longer read",
                   "zh": "{local}个局部层（· {w}）只读最近{w}个位置，{glob}个全局层（· 全部）读所有位置；"
                         "斜线：已不再被读取"},
    "kv.tip.unread": {"en": "layer {i} reads only the latest {w} positions: position {pos} is no longer read "
                            "by it (its K/V stay in the cache)",
                      "zh": "第{i}层只读最近{w}个位置：它已不再读取位置{pos}（其K/V仍留在缓存中）"},
    "kv.tip.vector": {"en": "{row} of {piece} at position {pos}",
                      "zh": "{piece}（位置{pos}）的{row}"},
    "kv.tip.head": {"en": "K/V head {g}", "zh": "K/V头{g}"},
    "kv.tip.split": {"en": "this token holds only some of the bytes of {chars}; its neighbours hold the rest",
                     "zh": "这个Token只包含“{chars}”的一部分字节，其余字节在相邻的Token里"},
    "kv.tip.processed": {"en": "{piece} at position {pos} is processed: its K/V are in the cache",
                         "zh": "位置{pos}的{piece}已处理：它的K/V在缓存里"},
    "kv.tip.selected": {"en": "{piece} at position {pos} is selected: it has no K/V until the next "
                              "Decode step feeds it in",
                        "zh": "位置{pos}的{piece}已选中：下一次Decode把它送入模型后才有K/V"},
    "kv.mark.reused": {"en": "reused", "zh": "复用"},
    "kv.mark.invalidated": {"en": "invalidated", "zh": "失效"},
    "kv.mark_short.reused": {"en": "reu", "zh": "复用"},
    "kv.mark_short.invalidated": {"en": "inv", "zh": "失效"},
    "kv.legend.reused": {"en": "K/V taken from the prefix cache: an earlier request computed them",
                         "zh": "K/V取自前缀缓存：是之前的请求算出来的"},
    "kv.legend.invalidated": {"en": "the cache held this position, but this token or an earlier one differs: "
                                    "its cached K/V no longer fit and were computed again",
                              "zh": "缓存里有这个位置，但这个Token或它前面的某个Token不同：缓存的K/V不再适用，已重新计算"},
    "kv.prefix": {"en": "prefix cache: {cached} positions ({size}) · reused {reused}, computed {computed}",
                  "zh": "前缀缓存：{cached}个位置（{size}）· 复用{reused}个，计算{computed}个"},
    "kv.prefix_changed": {"en": "prefix cache: {cached} positions ({size}) · reused {reused}, computed {computed} · "
                                "token changed at position {at}: {invalidated} cached positions invalidated",
                          "zh": "前缀缓存：{cached}个位置（{size}）· 复用{reused}个，计算{computed}个 · "
                                "位置{at}的Token变了：{invalidated}个已缓存的位置失效"},
    "kv.kinds": {"en": "K/V per position: {kinds}; at {n} positions: {total:,} B",
                 "zh": "每个位置的K/V：{kinds}；{n}个位置：{total:,} B"},
    "kv.kinds.tip": {"en": "K/V bytes per layer of each kind: {factors} (K and V × K/V heads × head size × bytes "
                           "per number). At {n} positions = {sums} = {total:,} bytes: a local layer keeps at most "
                           "the latest positions its window reads, a global layer keeps them all.",
                     "zh": "每种层一层的K/V字节：{factors}（K和V × K/V头数 × 头的维度 × 每个数的字节）。{n}个位置 = {sums} = "
                           "{total:,}字节：局部层最多保留它的窗口读得到的最近位置，全局层全部保留。"},
    "kv.kind.local": {"en": "local {layers} × {per:,} B (≤ {w} kept)",
                      "zh": "局部{layers}层 × {per:,} B（最多留{w}个）"},
    "kv.kind.global": {"en": "global {layers} × {per:,} B", "zh": "全局{layers}层 × {per:,} B"},
    "kv.kind.factors": {"en": "{per:,} = 2 × {heads} × {dim} × {item}", "zh": "{per:,} = 2 × {heads} × {dim} × {item}"},
    "kv.kind.sum": {"en": "{layers} × {kept} × {per:,}", "zh": "{layers} × {kept} × {per:,}"},
    "kv.kinds_sep": {"en": ", ", "zh": "，"},
    "kv.tip.pending": {"en": "{piece} at position {pos} is pending: no forward has processed it yet",
                       "zh": "位置{pos}的{piece}待处理：还没有前向计算处理过它"},
})


class _GridView(QAbstractScrollArea):
    """Frozen header row and label column; cells painted on demand."""

    def __init__(self, panel: KVGridPanel):
        super().__init__(panel)
        self._panel = panel
        self.data: GridData | None = None
        self._minimum_key = None          # what the minimum height is made of (`minimumSizeHint`)
        self._measure()

    # ---------------------------------------------------------------- geometry
    def set_data(self, data: GridData) -> None:
        self.data = data
        self._measure()
        self.viewport().update()

    def _measure(self) -> None:
        fm = QFontMetrics(self.font())
        line, pad = fm.height(), max(2, fm.height() // 4)
        data = self.data
        rows = data.row_labels if data else ("L00 K",)
        corner = tuple(self._panel.tr("kv.corner").split("\n"))
        self.line, self.pad = line, pad
        self.label_w = max(fm.horizontalAdvance(t) for t in rows + corner) + 2 * pad
        self.cell_w, self.cell_h = self._cell_size(data.values if data else {})
        self.header_h = 2 * line + pad
        self._update_scrollbars()
        minimum_key = (self.header_h, self.cell_h, min(data.n_rows, 2) if data else 0)
        if minimum_key != self._minimum_key:      # not on every frame: each would relay out the window
            self._minimum_key = minimum_key
            self.updateGeometry()

    def _cell_size(self, values: dict) -> tuple[int, int]:
        """(width, height) of a cell holding the state labels and `values`' lines of numbers."""
        fm, data = QFontMetrics(self.font()), self.data
        labels = data.labels if data else ("",)
        value_lines = [line for lines in values.values() for line in lines]
        value_rows = max((len(lines) for lines in values.values()), default=0)
        return (max(fm.horizontalAdvance(t) for t in (*labels, *value_lines, "0000")) + 4 * self.pad,
                self.line * (1 + value_rows) + self.pad)

    def _update_scrollbars(self) -> None:
        rows, cols = (self.data.n_rows, self.data.n_cols) if self.data else (0, 0)
        view = self.viewport().size()
        for bar, content, page in ((self.horizontalScrollBar(), self.label_w + cols * self.cell_w, view.width()),
                                   (self.verticalScrollBar(), self.header_h + rows * self.cell_h, view.height())):
            bar.setRange(0, max(0, content - page))
            bar.setPageStep(page)
            bar.setSingleStep(self.cell_w if bar is self.horizontalScrollBar() else self.cell_h)

    def minimumSizeHint(self) -> QSize:
        """Room for the header and one layer's K and V rows (and a scroll bar under them):
        a KV cache panel that shows none of the cache is no use; more rows scroll."""
        rows = min(self.data.n_rows, 2) if self.data else 0
        height = (self.header_h + rows * self.cell_h + 2 * self.frameWidth() + 4
                  + self.horizontalScrollBar().sizeHint().height())
        return QSize(super().minimumSizeHint().width(), height)

    def sizeHint(self) -> QSize:
        rows, cols = (self.data.n_rows, self.data.n_cols) if self.data else (0, 0)
        frame = 2 * self.frameWidth() + 4
        return QSize(min(self.label_w + cols * self.cell_w, 1200) + frame,
                     min(self.header_h + rows * self.cell_h, 700) + frame)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._update_scrollbars()
        self.show_newest()

    def show_newest(self) -> None:
        """Scroll sideways, if needed, until the last column (the newest position: selected,
        or just written) is wholly in view."""
        if self.data is None or not self.data.n_cols:
            return
        bar, left = self.horizontalScrollBar(), (self.data.n_cols - 1) * self.cell_w  # in scrolled pixels
        room = self.viewport().width() - self.label_w
        if left < bar.value():
            bar.setValue(left)
        elif left + self.cell_w > bar.value() + room:     # a whole column at the left edge too
            bar.setValue(-(-(left + self.cell_w - room) // self.cell_w) * self.cell_w)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.FontChange:
            self._measure()

    def scrollContentsBy(self, dx, dy) -> None:
        self.viewport().update()   # headers are frozen: repaint rather than blit

    def column_at(self, x: int) -> int | None:
        """The column under viewport x (cells or header), or None."""
        if self.data is None or x < self.label_w:
            return None
        col = (x - self.label_w + self.horizontalScrollBar().value()) // self.cell_w
        return int(col) if col < self.data.n_cols else None

    def cell_at(self, x: int, y: int) -> tuple[int, int] | None:
        """(row, col) of the cell under viewport point (x, y), or None."""
        col = self.column_at(x)
        if col is None or y < self.header_h:
            return None
        row = (y - self.header_h + self.verticalScrollBar().value()) // self.cell_h
        return (int(row), col) if row < self.data.n_rows else None

    def _visible(self, n: int, offset: int, start: int, extent: int, size: int) -> range:
        first = offset // size
        return range(first, min(n, (offset + extent - start) // size + 1))

    # ---------------------------------------------------------------- painting
    def places(self) -> tuple[list[tuple[int, int | None]], list[tuple[int, int | None]]]:
        """(x, column) and (y, row) of what is drawn, in viewport pixels; None stands for
        the "…" left where a slide has no room for every position or layer."""
        data, view = self.data, self.viewport().size()
        if self._panel.on_slide:               # no scrolling: the first and the newest columns, elided between
            fit_cols = max(1, (view.width() - self.label_w) // self.cell_w)
            fit_rows, n_layers = (view.height() - self.header_h) // self.cell_h, data.n_rows // 2
            cols = elided_indexes(data.n_cols, fit_cols, head=fit_cols // 4)
            k = max(1, (fit_rows - 1) // 2)      # layers drawn when some are left out: k K/V pairs and "…"
            layers = (list(range(n_layers)) if 2 * n_layers <= fit_rows
                      else [n_layers - 1] if fit_rows < 3      # room for one layer's K and V only: no "…" row
                      else elided_indexes(n_layers, k + 1, head=k - 1))
            rows = [r for layer in layers for r in ((None,) if layer is None else (2 * layer, 2 * layer + 1))]
            return ([(self.label_w + i * self.cell_w, c) for i, c in enumerate(cols)],
                    [(self.header_h + i * self.cell_h, r) for i, r in enumerate(rows)])
        sx, sy = self.horizontalScrollBar().value(), self.verticalScrollBar().value()
        cols = self._visible(data.n_cols, sx, self.label_w, view.width(), self.cell_w)
        rows = self._visible(data.n_rows, sy, self.header_h, view.height(), self.cell_h)
        return ([(self.label_w - sx + c * self.cell_w, c) for c in cols],
                [(self.header_h - sy + r * self.cell_h, r) for r in rows])

    def paintEvent(self, _event) -> None:
        data, theme = self.data, self._panel.theme
        p = QPainter(self.viewport())
        p.fillRect(self.viewport().rect(), theme.color("background"))
        if data is None:
            return
        cols, rows = self.places()
        cells = [(QRect(x, y, self.cell_w, self.cell_h), int(data.codes[c]), self._panel.cell_lines(r, c), c)
                 for y, r in rows if r is not None for x, c in cols if c is not None]
        paint_cells(p, theme, [cell[:3] for cell in cells if not mark_at(data, cell[3])])
        paint_marked(p, theme, [(rect, mark_at(data, c), lines) for rect, _, lines, c in cells if mark_at(data, c)])
        self._paint_unread(p, cols, rows)
        self._paint_gaps(p, cols, rows)
        right = cols[-1][0] + self.cell_w if cols else self.label_w
        self._paint_layer_rules(p, rows, min(self.viewport().width(), right))
        self._paint_header(p, cols)
        self._paint_row_labels(p, rows)
        self._paint_written(p, cols, min(self.viewport().height(), rows[-1][0] + self.cell_h if rows else 0))

    def _paint_gaps(self, p, cols, rows) -> None:
        """"…" in the column and the row a slide leaves out."""
        p.setPen(self._panel.theme.color("text"))
        bottom = rows[-1][0] + self.cell_h if rows else self.header_h
        right = cols[-1][0] + self.cell_w if cols else self.label_w
        for x, c in cols:
            if c is None:           # (its header says "…" too)
                p.drawText(QRect(x, self.header_h, self.cell_w, bottom - self.header_h), Qt.AlignCenter, "…")
        for y, r in rows:
            if r is None:
                p.drawText(QRect(0, y, right, self.cell_h), Qt.AlignCenter, "…")

    def _paint_unread(self, p, cols, rows) -> None:
        """Hatching over the cells a sliding-window layer no longer reads (they stay cached)."""
        hatch = QColor(self._panel.theme.color("text"))
        hatch.setAlpha(140)                          # the cell's label and numbers stay readable
        p.setPen(Qt.NoPen)
        p.setBrush(QBrush(hatch, Qt.BDiagPattern))
        for y, r in rows:
            if r is None:
                continue
            for x, c in cols:
                if c is not None and c < self.data.unread[r]:
                    p.drawRect(QRect(x, y, self.cell_w, self.cell_h))

    def _paint_layer_rules(self, p, rows, right) -> None:
        """A rule under each layer's V row, so K/V pairs read as one layer."""
        p.setPen(QPen(self._panel.theme.color("text"), 1))
        for y, r in rows:
            if r is not None and r % 2:
                p.drawLine(self.label_w, y + self.cell_h - 1, right, y + self.cell_h - 1)

    def _paint_header(self, p, cols) -> None:
        theme, fm, width = self._panel.theme, QFontMetrics(self.font()), self.viewport().width()
        p.fillRect(QRect(0, 0, width, self.header_h), theme.color("background"))
        p.setPen(theme.color("text"))
        for x, c in cols:
            if c is not None:
                piece = fm.elidedText(self.data.pieces[c], Qt.ElideRight, self.cell_w - 4)
                p.drawText(QRect(x, 0, self.cell_w, self.header_h), Qt.AlignHCenter | Qt.AlignTop, f"{piece}\n{c}")
            else:
                p.drawText(QRect(x, 0, self.cell_w, self.header_h), Qt.AlignCenter, "…")
        p.setPen(QPen(theme.color("grid"), 1))
        p.drawLine(0, self.header_h - 1, width, self.header_h - 1)

    def _paint_row_labels(self, p, rows) -> None:
        theme, pad = self._panel.theme, max(2, QFontMetrics(self.font()).height() // 4)
        p.fillRect(QRect(0, self.header_h, self.label_w, self.viewport().height()), theme.color("background"))
        p.fillRect(QRect(0, 0, self.label_w, self.header_h), theme.color("background"))
        p.setPen(theme.color("text"))
        p.drawText(QRect(pad, 0, self.label_w - pad, self.header_h), Qt.AlignLeft | Qt.AlignTop,
                   self._panel.tr("kv.corner"))
        p.save()
        p.setClipRect(QRect(0, self.header_h, self.label_w, self.viewport().height()))
        for y, r in rows:
            if r is not None:
                p.drawText(QRect(pad, y, self.label_w - pad, self.cell_h), Qt.AlignLeft | Qt.AlignVCenter,
                           self.data.row_labels[r])
        p.restore()

    def _paint_written(self, p, cols, bottom) -> None:
        """Thick outline around the columns the current forward writes (header included)."""
        if self.data.written is None:
            return
        first, last = self.data.written
        xs = [x for x, c in cols if c is not None and first <= c <= last]
        if not xs:
            return
        rect = QRect(min(xs), 1, max(xs) + self.cell_w - min(xs), bottom - 2)
        p.setClipRect(QRect(self.label_w, 0, self.viewport().width(), self.viewport().height()))
        p.setPen(QPen(self._panel.theme.color("accent"), 4))
        p.setBrush(Qt.NoBrush)
        p.drawRect(rect.adjusted(2, 2, -2, -2))

    def content_size(self, values: dict, rows: int | None = None, cols: int | None = None) -> QSize:
        """Every row and column, unscrolled (or at most `rows` and `cols` of them), with
        `values`' numbers in the cells (whether or not those drawn now have them)."""
        n_rows, n_cols = (self.data.n_rows, self.data.n_cols) if self.data else (0, 0)
        rows, cols = min(n_rows, rows or n_rows), min(n_cols, cols or n_cols)
        cell_w, cell_h = self._cell_size(values)
        frame = 2 * self.frameWidth()
        return QSize(self.label_w + cols * cell_w + frame, self.header_h + rows * cell_h + frame)

    # ---------------------------------------------------------------- hover
    def viewportEvent(self, event) -> bool:
        if event.type() == QEvent.ToolTip:
            x, y = event.pos().x(), event.pos().y()
            cell, col = self.cell_at(x, y), self.column_at(x)
            text = (self._panel.tooltip_text(*cell) if cell else
                    self._panel.token_tooltip(col) if col is not None and y < self.header_h else "")
            return answer_tooltip(event, text, self.viewport())
        return super().viewportEvent(event)




class KVGridPanel(Panel):
    panel_id = "kv"
    title_key = "kv.title"
    SLIDE_GROWTH = 2.0            # a small cache fills a slide with larger cells
    SLIDE_ELIDES = True           # a long prompt or many layers: the first and the newest, around "…"

    def __init__(self, session: Session, parent=None):
        super().__init__(session, parent)
        self._status = QLabel(self)
        self._status.setWordWrap(True)
        self._legend = KVLegend(self)
        self._view = _GridView(self)
        self._painted_font, self._painted_theme = None, None   # what the grid was last drawn with
        self._values_on_slide = True      # on a slide: numbers in the cells (while they have room)
        layout = QVBoxLayout(self)
        layout.addWidget(self._status)
        layout.addWidget(self._view, 1)
        layout.addWidget(self._legend)
        self._apply_font()
        self.refresh()

    def has_content(self) -> bool:
        """A cache to show: a model with layers (a logits or table model stores no K/V)."""
        return self.model_has_layers()

    # ---------------------------------------------------------------- drawing
    def refresh(self) -> None:
        self._show(self._grid_data())
        # on a slide, whether the numbers fit is decided with this frame's status line and
        # legend (which names the kinds of cell the grid has)
        if self.on_slide and self._fit_values_to_slide():
            self._show(self._grid_data())

    def _show(self, data: GridData) -> None:
        old = self._view.data
        restyled = self._view.font() != self._painted_font or self.theme is not self._painted_theme
        if old is None or restyled or not same_grid(data, old):
            self._view.set_data(data)
            self._view.show_newest()
            self._fit_legend()
            self._painted_font, self._painted_theme = self._view.font(), self.theme
            if old is None or restyled or self._legend.named(data) != self._legend.named(old):
                # else the legend is as drawn
                self._legend.update()
                self._legend.updateGeometry()
        self._status.setText(self._status_text())

    def _grid_data(self) -> GridData:
        session = self.session
        frame, run, vocab = session.frame, session.run, session.model.vocab
        layers = run.steps[0].trace.layers
        codes = np.array([CODE[s] for s in frame.states], np.int8)        # [c]
        full = len(codes) <= FULL_LABEL_COLUMNS
        source = source_of_positions(run.steps, len(codes))
        values = self._values(codes, source) if not self.on_slide or self._values_on_slide else {}
        return GridData(
            codes=codes,
            pieces=tuple(vocab.display_piece(t) for t in frame.visible_ids),
            split=tuple(vocab.split_characters(frame.visible_ids)),
            row_labels=self._row_labels(layers),
            unread=tuple(max(0, frame.cache_len - lt.window) if lt.window else 0 for lt in layers for _ in "KV"),
            labels=tuple(self.tr(f"kv.{'state' if full else 'short'}.{s}") for s in STATES),
            source=source,
            written=written_columns(session),
            values=values,
            marks=marks_of(run, codes))

    def _values(self, codes, source) -> dict:
        """(row, column) -> a processed cell's lines of numbers, for a tiny model (else none)."""
        run = self.session.run
        if not self._value_rows():
            return {}
        return {(r, c): value_lines(vector(run.steps, source, r, c, run.prefix))
                for r in range(2 * len(run.steps[0].trace.layers)) for c in np.flatnonzero(codes == 0)}

    def mark_label(self, mark: str) -> str:
        """The label a marked cell shows, full or short as the state labels are."""
        full = self._view.data is None or len(self._view.data.codes) <= FULL_LABEL_COLUMNS
        return self.tr(f"kv.{'mark' if full else 'mark_short'}.{mark}")

    def _value_rows(self) -> int:
        """Lines of numbers in a processed cell: its vector, for a tiny model (else none)."""
        session = self.session
        size = vector_size(session.run.steps[0].trace.layers)
        if len(session.frame.states) > FULL_LABEL_COLUMNS or not 0 < size <= VALUES_IN_CELLS:
            return 0
        return -(-size // VALUES_PER_LINE)

    def _row_labels(self, layers) -> tuple[str, ...]:
        """"L0 K", or with sliding-window layers "L0 K · 512" (reads the latest 512) and "L5 K · all"."""
        if not any(lt.window for lt in layers):
            return tuple(self.tr("kv.row", i=i, kv=kv) for i in range(len(layers)) for kv in "KV")
        return tuple(self.tr("kv.row_local", i=i, kv=kv, w=lt.window) if lt.window else
                     self.tr("kv.row_global", i=i, kv=kv) for i, lt in enumerate(layers) for kv in "KV")

    def _status_text(self) -> str:
        frame, layers = self.session.frame, self.session.run.steps[0].trace.layers
        per = self.session.run.steps[0].trace.kv_bytes_per_position
        if per:
            parts = [self.tr("kv.counts_bytes", visible=frame.visible_count, cache=frame.cache_len,
                             size=byte_size(per * frame.cache_len))]
            k = layers[0].k                                                    # [g, n, e]
            self._status.setToolTip(self.tr("kv.bytes.tip", layers=len(layers), heads=k.shape[0], dim=k.shape[2],
                                            item=k.itemsize, dtype=k.dtype.name, per=per, cache=frame.cache_len,
                                            total=per * frame.cache_len))
        else:
            parts = [self.tr("kv.counts", visible=frame.visible_count, cache=frame.cache_len)]
            self._status.setToolTip("")
        kinds, kinds_tip = self._kind_parts(frame.cache_len)
        parts += self._prefix_parts() + kinds
        if kinds_tip:
            self._status.setToolTip("\n".join(filter(None, (self._status.toolTip(), kinds_tip))))
        written = self._view.data.written
        if written:
            key = "kv.written_one" if written[0] == written[1] else "kv.written"
            parts.append(self.tr(key, first=written[0], last=written[1]))
        step = self.session.step
        if frame.shows_forward and isinstance(step, VerifyStep) and step.cache_len_written > step.cache_len_after:
            parts.append(self.tr("kv.rolled_back", first=step.cache_len_after, last=step.cache_len_written - 1))
        if not self._view.data.n_rows:
            parts.append(self.tr("kv.no_layers"))
        windows = [lt.window for lt in layers]
        if any(windows):
            parts.append(self.tr("kv.windows", local=sum(1 for w in windows if w), w=max(windows),
                                 glob=windows.count(0)))
        return "   ".join(parts)

    def _prefix_parts(self) -> list[str]:
        """What the run's Prefill took from a prefix cache, and what that cache holds."""
        run = self.session.run
        hit = run.prefix
        if hit is None:
            return []
        values = dict(cached=len(hit.cached_ids), size=byte_size(hit.stored_bytes), reused=hit.reused,
                      computed=run.steps[0].computed_positions)
        if hit.match.changed_at is None:
            return [self.tr("kv.prefix", **values)]
        return [self.tr("kv.prefix_changed", at=hit.match.changed_at, invalidated=len(hit.match.invalidated),
                        **values)]

    def _kind_parts(self, n: int) -> tuple[list[str], str]:
        """K/V bytes per layer kind, for a model whose layers are not all global (Gemma 3), and
        the sum they make (for the status line's tooltip)."""
        model = self.session.model
        config = getattr(model, "config", None)
        if config is None or not any(config.window(i) for i in range(config.n_layers)):
            return [], ""
        memory = kv_memory(config, np.dtype(model.dtype).itemsize)
        kinds = [self.tr(f"kv.kind.{'local' if k.window else 'global'}", layers=k.layers, per=k.bytes_per_layer,
                         w=k.window) for k in memory.kinds]
        factors = self.tr("kv.kind.factors", per=memory.kinds[0].bytes_per_layer, heads=memory.kinds[0].kv_heads,
                          dim=memory.kinds[0].head_dim, item=memory.kinds[0].itemsize)
        sums = " + ".join(self.tr("kv.kind.sum", layers=k.layers, kept=k.kept(n), per=k.bytes_per_layer)
                          for k in memory.kinds)
        return ([self.tr("kv.kinds", kinds=self.tr("kv.kinds_sep").join(kinds), n=n, total=memory.bytes_at(n))],
                self.tr("kv.kinds.tip", factors=factors, n=n, sums=sums, total=memory.bytes_at(n)))

    def cell_lines(self, row: int, col: int) -> list[str]:
        """Text drawn in a cell: its state label (or its prefix-cache mark), then (small models) its vector."""
        data = self._view.data
        mark = mark_at(data, col)
        label = self.mark_label(mark) if mark else data.labels[int(data.codes[col])]
        return [label, *data.values.get((row, col), ())]

    def token_tooltip(self, col: int) -> str:
        """Built on hovering a column's header: the token, its position and state, and the
        character it holds only some bytes of, if any."""
        data = self._view.data
        state = STATES[int(data.codes[col])]
        return "\n".join([self.tr(f"kv.tip.{state}", piece=data.pieces[col], pos=col), *self._split_line(col)])

    def _split_line(self, col: int) -> list[str]:
        chars = self._view.data.split[col]
        return [self.tr("kv.tip.split", chars=chars)] if chars else []

    def tooltip_text(self, row: int, col: int) -> str:
        """Built on hover: the cell's vector, every K/V head (processed cells), or why it has none."""
        data = self._view.data
        piece, state = data.pieces[col], STATES[int(data.codes[col])]
        if state != "processed":
            return self.token_tooltip(col)
        lines = [self.tr("kv.tip.vector", row=data.row_labels[row], piece=piece, pos=col), *self._split_line(col)]
        if col < data.unread[row]:
            window = self.session.run.steps[0].trace.layers[row // 2].window
            lines.append(self.tr("kv.tip.unread", i=row // 2, w=window, pos=col))
        run = self.session.run
        for g, head in enumerate(vector(run.steps, data.source, row, col, run.prefix)):
            values = [f"{x:.3f}" for x in head]
            chunks = [", ".join(values[i:i + TOOLTIP_PER_LINE]) for i in range(0, len(values), TOOLTIP_PER_LINE)]
            lines.append(f"{self.tr('kv.tip.head', g=g)}: [" + ",\n  ".join(chunks) + "]")
        return "\n".join(lines)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self.on_slide and self._fit_values_to_slide():
            self.refresh()
        self._fit_legend()

    def _fit_legend(self) -> None:
        """Meanings written out, or the swatches alone when the meanings would leave the grid
        no room for its header and one layer's K and V rows: decided from the panel's size
        and the grid's, which the legend does not change."""
        view, legend, layout = self._view, self._legend, self.layout()
        margins = layout.contentsMargins()
        chrome = margins.top() + margins.bottom() + 2 * layout.spacing() + 2 * view.frameWidth()
        if view.horizontalScrollBar().isVisible():
            chrome += view.horizontalScrollBar().height()
        room = self.height() - self._status.height() - legend.full_height(legend.width() or self.width()) - chrome
        rows = min(view.data.n_rows, 2) if view.data else 0
        compact = room < view.header_h + rows * view.cell_h and not self.on_slide
        if compact != legend.compact:
            self._legend.compact = compact
            self._legend.updateGeometry()
            self._legend.update()

    # ---------------------------------------------------------------- slides
    def show_on_slide(self) -> None:
        """No scroll bars: what does not fit is left out around a "…" (`_GridView.places`)."""
        self._view.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self._view.setVerticalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        super().show_on_slide()

    def slide_content_size(self) -> QSize:
        """Every cell with its numbers (for a tiny model), whether or not the size it has
        now leaves room for them: a slide's layout never depends on the frame before."""
        data = self._view.data
        return self._slide_size(self._view.content_size(self._values(data.codes, data.source)))

    def slide_minimum_size(self) -> QSize:
        """The least the slide draws at its type before it draws the panel smaller: three
        columns (the first, "…", the newest), a "…" row and the last layer's K and V rows,
        no numbers in the cells; the status line and the legend wrapped to the panel's width."""
        margins = self.layout().contentsMargins()
        return self._least_size(self.width() - margins.left() - margins.right(), SLIDE_FEWEST_ROWS)

    def slide_least_height(self, width: float) -> int:
        """The least height the layout tries to give the panel in a place `width` wide: the
        first and the last layer's K and V rows around a "…" row (its status line and legend
        wrap to fewer lines as it widens)."""
        margins = self.layout().contentsMargins()
        return self._least_size(int(width) - margins.left() - margins.right(), SLIDE_LEAST_ROWS).height()

    def _least_size(self, width: int, rows: int) -> QSize:
        """`rows` rows of three columns, the status line and the legend wrapped to `width`."""
        return self._slide_size(self._view.content_size({}, rows=rows, cols=3), width)

    def _fit_values_to_slide(self) -> bool:
        """On a slide, the numbers stay in the cells only while every row has room for them;
        True when that changed."""
        view, layout = self._view, self.layout()
        margins = layout.contentsMargins()
        width = self.width() - margins.left() - margins.right()
        room = (self.height() - margins.top() - margins.bottom() - 2 * layout.spacing() - 2 * view.frameWidth()
                - self._status.heightForWidth(width) - self._legend.full_height(width))
        rows = 2 * len(self.session.run.steps[0].trace.layers)
        fits = view.header_h + rows * (view.line * (1 + self._value_rows()) + view.pad) <= room
        changed, self._values_on_slide = fits != self._values_on_slide, fits
        return changed

    def _slide_size(self, grid: QSize, width: int = 0) -> QSize:
        """The panel around `grid`: as wide as the grid and `width`, the room the status line
        and the legend wrap to (0: the legend's widest entry on one line)."""
        margins, spacing = self.layout().contentsMargins(), self.layout().spacing()
        width = max(grid.width(), width or self._legend.entry_width())
        legend = self._legend.full_height(width)
        return QSize(width + margins.left() + margins.right(),
                     margins.top() + margins.bottom() + 2 * spacing + self._status.heightForWidth(width)
                     + grid.height() + legend)

    # ---------------------------------------------------------------- fonts
    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.FontChange, QEvent.ApplicationFontChange):
            self._apply_font()
            if self.on_slide and self._fit_values_to_slide():
                self.refresh()                  # numbers in the cells, or not, at the new type

    def _apply_font(self) -> None:
        font = readable_font(self.font())
        for child in (self._status, self._legend, self._view):
            child.setFont(font)
        self._fit_legend()

    # ---------------------------------------------------------------- for the legend
    def grid_view(self) -> QAbstractScrollArea:
        return self._view


