"""Timeline panel: Prefill, Decode 1 … and the stop as a clickable strip, the course's step
table, the token counts and usage, and the Run's speed (time to first token, per token)."""

from __future__ import annotations

from itertools import accumulate, combinations
from typing import NamedTuple

from PySide6.QtCore import QEvent, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPen, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (QAbstractItemView, QHBoxLayout, QHeaderView, QLabel, QSizePolicy, QStyle, QStyleOptionHeader,
                               QStyleOptionViewItem, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from ...core.elide import ENDS, elided, elided_indexes
from ...core.decode.speculative import VerifyStep
from ...i18n import MESSAGES, add_messages, tr
from ...session import Session
from ...session.narration import finish_short, finish_text, frame_usage, milliseconds, shown_text
from ...session.text_so_far import text_so_far
from .panel import Panel
from .text_line import TextLine
from ..theme import text_on

add_messages({
    "timeline.col.time": {"en": "Time", "zh": "时刻"},
    "timeline.col.input": {"en": "Fed into the model", "zh": "本次输入网络的Token"},
    "timeline.col.positions": {"en": "Positions computed", "zh": "本次计算位置"},
    "timeline.col.kv": MESSAGES["col.kv_after"],
    "timeline.col.chooser": {"en": "Chooses the next token", "zh": "用哪个输出选下一个Token"},
    "timeline.col.selected": {"en": "Selected", "zh": "选出"},
    "timeline.col.ms": {"en": "Forward ms", "zh": "前向耗时(ms)"},
    "timeline.stop": {"en": "Stop: {reason}", "zh": "停止：{reason}"},
    # a slide's table, condensed: short step labels (explained by the legend above the table),
    # short headings, the chooser's position alone, the finish reason's code
    "timeline.short.prefill": {"en": "P", "zh": "P"},
    "timeline.short.decode": {"en": "D{n}", "zh": "D{n}"},
    "timeline.short.verify": {"en": "V{n}", "zh": "V{n}"},
    "timeline.short.stop": {"en": "Stop", "zh": "停止"},
    "timeline.legend": {"en": "Steps: P = Prefill · D1, D2 … = Decode 1, 2 …",
                        "zh": "步骤：P = Prefill · D1、D2 … = Decode 1、2 …"},
    "timeline.legend_verify": {"en": "Steps: P = Prefill · D1 … = Decode 1 … · V1 … = Verify 1 …",
                               "zh": "步骤：P = Prefill · D1 … = Decode 1 … · V1 … = 验证1 …"},
    "timeline.short.col.time": {"en": "Step", "zh": "步骤"},
    "timeline.short.col.input": {"en": "Input", "zh": "输入"},
    "timeline.short.col.positions": {"en": "Positions", "zh": "位置"},
    "timeline.short.col.kv": {"en": "KV after", "zh": "之后的KV"},
    "timeline.short.col.chooser": {"en": "Logits at", "zh": "logits位置"},
    "timeline.short.col.selected": {"en": "Selected", "zh": "选出"},
    "timeline.short.col.ms": {"en": "ms", "zh": "ms"},
    "timeline.verify.selected": {"en": "✓ {kept} ✗ {rejected} → {piece} ({id})",
                                 "zh": "✓ {kept} ✗ {rejected} → {piece}（{id}）"},
    "timeline.verify.kv": {"en": "{pieces} (rolled back from {written})", "zh": "{pieces}（从{written}回退）"},
    "timeline.counts": {"en": "visible sequence {visible}  ·  in cache {cache}  ·  text shown {chars} characters",
                        "zh": "可见序列 {visible}  ·  已进缓存 {cache}  ·  显示文字 {chars}个字符"},
    "timeline.usage.tip": {"en": "Counted apart as serving APIs report them. Reasoning tokens are selected, "
                                 "processed, cached and paid for like any other; the chat window just does not "
                                 "show them.",
                           "zh": "按推理服务的用量字段分开计数。推理Token和其他Token一样被选出、被处理、进入缓存、"
                                 "需要计费，只是聊天窗口不显示它们。"},
    "timeline.reused": {"en": "reused {reused}, computed {computed}: {positions}",
                        "zh": "复用{reused}个，计算{computed}个：{positions}"},
    "timeline.speed.prefix": {"en": "time to first token {ttft} ms, {reused} positions from the prefix cache",
                              "zh": "首个Token用时{ttft} ms，{reused}个位置取自前缀缓存"},
    "timeline.not_yet": {"en": "…", "zh": "…"},
    "timeline.speed": {"en": "Prefill {prefill} ms ({n} tok) · Decode {decode} ms/token ≈ {rate} tok/s",
                       "zh": "Prefill {prefill} ms（{n}个Token）· Decode 每个Token {decode} ms ≈ 每秒{rate}个Token"},
    "timeline.speed.prefill_only": {"en": "Prefill {prefill} ms ({n} tok) · no Decode step",
                                    "zh": "Prefill {prefill} ms（{n}个Token）· 没有Decode步骤"},
    "timeline.speed.tip": {"en": "Time to first token (the Prefill forward) against time per output token "
                                 "(the mean of the Decode forwards), measured when this run was computed",
                           "zh": "首个Token的时间（Prefill前向）与每个输出Token的时间（Decode前向的平均值），"
                                 "在计算这次运行时测得"},
})


def speed_text(run, lang: str) -> str:
    """"Prefill 183 ms (64 tok) · Decode 27 ms/token ≈ 37 tok/s" from the steps' forward times."""
    prefill, decodes = run.steps[0], run.steps[1:]
    values = dict(prefill=milliseconds(prefill.seconds), n=len(prefill.input_ids))
    if not decodes:
        return tr("timeline.speed.prefill_only", lang, **values) + _prefix_speed(run, lang)
    per_token = sum(s.seconds for s in decodes) / (len(run.output_ids) - 1)   # a verify pass may add several
    rate = "∞" if per_token <= 0 else f"{1 / per_token:,.0f}" if per_token < 0.1 else f"{1 / per_token:.1f}"
    return tr("timeline.speed", lang, decode=milliseconds(per_token), rate=rate, **values) + _prefix_speed(run, lang)


def _prefix_speed(run, lang: str) -> str:
    """" · time to first token 90 ms, 26 positions from the prefix cache" for a run that reused some."""
    if run.prefix is None:
        return ""
    return " · " + tr("timeline.speed.prefix", lang, ttft=milliseconds(run.time_to_first_token),
                      reused=run.prefix.reused)


class StepStrip(QWidget):
    """Chips for Prefill, Decode 1, … and Stop, painted in one widget (hundreds of steps
    stay cheap). Emits the step index (or -1 for the stop chip) when one is clicked. When
    the chips are wider than the strip, they slide left so that the current one is in
    view, and "…" at the left edge says that earlier steps are out of sight."""

    clicked = Signal(int)
    GAP = 8                     # px between chips (a "›" sits in it)

    def __init__(self, parent=None):
        super().__init__(parent)
        self._labels: list[str] = []
        self._current = -2
        self._colors = ("#0072B2", "#E69F00", "#ffffff", "#1a1a1a")
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def sizeHint(self) -> QSize:
        return QSize(self.chips_width(), self.fontMetrics().height() + 14)

    def minimumSizeHint(self) -> QSize:
        return QSize(0, self.sizeHint().height())

    def chips_width(self) -> int:
        """The width of every chip side by side (nothing slid out of view)."""
        fm = self.fontMetrics()
        return 8 + sum(fm.horizontalAdvance(label) + 18 + self.GAP for label in self._labels)

    def least_width(self, shown: int = 4) -> int:
        """Room for the "…" mark and the `shown` widest chips: a strip at least this wide
        keeps the current chip in view and says that the others slid out of sight."""
        fm = self.fontMetrics()
        widest = sorted((fm.horizontalAdvance(label) + 18 + self.GAP for label in self._labels), reverse=True)
        return min(self.chips_width(), 8 + fm.horizontalAdvance("…") + 8 + sum(widest[:shown]))

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self.updateGeometry()             # the chips' height follows the type

    def set_chips(self, labels: list[str], current: int, colors) -> None:
        if (labels, current, colors) != (self._labels, self._current, self._colors):
            self._labels, self._current, self._colors = labels, current, colors
            self.update()

    def chip_rects(self) -> list[QRectF]:
        """Where each chip is drawn, in widget pixels (left of 0: slid out of view)."""
        fm, h = self.fontMetrics(), self.height() - 6
        rects, x = [], 4.0
        for label in self._labels:
            w = fm.horizontalAdvance(label) + 18
            rects.append(QRectF(x, 3, w, h))
            x += w + self.GAP
        if 0 <= self._current < len(rects) and rects[self._current].right() > self.width() - 4:
            shift = rects[self._current].right() - (self.width() - 4)    # the current chip at the right edge
            rects = [r.translated(-shift, 0) for r in rects]
        return rects

    def chip_at(self, x: float) -> int | None:
        rects = self.chip_rects()
        if x < self.hidden_mark_width(rects):        # the "…" mark over slid-out chips
            return None
        return next((i for i, r in enumerate(rects) if r.left() <= x <= r.right()), None)

    def hidden_mark_width(self, rects: list[QRectF]) -> float:
        """The width of the "…" mark at the left edge (0 when no chip slid out of view)."""
        return self.fontMetrics().horizontalAdvance("…") + 8 if rects and rects[0].left() < 0 else 0.0

    def mousePressEvent(self, event):
        i = self.chip_at(event.position().x())
        if i is not None:
            self.clicked.emit(i if i < len(self._labels) - 1 else -1)

    def paintEvent(self, _event):
        done, current, bg, fg = self._colors
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        rects = self.chip_rects()
        mark = self.hidden_mark_width(rects)
        for i, (label, rect) in enumerate(zip(self._labels, rects)):
            if rect.left() < mark:         # slid (partly) under the "…" mark
                continue
            fill = current if i == self._current else bg
            p.setPen(QPen(QColor(done), 2 if i == self._current else 1))
            p.setBrush(QColor(fill))
            p.drawRoundedRect(rect, 6, 6)
            p.setPen(QColor(text_on(fill) if i == self._current else fg))
            p.drawText(rect, Qt.AlignmentFlag.AlignCenter, label)
            if i < len(self._labels) - 1:
                p.setPen(QPen(QColor(fg), 1))
                p.drawText(QRectF(rect.right(), 3, self.GAP, rect.height()), Qt.AlignmentFlag.AlignCenter, "›")
        if mark:                    # earlier chips are out of sight
            p.fillRect(QRectF(0, 0, mark, self.height()), self.palette().window())
            p.setPen(QColor(fg))
            p.drawText(QRectF(0, 0, mark, self.height()), Qt.AlignmentFlag.AlignCenter, "…")
        p.end()


def shared_widths(natural: dict[int, int], least: dict[int, int], room: int) -> dict[int, int]:
    """Column widths that fit `room`: each its natural width, except that the widest are cut
    to one common width, as large as the room allows, but none below its `least`."""
    def widths(cap: int) -> dict[int, int]:
        return {c: max(least[c], min(w, cap)) for c, w in natural.items()}
    low, high = 0, max(natural.values(), default=0)
    while low < high:                            # the largest cap whose widths fit the room
        mid = (low + high + 1) // 2
        low, high = (mid, high) if sum(widths(mid).values()) <= room else (low, mid - 1)
    return widths(low)


class Fitted(NamedTuple):
    """A slide's table at one width: how condensed, its shown columns' widths, its rows as
    drawn (a cell too long for its column in lines, a line break between them) and each row's
    height."""
    level: int
    widths: dict[int, int]
    rows: tuple[tuple[str, ...], ...]
    heights: list[int]


class TimelinePanel(Panel):
    panel_id = "timeline"
    title_key = "timeline.title"
    SLIDE_GROWTH = 1.6            # a short table fills a slide with larger type
    SLIDE_ELIDES = True           # many steps: the first and the latest rows, around a "…" row
    COLUMNS = ("time", "input", "positions", "kv", "chooser", "selected", "ms")
    LEFT_OUT = ("…",) + ("",) * (len(COLUMNS) - 1)      # a slide's row for the rows it leaves out
    # how a slide's table condenses, each level adding to the one before, before a cell wraps:
    # the window's table; short step labels; short headings, the chooser's position alone and the
    # finish reason's code; token lists keeping SHORT_ENDS from each end and the input's pieces without
    # their ids (the Selected column of the row above has them)
    WINDOW, SHORT_LABELS, SHORT_HEADINGS, SHORT_LISTS = range(4)
    SHORT_ENDS = 2

    def __init__(self, session: Session, parent=None):
        super().__init__(session, parent)
        self.strip = StepStrip()
        self.strip.clicked.connect(self._chip_clicked)
        self.counts = QLabel()
        self.counts.setObjectName("counts")
        font = self.counts.font()
        font.setBold(True)
        self.counts.setFont(font)
        self.usage = QLabel()
        self.usage.setObjectName("usage")
        self.speed = QLabel()
        self.speed.setObjectName("speed")
        self.text_line = TextLine()           # the text so far (a slide draws it above its panels)
        self.text_line.setObjectName("text_so_far")
        self.legend = QLabel()                # what a slide's short step labels stand for
        self.legend.setObjectName("legend")
        self.legend.hide()
        self._level = self.WINDOW             # how condensed the table is (a slide's choice)
        self._levels: dict[int, tuple[tuple[str, ...], ...]] = {}    # level -> the frame's rows at it
        self._timings_visible = True
        self._presenting = False          # presentation mode: the lines above the table wrap
        self._rows: tuple[tuple[str, ...], ...] = ()     # the current frame's rows (cells as text), every one
        self._measures: dict = {}         # the current frame's cell sizes and fitted tables, by type
        self.table = QTableWidget(0, len(self.COLUMNS))
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.cellClicked.connect(lambda row, _col: self._row_clicked(row))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.strip)
        counts = QHBoxLayout()                # the counts, and on a slide the legend of its step labels
        counts.addWidget(self.counts)
        counts.addStretch(1)
        counts.addWidget(self.legend)
        layout.addLayout(counts)
        layout.addWidget(self.usage)
        layout.addWidget(self.speed)
        layout.addWidget(self.text_line)
        layout.addWidget(self.table)
        self.refresh()

    def set_presenting(self, presenting: bool) -> None:
        """On the projector the lines above the table wrap: the larger type does not make the
        panel wider (and the panel beside it narrower)."""
        self._presenting = presenting
        for label in (self.counts, self.usage, self.speed):
            label.setWordWrap(presenting)
            label.setMinimumHeight(0)
        self._hold_lines()

    def _hold_lines(self) -> None:
        """Wrapped, each line above the table keeps the height its words need at the panel's
        width (a dock sizes its panel without asking a label's height for its width)."""
        if not self._presenting:
            return
        margins = self.layout().contentsMargins()
        width = max(1, self.width() - margins.left() - margins.right())
        for label in (self.counts, self.usage, self.speed):
            height = label.heightForWidth(width)
            if label.minimumHeight() != height:
                label.setMinimumHeight(height)

    def set_timings_visible(self, visible: bool) -> None:
        """Exports hide the forward times and the speed: they differ from run to run."""
        self._timings_visible = visible
        self.table.setColumnHidden(self.COLUMNS.index("ms"), not visible)
        self.speed.setVisible(visible)

    def show_on_slide(self) -> None:
        """No scroll bars and no times (they differ from run to run)."""
        for bar in (self.table.setHorizontalScrollBarPolicy, self.table.setVerticalScrollBarPolicy):
            bar(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)   # as tall as `_fitted` says
        self.table.setWordWrap(False)               # the lines `_wrapped` made, no others
        self.set_timings_visible(False)
        self.legend.show()
        super().show_on_slide()

    def slide_chrome(self) -> list[QWidget]:
        return [self.text_line]                     # a slide draws the text so far above its panels

    def set_secondary(self, secondary: bool) -> None:
        """On a slide about another panel, the table and its counts only: no step strip (the
        table marks the current row), so the frame's own panel has the room; and no usage line
        there, nor on any slide of a model without reasoning tokens (where it only repeats the
        counts: prompt + output = visible)."""
        self.strip.setVisible(not secondary)
        self.usage.setVisible(not secondary and self.session.model.vocab.reasoning_markers is not None)

    def condensed_level(self) -> int:
        """How condensed the table is drawn (WINDOW … SHORT_LISTS)."""
        return self._level

    def slide_content_size(self, width: float | None = None) -> QSize:
        """Every row, every cell whole, with short step labels, in a panel `width` wide (by default
        its own; the composer gives the body's, which the timeline spans): when the most condensed
        table is still too wide, long cells wrap and their rows grow."""
        fitted = self._fitted(self._room(self.width() if width is None else width))
        return self._slide_size(sum(fitted.widths.values()), sum(fitted.heights))

    def slide_growth_size(self) -> QSize:
        """Every row, every cell whole on one line with short headings and whole lists: the type
        grows only while no cell is cut or wrapped and no token left out."""
        _, heights = self._cell_extents(self._rows_at(self.SHORT_HEADINGS))
        return self._slide_size(sum(self._natural_widths(self.SHORT_HEADINGS).values()), sum(heights))

    def slide_minimum_size(self) -> QSize:
        """Three rows (the first, "…", the latest) wrapped to the panel's width, and the columns
        as wide as their short headings."""
        width = self._slide_size(sum(self._heading_widths(self.SHORT_LISTS).values()), 0).width()
        return QSize(width, self.slide_least_height(self.width()))

    def slide_least_height(self, width: float) -> int:
        """The first row, "…" and the latest, their cells wrapped to a panel `width` wide."""
        fitted = self._fitted(self._room(width))
        return self._slide_size(0, self._kept_height(fitted, elided_indexes(len(fitted.rows), 3, head=1))).height()

    def _room(self, width: float) -> int:
        """The width of the table's cells in a panel `width` wide (a slide's table has no scroll
        bars and no row numbers)."""
        margins = self.layout().contentsMargins()
        return int(width) - margins.left() - margins.right() - 2 * self.table.frameWidth()

    def _slide_size(self, columns: int, rows: int) -> QSize:
        """The panel's size with a table of `columns` and `rows` px (every row, also those a slide
        leaves out, or those it keeps) under the lines above it."""
        table, margins, spacing = self.table, self.layout().contentsMargins(), self.layout().spacing()
        legend = self.legend.sizeHint().width() + spacing if not self.legend.isHidden() else 0
        strip = 0 if self.strip.isHidden() else self.strip.least_width()
        width = max(columns + 2 * table.frameWidth(), strip, self.counts.sizeHint().width() + legend)
        above = [w for w in (self.strip, self.counts, self.usage, self.speed) if not w.isHidden()]
        height = (margins.top() + margins.bottom() + len(above) * spacing
                  + sum(w.sizeHint().height() for w in above)
                  + table.horizontalHeader().sizeHint().height() + rows + 2 * table.frameWidth())
        return QSize(width + margins.left() + margins.right(), height)

    def _natural_widths(self, level: int) -> dict[int, int]:
        """Column -> the width its heading and the cells of every row ask for at a level of
        condensing, each cell on one line (shown columns only), whichever rows the table holds now."""
        widths, _ = self._cell_extents(self._rows_at(level))
        return {c: max(w, widths[c]) for c, w in self._heading_widths(level).items()}

    def _heading_widths(self, level: int) -> dict[int, int]:
        """Column -> its heading's width at a level (shown columns only)."""
        header = self.table.horizontalHeader()
        return {c: self._section_size(header, text).width() for c, text in enumerate(self._headings(level))
                if not self.table.isColumnHidden(c)}

    @staticmethod
    def _section_size(header: QHeaderView, text: str) -> QSize:
        """A header section's size for `text`, as the header measures one (in bold)."""
        font = header.font()
        font.setBold(True)
        option = QStyleOptionHeader()
        header.initStyleOption(option)
        option.fontMetrics, option.text = QFontMetrics(font), text
        return header.style().sizeFromContents(QStyle.ContentsType.CT_HeaderSection, option, QSize(), header)

    def _headings(self, level: int) -> list[str]:
        short = "short." if level >= self.SHORT_HEADINGS else ""
        return [self.tr(f"timeline.{short}col.{c}") for c in self.COLUMNS]

    def _rows_at(self, level: int) -> tuple[tuple[str, ...], ...]:
        """The frame's rows (cells as text) at a level of condensing, every one."""
        if level not in self._levels:
            self._levels[level] = self._table_rows(level)
        return self._levels[level]

    def _cell_extents(self, rows) -> tuple[list[int], list[int]]:
        """(per column, the widest cell of any of `rows`; per row, its height: its tallest cell,
        at least a line), as the table measures cells, but from the rows given (every row of the
        frame) and not from those a slide kept for the size it had before: a slide's layout
        never depends on the frame drawn before it."""
        table = self.table
        line = self._section_size(table.verticalHeader(), "1").height()   # a row's least, as the table sizes rows
        shown = [c for c in range(len(self.COLUMNS)) if not table.isColumnHidden(c)]
        widths, heights = [0] * len(self.COLUMNS), []
        for row in rows:
            sizes = {c: self._cell_size(row[c]) for c in shown}
            for c, size in sizes.items():
                widths[c] = max(widths[c], size.width())
            heights.append(max([line, *(size.height() for size in sizes.values())]))
        return widths, heights

    def _cell_size(self, text: str) -> QSize:
        """A cell's size as the table measures it (its own delegate, type and style), its grid
        lines included. A cell in lines (line breaks between them) is as wide as its widest and as tall
        as the style needs to draw them all: it draws a line after one only where a line as tall
        as that one still fits (a CJK line stands taller than a Latin one)."""
        table = self.table
        key = ("cell", table.font().key(), text)
        if key not in self._measures and "\n" in text:
            grid = 1 if table.showGrid() else 0
            sizes = [self._cell_size(line) for line in text.split("\n")]
            heights = [size.height() - grid for size in sizes]
            tops = list(accumulate(heights))
            need = max(tops[-1], *(top + height for top, height in zip(tops, heights[:-1])))
            self._measures[key] = QSize(max(size.width() for size in sizes), need + grid)
        if key not in self._measures:
            option = QStyleOptionViewItem()
            option.font, option.fontMetrics, option.widget = table.font(), QFontMetrics(table.font()), table
            scratch = QStandardItemModel(1, 1)
            scratch.setItem(0, 0, QStandardItem(text))
            size, grid = table.itemDelegate().sizeHint(option, scratch.index(0, 0)), 1 if table.showGrid() else 0
            self._measures[key] = QSize(size.width() + grid, size.height() + grid)
        return self._measures[key]

    def _wrapped(self, text: str, width: int) -> str:
        """`text` in lines that fit a column `width` wide: its tokens (a cell joins them with
        spaces) as many to a line as fit; a token longer than a line broken where it is full."""
        def fits(line: str) -> bool:
            return self._cell_size(line).width() <= width
        if fits(text):
            return text
        lines, line = [], ""
        for token in text.split(" "):
            if fits(f"{line} {token}" if line else token):
                line = f"{line} {token}" if line else token
                continue
            if line:
                lines.append(line)
            while len(token) > 1 and not fits(token):
                cut = next(n for n in range(len(token) - 1, 0, -1) if n == 1 or fits(token[:n]))
                lines.append(token[:cut])
                token = token[cut:]
            line = token
        return "\n".join([*lines, line])

    def _line_widths(self, text: str, least: int) -> list[int]:
        """The least column widths, down to `least`, at which `text` wraps to 1, 2, … lines (as
        many as it takes at `least`; a width between two keeps the lines of the wider)."""
        most = self._wrapped(text, least).count("\n") + 1
        steps, high = [], max(least, self._cell_size(text).width())
        for lines in range(1, most):
            low, top = least, high                  # the least width in low..top with at most `lines`
            while low < top:
                mid = (low + top) // 2
                low, top = (mid + 1, top) if self._wrapped(text, mid).count("\n") >= lines else (low, mid)
            steps.append(top)
        return [*steps, least]

    def _column_widths(self, level: int, room: int) -> dict[int, int]:
        """Column -> its width in a table `room` wide (shown columns): each as wide as its content
        when all fit. Else, from `shared_widths` (the widest cut to one common width), width moves
        between two columns at a time while that saves lines (summed over every row, a row as tall
        as its cell of most lines): the long lists get the room where their cells need it, short
        columns keep their width, and a long one goes under neither its heading, nor half its even
        share, nor its longest token (unless it starts narrower: only then does a token break)."""
        natural, least = self._natural_widths(level), self._heading_widths(level)
        start = widths = shared_widths(natural, least, room)
        if widths == natural:
            return widths
        long = [c for c in natural if natural[c] > room // (2 * len(natural))]
        rows = self._rows_at(level)
        even = (room - sum(w for c, w in natural.items() if c not in long)) // len(long)
        token = {c: max(self._cell_size(t).width() for row in rows for t in row[c].split(" ")) for c in long}
        floor = {c: min(widths[c], max(least[c], even // 2, token[c])) for c in long}
        steps = {c: [self._line_widths(row[c], floor[c]) for row in rows] for c in long}

        def score(given: dict[int, int]) -> tuple[int, int]:     # the fewest lines, then the nearest to the start
            lines = ([1 + sum(need > given[c] for need in needs) for needs in steps[c]] for c in long)
            return sum(map(max, zip(*lines))), sum(abs(given[c] - start[c]) for c in long)
        best, moved = score(widths), True
        while moved:
            moved = False
            for a, b in combinations(long, 2):
                pair = widths[a] + widths[b]
                for x in sorted({w for needs in steps[a] for w in needs} | {pair - w for needs in steps[b] for w in needs}):
                    if max(floor[a], pair - natural[b]) <= x <= min(natural[a], pair - floor[b]):
                        trial = {**widths, a: x, b: pair - x}
                        if (s := score(trial)) < best:
                            best, widths, moved = s, trial, True
        return widths

    def _fitted(self, room: int) -> Fitted:
        """The slide's table in a table `room` wide: condensed to the first level at which every
        cell is whole on one line, and its columns as wide as their content; when even the most
        condensed table is too wide, the long cells wrap (there is no scroll bar to reach a cut one)."""
        key = ("fitted", self.table.font().key(), room)
        if key not in self._measures:
            levels = (self.SHORT_LABELS, self.SHORT_HEADINGS, self.SHORT_LISTS)
            level = next((lv for lv in levels if sum(self._natural_widths(lv).values()) <= room), levels[-1])
            widths = self._column_widths(level, room)
            rows = tuple(tuple(self._wrapped(text, widths[c]) if c in widths else text for c, text in enumerate(row))
                         for row in self._rows_at(level))
            self._measures[key] = Fitted(level, widths, rows, self._cell_extents(rows)[1])
        return self._measures[key]

    def _kept_height(self, fitted: Fitted, keep: list[int | None]) -> int:
        """The height of the rows `keep` of a fitted table (None: the "…" row, one line)."""
        line = self._cell_extents([self.LEFT_OUT])[1][0]
        return sum(line if i is None else fitted.heights[i] for i in keep)

    def _rows_with_room(self, fitted: Fitted, room: int) -> list[int | None]:
        """The rows of a fitted table that `room` px hold: all, or the first and as many of the
        latest as fit around "…" (None) (at least the latest)."""
        n = len(fitted.rows)
        return next((keep for keep in (elided_indexes(n, slots, head=1) for slots in range(n, 1, -1))
                     if self._kept_height(fitted, keep) <= room), elided_indexes(n, 1, head=1))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._hold_lines()
        if self.on_slide:
            self._fit_rows()                         # as many rows and as wide as the new size has room for

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._hold_lines()                       # the lines' heights in the new type
        if event.type() == QEvent.Type.FontChange and self.on_slide:
            self._fit_rows()                         # rows and columns measured in the new type

    # -------------------------------------------------------------- drawing
    def refresh(self) -> None:
        s, run, frame = self.session, self.session.run, self.session.frame
        vocab = s.model.vocab
        labels = [self._step_label(step, self.WINDOW) for step in run.steps]
        labels.append(self.tr("timeline.stop", reason=run.finish_reason))
        current = -2 if frame.step is None else (len(labels) - 1 if frame.kind == "stop" else frame.step)
        t = self.theme
        self.strip.set_chips(labels, current, (t.processed, t.selected, t.background, t.text))
        usage = frame_usage(frame, run, vocab)
        self.counts.setText(self.tr("timeline.counts", visible=frame.visible_count, cache=frame.cache_len,
                                    chars=len(shown_text(frame, run, vocab, usage))))
        self.usage.setText(self.tr("usage", **usage.as_dict()))
        self.usage.setToolTip(self.tr("timeline.usage.tip"))
        self.speed.setText(speed_text(run, s.lang))
        self.speed.setToolTip(self.tr("timeline.speed.tip"))
        self._hold_lines()

        self.text_line.set_parts(text_so_far(frame, run, vocab), s.lang, self.theme)
        verify = any(isinstance(step, VerifyStep) for step in run.steps)
        self.legend.setText(self.tr("timeline.legend_verify" if verify else "timeline.legend"))
        self._levels, self._measures = {}, {}
        self._rows = self._rows_at(self.WINDOW)
        if self.on_slide:
            self._fit_rows()
        else:
            self._fill(self._rows)

    def _table_rows(self, level: int) -> tuple[tuple[str, ...], ...]:
        """The rows of the frame's steps so far (and of the stop), cells as text, condensed to `level`."""
        s, run, frame = self.session, self.session.run, self.session.frame
        vocab = s.model.vocab
        ends = self.SHORT_ENDS if level >= self.SHORT_LISTS else ENDS

        def pieces(ids):
            return vocab.display_pieces(ids, ends)
        labels = [self._step_label(step, level) for step in run.steps]
        shown = [] if frame.step is None else run.steps[:frame.step + 1]
        rows = []
        for step in shown:
            picked = frame.kind in ("pick", "stop") or step.index < frame.step
            selected = "" if not picked else (
                f"{vocab.display_piece(step.selected_id)} ({step.selected_id})"
                + (self.tr("forced") if step.forced else ""))
            kv = pieces(run.visible_ids[:step.cache_len_after])
            if isinstance(step, VerifyStep):
                if selected and step.draft:                   # without a draft it was a plain Decode
                    selected = self._verified(step, vocab)
                if step.cache_len_written > step.cache_len_after:
                    kv = self.tr("timeline.verify.kv", pieces=kv, written=step.cache_len_written)
            chooser = (str(step.logits_position) if level >= self.SHORT_HEADINGS
                       else self.tr("chooser", p=step.logits_position))
            ids = "" if level >= self.SHORT_LISTS else "  [" + elided([str(i) for i in step.input_ids], ", ", ends) + "]"
            rows.append((labels[step.index], pieces(step.input_ids) + ids, self._positions_text(step, ends),
                         kv, chooser,
                         selected or self.tr("timeline.not_yet"), f"{step.seconds * 1000:.2f}"))
        if frame.kind == "stop":
            short = level >= self.SHORT_HEADINGS
            rows.append((self.tr("timeline.short.stop") if level >= self.SHORT_LABELS
                         else self.tr("timeline.stop", reason=run.finish_reason), "", "",
                         pieces(run.visible_ids[:run.cache_len]), "",
                         finish_short(run, s.lang) if short else finish_text(run, s.lang), ""))
        return tuple(rows)

    def _step_label(self, step, level: int) -> str:
        """"Prefill", "Decode 3", "Verify 2"; on a slide "P", "D3", "V2" (the legend says which is which)."""
        kind = "prefill" if step.index == 0 else "verify" if isinstance(step, VerifyStep) else "decode"
        return self.tr(f"timeline.short.{kind}" if level >= self.SHORT_LABELS else f"phase.{kind}", n=step.index)

    def _fit_rows(self) -> None:
        """On a slide, the table fitted to its width (`_fitted`) and the rows it has room for
        (all a new size or type changes: the rest of the panel stays as drawn)."""
        header, viewport = self.table.horizontalHeader(), self.table.viewport()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        fitted = self._fitted(viewport.width())
        self._level = fitted.level
        for c, width in fitted.widths.items():
            header.resizeSection(c, width)
        keep = self._rows_with_room(fitted, viewport.height())
        self._fill([self.LEFT_OUT if i is None else fitted.rows[i] for i in keep],
                   [self._kept_height(fitted, [i]) for i in keep])
        self.table.scrollToTop()

    def _positions_text(self, step, ends: int = ENDS) -> str:
        """The positions a forward computed; for a Prefill that reused a prefix cache's, how many of each."""
        positions = elided([str(p) for p in step.positions], ", ", ends)
        if not step.reused_positions:
            return positions
        return self.tr("timeline.reused", reused=step.reused_positions, computed=step.computed_positions,
                       positions=positions)

    def _verified(self, step: VerifyStep, vocab) -> str:
        """A verify pass's choice: the kept (✓) and rejected (✗) drafted tokens, then the model's own."""
        def shown(ids):
            return vocab.display_pieces(ids) if ids else "–"
        return self.tr("timeline.verify.selected", kept=shown(step.draft[:step.accepted]),
                       rejected=shown(step.rejected), piece=vocab.display_piece(step.selected_id), id=step.selected_id)

    def _fill(self, rows, heights: list[int] | None = None) -> None:
        """The table's rows (cells as text); on a slide `heights`, each row's."""
        table = self.table
        headers = self._headings(self._level)
        if headers != [table.horizontalHeaderItem(c).text() if table.horizontalHeaderItem(c) else ""
                       for c in range(len(self.COLUMNS))]:
            table.setHorizontalHeaderLabels(headers)     # repaints the table even when unchanged
        table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, text in enumerate(row):
                item = table.item(r, c)
                if item is None:
                    table.setItem(r, c, QTableWidgetItem(text))
                else:
                    item.setText(text)
            if heights is not None:
                table.setRowHeight(r, heights[r])
        if rows and table.selectionModel().selectedRows() != [table.model().index(len(rows) - 1, 0)]:
            table.selectRow(len(rows) - 1)              # repaints the table even when unchanged
        if rows and not self.on_slide:              # a slide has room for the rows it keeps
            table.scrollToBottom()

    def _row_clicked(self, row: int) -> None:
        if row < len(self.session.run.steps):
            self.session.go_to_step(row)
        else:
            self.session.last()

    def _chip_clicked(self, index: int) -> None:
        if index < 0:
            self.session.last()
        else:
            self.session.go_to_step(index)
