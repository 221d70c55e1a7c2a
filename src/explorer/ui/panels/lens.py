"""Logit lens panel: for the step on screen, what each layer's residual stream would choose
through the final norm and the output head (the raw logit lens, no trained translators):
layers down, candidates across, each cell its piece and probability on a colour scale, the
finally selected token framed in every row, the commitment layer marked."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from ...core.models.lens import Lens
from ...i18n import add_messages
from ...session import Session
from ...session.lens import frame_lens
from ..theme import text_on
from .panel import Panel

COLOR_MAP = "cividis"   # colour-blind safe, as the attention heatmap's; the numbers are in the cells too
CANDIDATES = 6          # columns of candidates (the lens keeps 20: JSON and the trace carry them)
MIN_CANDIDATES = 2      # ... however narrow the panel (the pieces elide)
SLIDE_CANDIDATES = 4    # ... a slide sizes its type for
LEGEND_STOPS = (0.0, 0.25, 0.5, 0.75, 1.0)
SLIDE_ROWS = 12         # layers a slide sizes its type for; the rest elide around a gap

add_messages({
    "lens.none": {"en": "No forward yet: the lens reads the layers of a step.", "zh": "还没有前向计算：lens读取某一步的各层。"},
    "lens.no_layers": {"en": "This model has no layers to show: its scores come from a table.",
                       "zh": "这个模型没有可显示的层：它的分数来自一张表。"},
    "lens.caption": {"en": "Raw logit lens at position {position}: the final norm and the output head applied to each "
                           "layer's residual stream (no trained translators). {arith}",
                     "zh": "位置{position}的原始logit lens：把最终归一化和输出头直接用在每一层的残差流上"
                           "（没有训练过的转换器）。{arith}"},
    "lens.arith": {"en": "Computed in {name}.", "zh": "计算方式：{name}。"},
    "lens.single": {"en": "One layer: its row is h·Wout + b, the step's own scores.",
                    "zh": "只有一层：这一行就是 h·Wout + b，即这一步自己的分数。"},
    "lens.committed": {"en": "Selected {piece}: top-1 from layer {layer} on (the commitment layer, marked ▶).",
                       "zh": "选中的{piece}：从第{layer}层起一直排第一（定型层，标记为▶）。"},
    "lens.uncommitted": {"en": "Selected {piece}: not top-1 at the last layer (sampled or forced), so no layer commits to it.",
                         "zh": "选中的{piece}：在最后一层不是第一（抽样或强制选出），所以没有定型层。"},
    "lens.layer": {"en": "layer", "zh": "层"},
    "lens.rank": {"en": "{piece} #{rank} {prob}", "zh": "{piece} 第{rank} {prob}"},
    "lens.legend": {"en": "probability (the framed cell: the selected token)", "zh": "概率（加框的格子：选中的Token）"},
    "lens.selected_col": {"en": "selected: rank, prob", "zh": "选中的：名次，概率"},
    "lens.gap": {"en": "… {n} layers …", "zh": "…… {n}层 ……"},
})


def _prob(p: float) -> str:
    return f"{p:.2f}" if p >= 0.005 else f"{p:.0e}"


def shown_layers(n_layers: int, fit: int) -> list[int | None]:
    """The layers the rows show when `fit` rows fit: all of them, or layer 0, a gap (None)
    and the last ones, where the prediction settles."""
    if n_layers <= fit:
        return list(range(n_layers))
    last = max(1, fit - 2)
    return [0, None, *range(n_layers - last, n_layers)]


class LensGrid(QWidget):
    """The layers x candidates table, painted: a row per layer (label, candidate cells, the
    selected token's rank and probability), a colour scale under it."""

    def __init__(self, panel: "LensPanel"):
        super().__init__(panel)
        self.panel = panel
        self.lens: Lens | None = None
        self.highlight = True
        self._cmap = pg.colormap.get(COLOR_MAP)
        self.drawn: list[tuple[int | None, list[str]]] = []   # (layer, cell texts) of the rows painted: for tests

    def color(self, p: float) -> QColor:
        return self._cmap.map(float(p), mode="qcolor")

    def _lines(self) -> int:
        """Lines of a candidate's cell: the teaching model's one layer adds its logit (h·Wout + b)."""
        return 2 if self.lens is not None and self.lens.n_layers == 1 else 1

    def _metrics(self):
        m = QFontMetricsF(self.font())
        return m, m.height() * 1.5               # a row's height

    def sizeHint(self) -> QSize:
        m, row = self._metrics()
        rows = 0 if self.lens is None else min(self.lens.n_layers, 12) * self._lines() + 3
        return QSize(int(m.horizontalAdvance("M") * 60), int(row * rows))

    def minimumSizeHint(self) -> QSize:
        """A few layers, 40 characters wide at the desk; on a slide the least that shows the
        table, MIN_CANDIDATES candidates (a slide's half keeps the body type)."""
        m, row = self._metrics()
        rows = 0 if self.lens is None else min(self.lens.n_layers + 3, 6)
        width = self._fixed_width(m) + MIN_CANDIDATES * self._cell_least(m) if self.panel.on_slide \
            else m.horizontalAdvance("M") * 40
        return QSize(int(width), int(row * rows))

    def _fixed_width(self, m: QFontMetricsF) -> float:
        """The layer labels' column and the selected token's column."""
        return m.horizontalAdvance("▶ " + self.panel.tr("lens.layer") + " 000") + m.horizontalAdvance("W" * 6 + " #00000 0.00")

    def _cell_least(self, m: QFontMetricsF) -> float:
        """The width a candidate's cell needs for a short piece and its probability."""
        return m.horizontalAdvance("␣Paris 0.00") + 10

    def content_size(self) -> QSize:
        """What a slide measures its type on: SLIDE_CANDIDATES candidates and up to SLIDE_ROWS
        layers (more elide around a gap, `shown_layers`), the header and the legend."""
        m, row = self._metrics()
        rows = 0 if self.lens is None else min(self.lens.n_layers, SLIDE_ROWS) * self._lines() + 3
        return QSize(int(self._fixed_width(m) + SLIDE_CANDIDATES * self._cell_least(m)), int(row * rows))

    def paintEvent(self, _event) -> None:
        lens, theme = self.lens, self.panel.theme
        self.drawn = []
        if lens is None:
            return
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        m, row_h = self._metrics()
        rect = QRectF(self.rect())
        label_w = m.horizontalAdvance("▶ " + self.panel.tr("lens.layer") + " 000")
        rank_w = m.horizontalAdvance("W" * 6 + " #00000 0.00")
        # as many candidates as fit a piece and its probability each (a slide's half: three or four)
        fit_k = int((rect.width() - label_w - rank_w) // self._cell_least(m))
        k = min(CANDIDATES, lens.ids.shape[1], max(MIN_CANDIDATES, fit_k))
        cell_w = max(1.0, (rect.width() - label_w - rank_w) / k)
        cell_h = row_h * self._lines()
        fit = max(3, int((rect.height() - 3 * row_h) / cell_h))   # three rows: the header and the legend
        text_pen = QColor(theme.text)
        bold = QFont(self.font())
        bold.setBold(True)
        y = 0.0
        p.setPen(text_pen)
        p.drawText(QRectF(0, y, label_w, row_h), Qt.AlignmentFlag.AlignVCenter, self.panel.tr("lens.layer"))
        for j in range(k):
            p.drawText(QRectF(label_w + j * cell_w, y, cell_w, row_h), Qt.AlignmentFlag.AlignCenter, f"#{j + 1}")
        if self.highlight:
            p.drawText(QRectF(label_w + k * cell_w + 6, y, rank_w - 6, row_h), Qt.AlignmentFlag.AlignVCenter,
                       m.elidedText(self.panel.tr("lens.selected_col"), Qt.TextElideMode.ElideRight, rank_w - 6))
        y += row_h
        commit = lens.commit_layer if self.highlight else None
        for layer in shown_layers(lens.n_layers, fit):
            if layer is None:
                p.setPen(QColor(theme.muted))
                gap = lens.n_layers - len(shown_layers(lens.n_layers, fit)) + 1
                p.drawText(QRectF(0, y, rect.width(), cell_h), Qt.AlignmentFlag.AlignCenter,
                           self.panel.tr("lens.gap", n=gap))
                self.drawn.append((None, []))
                y += cell_h
                continue
            marked = layer == commit
            p.setFont(bold if marked else self.font())
            p.setPen(text_pen)
            p.drawText(QRectF(0, y, label_w, cell_h), Qt.AlignmentFlag.AlignVCenter,
                       ("▶ " if marked else "  ") + f"{self.panel.tr('lens.layer')} {layer}")
            texts = []
            for j in range(k):
                token, prob = int(lens.ids[layer][j]), float(lens.probs[layer][j])
                cell = QRectF(label_w + j * cell_w, y, cell_w, cell_h).adjusted(1, 1, -1, -1)
                fill = self.color(prob)
                p.fillRect(cell, fill)
                chosen = self.highlight and token == lens.selected_id
                if chosen:
                    p.setPen(QPen(QColor(theme.chosen), 3))
                    p.drawRect(cell.adjusted(1.5, 1.5, -1.5, -1.5))
                p.setFont(bold if chosen else self.font())
                p.setPen(QColor(text_on(fill.name())))
                lines = [f"{self.panel.piece(token)} {_prob(prob)}"]
                if self._lines() == 2:             # the teaching model: the course's h·Wout + b under it
                    lines.append(f"z = {lens.logits[layer][j]:.3f}")
                for n, text in enumerate(lines):
                    line = QRectF(cell.left() + 4, cell.top() + n * cell.height() / len(lines), cell.width() - 8,
                                  cell.height() / len(lines))
                    p.drawText(line, Qt.AlignmentFlag.AlignCenter,
                               m.elidedText(text, Qt.TextElideMode.ElideMiddle, line.width()))
                texts.append(" · ".join(lines))
            if self.highlight:
                p.setFont(self.font())
                p.setPen(text_pen)
                rank = self.panel.tr("lens.rank", piece=self.panel.piece(lens.selected_id),
                                     rank=int(lens.selected_ranks[layer]), prob=_prob(float(lens.selected_probs[layer])))
                p.drawText(QRectF(label_w + k * cell_w + 6, y, rank_w - 6, cell_h), Qt.AlignmentFlag.AlignVCenter,
                           m.elidedText(rank, Qt.TextElideMode.ElideRight, rank_w - 6))
                texts.append(rank)
            if marked:
                p.setPen(QPen(QColor(theme.chosen), 2, Qt.PenStyle.DashLine))
                p.drawLine(0, int(y), int(rect.width()), int(y))
            self.drawn.append((layer, texts))
            y += cell_h
        self._legend(p, QRectF(label_w, y + row_h * 0.2, rect.width() - label_w, row_h * 1.6), m)
        p.end()

    def _legend(self, p: QPainter, area: QRectF, m: QFontMetricsF) -> None:
        """The colour scale with its numbers under it (0, 0.25, ... 1), and what it means."""
        steps = 40
        bar = QRectF(area.left(), area.top(), min(area.width() * 0.45, m.horizontalAdvance("0.25") * 14),
                     area.height() * 0.35)
        for i in range(steps):
            p.fillRect(QRectF(bar.left() + i * bar.width() / steps, bar.top(), bar.width() / steps + 1, bar.height()),
                       self.color(i / (steps - 1)))
        p.setPen(QColor(self.panel.theme.text))
        below = QRectF(bar.left(), bar.bottom(), bar.width(), area.height() - bar.height())
        for stop in LEGEND_STOPS:
            x = bar.left() + stop * bar.width()
            label = f"{stop:g}"
            half = m.horizontalAdvance(label) / 2 + 2
            left = min(max(x - half, bar.left()), bar.right() - 2 * half)     # the end numbers inside the bar's width
            p.drawText(QRectF(left, below.top(), 2 * half, below.height()), Qt.AlignmentFlag.AlignCenter, label)
        room = area.right() - bar.right() - 12
        p.drawText(QRectF(bar.right() + 12, area.top(), room, area.height()), Qt.AlignmentFlag.AlignVCenter,
                   m.elidedText(self.panel.tr("lens.legend"), Qt.TextElideMode.ElideRight, room))


class LensPanel(Panel):
    panel_id = "lens"
    title_key = "lens.title"
    SLIDE_STRETCHES = True        # the table fills the room a slide gives it (rows elide around a gap)
    SLIDE_ELIDES = True           # ... and in a slide's half, fewer layers and candidates at the body type

    def __init__(self, session: Session, parent=None):
        super().__init__(session, parent)
        self.caption = QLabel(wordWrap=True)
        self.commit_note = QLabel(wordWrap=True)
        self.grid = LensGrid(self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.caption)
        layout.addWidget(self.commit_note)
        layout.addWidget(self.grid, 1)
        self.refresh()

    def has_content(self) -> bool:
        """A lens to show: a forward has run, on a model with layers."""
        return self.session.step is not None and self.model_has_layers()

    @property
    def lens(self) -> Lens | None:
        """The lens drawn (None until the panel has been shown on a step)."""
        return self.grid.lens

    def slide_content_size(self) -> QSize:
        size = self.grid.content_size()
        return QSize(size.width(), size.height() + self.caption.sizeHint().height() * 2)

    def slide_minimum_size(self) -> QSize:
        """Layer 0, a gap and the last layers, MIN_CANDIDATES candidates: what a slide's half holds."""
        least = self.grid.minimumSizeHint()
        width = max(least.width(), 1)
        labels = sum(label.heightForWidth(width) for label in (self.caption, self.commit_note)
                     if label.isVisibleTo(self))
        return QSize(least.width(), least.height() + labels)

    def draw(self) -> None:
        """Drawn from the session's lens of the frame on screen (out of sight, a tab behind
        the beam tree, nothing is computed until it is shown: Panel.refresh)."""
        s = self.session
        lens = frame_lens(s)
        self.grid.lens = lens
        self.grid.highlight = not s.asking              # an open question may be asking for the pick
        if lens is None:
            self.caption.setText(self.tr("lens.none" if s.step is None else "lens.no_layers"))
            self.commit_note.setText("")
        else:
            self.caption.setText(self.tr("lens.caption", position=lens.position,
                                         arith=self.tr("lens.arith", name=lens.arithmetic)))
            piece = self.piece(lens.selected_id)
            lines = [self.tr("lens.single")] if lens.n_layers == 1 else []
            if self.grid.highlight:                     # the selected token is on screen: say where it settles
                lines.append(self.tr("lens.uncommitted", piece=piece) if lens.commit_layer is None
                             else self.tr("lens.committed", piece=piece, layer=lens.commit_layer))
            self.commit_note.setText(" ".join(lines))
        self.grid.updateGeometry()
        self.grid.update()
