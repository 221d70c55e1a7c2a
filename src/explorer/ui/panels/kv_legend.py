"""The KV cache grid's legend: its three kinds of cell, drawn as in the grid, each with its
meaning in words, and the outline of the written columns."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEvent, QRect, QSize, Qt
from PySide6.QtGui import QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import QWidget

from .kv_cells import MARKS, STATES, paint_cells, paint_marked
from .panel import answer_tooltip


class KVLegend(QWidget):
    """The three cell kinds drawn exactly as in the grid, each with its meaning in words,
    and the outline of the written columns; wraps to the panel's width. `compact`: the
    swatches alone on one line, each meaning in its tooltip (a short panel, where the
    meanings would leave the grid no room)."""

    def __init__(self, panel):
        super().__init__(panel)
        self._panel = panel
        self.compact = False
        self._placed: dict = {}       # (type, labels, marks, language, width, compact) -> `_place`'s answer
        sp = self.sizePolicy()
        sp.setHeightForWidth(True)
        self.setSizePolicy(sp)

    def entries(self) -> list[tuple[int | None, str, str]]:
        """(state code, prefix-cache mark or None for the outline; text in the swatch; meaning).
        A slide names only the kinds of cell its grid has (the window's legend always names
        the three states: a key that stays put while the player moves)."""
        data = self._panel.grid_view().data
        if data is None:
            return []
        tr, labels = self._panel.tr, data.labels
        slide = self._panel.on_slide
        out = []
        for code, state in enumerate(STATES):
            if slide and code not in data.codes:
                continue
            name, meaning = tr(f"kv.state.{state}"), tr(f"kv.legend.{state}")
            if labels[code] != name:     # the cells show a short label: name it in full
                meaning = tr("kv.legend.named", name=name, meaning=meaning)
            out.append((code, labels[code], meaning))
        for mark in (m for m in MARKS if m in data.marks):
            label, name, meaning = self._panel.mark_label(mark), tr(f"kv.mark.{mark}"), tr(f"kv.legend.{mark}")
            out.append((mark, label, meaning if label == name else tr("kv.legend.named", name=name, meaning=meaning)))
        if slide and data.written is None:
            return out
        return out + [(None, "", tr("kv.legend.written"))]

    def named(self, data) -> tuple | None:
        """What in `data` the entries depend on: the cells' labels, the marks, and on a slide
        the states and the outline the grid has."""
        if data is None:
            return None
        key = (data.labels, tuple(m for m in MARKS if m in data.marks))
        if self._panel.on_slide:
            key += (tuple(np.unique(data.codes).tolist()), data.written is None)
        return key

    def _layout(self, width: int, compact: bool) -> list[tuple[QRect, QRect, int | None, str, str]]:
        """(swatch, meaning's box, code, swatch text, meaning) per entry, placed left to right
        and wrapped to `width`; a meaning wider than the room left beside its swatch wraps
        onto more lines. Remembered: a slide measures the legend many times per frame."""
        data = self._panel.grid_view().data
        key = (self.font().key(), self.named(data), self._panel.session.lang, width, compact)
        if key not in self._placed:
            if len(self._placed) > 64:
                self._placed.clear()
            self._placed[key] = self._place(width, compact)
        return [(QRect(swatch), QRect(text), *rest) for swatch, text, *rest in self._placed[key]]

    def _place(self, width: int, compact: bool) -> list[tuple[QRect, QRect, int | None, str, str]]:
        fm = QFontMetrics(self.font())
        line, gap = fm.height() + 6, fm.height() // (2 if compact else 1)
        entries = self.entries()
        if compact:                    # the outline's swatch says what it stands for
            entries = [(code, short or self._panel.tr("kv.legend.written_short"), meaning)
                       for code, short, meaning in entries]
        widest = max((fm.horizontalAdvance(t) for _, t, _ in entries), default=0) + 12
        x = y = row_h = 0
        placed = []
        for code, short, meaning in entries:
            # swatches alone: each as wide as its own word; with meanings: all alike, in a column
            swatch_w = fm.horizontalAdvance(short) + 12 if compact else widest
            text = QRect()
            if not compact:
                room = max(width - swatch_w - 6, 8 * fm.averageCharWidth())
                text = fm.boundingRect(QRect(0, 0, room, 10 * line), Qt.TextWordWrap, meaning)
                text.setHeight(max(text.height(), line))
            w = swatch_w + (6 + text.width() if not compact else 0)
            if x and x + w > width:
                x, y, row_h = 0, y + row_h + 4, 0
            swatch = QRect(x, y, swatch_w, line)
            if not compact:
                text.moveTo(x + swatch_w + 6, y)
            placed.append((swatch, text, code, short, meaning))
            row_h = max(row_h, line, text.height())
            x += w + gap
        return placed

    def entry_width(self) -> int:
        """The width of the widest entry with its meaning on one line."""
        fm = QFontMetrics(self.font())
        entries = self.entries()
        swatch = max((fm.horizontalAdvance(t) for _, t, _ in entries), default=0) + 12
        return swatch + 6 + max((fm.horizontalAdvance(meaning) for *_, meaning in entries), default=0)

    def full_height(self, width: int) -> int:
        """The height with every meaning written out, at this width."""
        return self._height(self._layout(width, False))

    @staticmethod
    def _height(placed) -> int:
        return max((max(swatch.bottom(), text.bottom()) for swatch, text, *_ in placed), default=0) + 2

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self._height(self._layout(width, self.compact))

    def sizeHint(self) -> QSize:
        return QSize(400, self.heightForWidth(400))

    def minimumSizeHint(self) -> QSize:
        """The swatches alone on one line: what the legend gives way to (`_fit_legend`)."""
        return QSize(0, self._height(self._layout(self.width() or 400, True)))

    def paintEvent(self, _event) -> None:
        p, theme = QPainter(self), self._panel.theme
        for swatch, text, code, short, meaning in self._layout(self.width(), self.compact):
            if isinstance(code, str):
                paint_marked(p, theme, [(swatch, code, [short])])
            elif code is None:
                p.setPen(QPen(theme.color("accent"), 4))
                p.drawRect(swatch.adjusted(2, 2, -2, -2))
                if short:
                    p.setPen(theme.color("text"))
                    p.drawText(swatch, Qt.AlignCenter, short)
            else:
                paint_cells(p, theme, [(swatch, code, [short])])
            if not text.isEmpty():
                p.setPen(theme.color("text"))
                p.drawText(text, Qt.AlignLeft | Qt.AlignVCenter | Qt.TextWordWrap, meaning)

    def event(self, event) -> bool:
        if event.type() == QEvent.ToolTip:          # compact: each swatch says what it means
            meaning = next((meaning for swatch, _text, _code, _short, meaning
                            in self._layout(self.width(), self.compact) if swatch.contains(event.pos())), "")
            return answer_tooltip(event, meaning, self)
        return super().event(event)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.FontChange:
            self.updateGeometry()

