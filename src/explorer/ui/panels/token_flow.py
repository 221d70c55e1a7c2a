"""The text of a run as token boxes that wrap like text, each chosen token shaded by the
probability it was chosen with (its step's final distribution), with the numbers behind a
token in words: shared by the transcript and the A/B view, which draw the same text. The
widget's host (its parent) gives `theme`, `tr(key, **values)`, `details_of(index)` and
`pin(index)`."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from ...core.decode.generate import Run, Step
from ...core.decode.sampling import Distribution
from ...core.decode.speculative import VerifyStep
from ...core.decode.usage import reasoning_flags
from ...i18n import add_messages
from ..theme import text_on
from .panel import answer_tooltip

COLOR_MAP = "cividis"        # colour-blind safe, as the logit lens's and the attention heatmap's
LEGEND_STOPS = (0.0, 0.25, 0.5, 0.75, 1.0)
ALTERNATIVES = 5             # the top of the final distribution a token's details list
GAP = 3                      # px between two token boxes
PAD = 3                      # px inside a token box

add_messages({
    "transcript.legend": {"en": "probability chosen with", "zh": "被选中时的概率"},
    "transcript.reasoning": {"en": "reasoning", "zh": "推理"},
    "transcript.details": {"en": "{piece} (step {step}{how}): p = {prob} · surprisal {bits} bits · top {n}: {top}",
                           "zh": "{piece}（第{step}步{how}）：p = {prob} · 意外度 {bits} 比特 · 前{n}名：{top}"},
    "transcript.forced": {"en": ", forced", "zh": "，人为指定"},
    "transcript.as_reasoning": {"en": ", reasoning", "zh": "，推理"},
    "transcript.prompt_token": {"en": "{piece}: part of the prompt, given, not chosen (no probability).",
                                "zh": "{piece}：属于提示，是给定的，不是选出的（没有概率）。"},
})


@dataclass(frozen=True)
class Chosen:
    """What the step record says about one chosen token: read once per run."""
    step: int
    prob: float                  # its final probability
    top_ids: tuple[int, ...]     # the final distribution's top ALTERNATIVES, best first
    top_probs: tuple[float, ...]
    forced: bool
    forcible: bool               # the step chose only this token (a verify pass adds several: no what-if)


def choices_of(run: Run) -> list[tuple[Step, Distribution, int]]:
    """Per output token, in order: the step that chose it, the distribution it was chosen
    from and its id. A plain step chooses one token; a speculative verify pass several,
    each from its own row."""
    out = []
    for step in run.steps:
        if isinstance(step, VerifyStep):
            out += [(step, d, t) for d, t in zip(step.distributions, step.new_ids)]
        else:
            out.append((step, step.distribution, step.selected_id))
    return out


def chosen_of(step: Step, dist: Distribution, token_id: int) -> Chosen:
    """A chosen token's numbers, read from its distribution's final probabilities."""
    final = dist.stages[-1]
    top = dist.top(ALTERNATIVES)                                         # (5,)
    at = np.minimum(np.searchsorted(final.ids, [token_id, *top]), final.ids.size - 1)   # (6,) in the candidates
    probs = np.where(final.ids[at] == [token_id, *top], final.candidate_probs[at], 0.0)  # (6,) removed: 0
    return Chosen(step.index, float(probs[0]), tuple(int(t) for t in top), tuple(float(p) for p in probs[1:]),
                  step.forced, not isinstance(step, VerifyStep))


def prob_text(prob: float) -> str:
    """A probability as the details write it: three decimals, a tiny one in powers of ten."""
    return f"{prob:.3f}" if prob >= 0.001 or prob == 0 else f"{prob:.1e}"


def surprisal_bits(prob: float) -> float:
    """-log2 p: the bits of surprise of a token chosen with probability `prob` (inf at 0)."""
    return math.inf if prob <= 0 else max(0.0, -math.log2(prob))     # p = 1: 0 bits, not -0


@dataclass(frozen=True)
class Token:
    """One token of the text on screen."""
    id: int
    piece: str                   # as the vocabulary shows it (display_piece)
    breaks: bool                 # its text ends a line
    chosen: Chosen | None        # None: a prompt token
    reasoning: bool


def run_tokens(run: Run, vocab, ids, chosen_at) -> list[Token]:
    """The tokens `ids` of `run` (its prompt, then what it chose): `chosen_at(i)` gives output
    token i's numbers."""
    n_prompt = len(run.prompt_ids)
    flags = reasoning_flags(run.prompt_ids, ids[n_prompt:], vocab)
    return [Token(int(t), vocab.display_piece(int(t)), vocab.piece_text(int(t)).endswith("\n"),
                  chosen_at(i - n_prompt) if i >= n_prompt else None, i >= n_prompt and flags[i - n_prompt])
            for i, t in enumerate(ids)]


def token_details(token: Token, piece, tr) -> str:
    """A token's numbers in words: probability, surprisal in bits, the top alternatives
    (`piece(id)` shows a token, `tr(key, **values)` a message)."""
    if token.chosen is None:
        return tr("transcript.prompt_token", piece=token.piece)
    c = token.chosen
    how = (tr("transcript.forced") if c.forced else "") + (tr("transcript.as_reasoning") if token.reasoning else "")
    top = ", ".join(f"{piece(t)} {prob_text(p)}" for t, p in zip(c.top_ids, c.top_probs))
    bits = surprisal_bits(c.prob)
    return tr("transcript.details", piece=token.piece, step=c.step, how=how, prob=prob_text(c.prob),
              bits="∞" if math.isinf(bits) else f"{bits:.2f}", n=len(c.top_ids), top=top)


class TokenFlow(QWidget):
    """The tokens as boxes that wrap like text; a text taller than the room keeps its end
    (the newest tokens) under a "…"; the colour scale with its numbers under the text."""

    def __init__(self, panel, least_chars: int = 24):
        super().__init__(panel)
        self.panel = panel
        self.least_chars = least_chars           # the narrowest it draws: this many M wide
        self.tokens: list[Token] = []
        self.current: int | None = None          # index in `tokens` of the frame's token (outlined)
        self._cmap = pg.colormap.get(COLOR_MAP)
        self.boxes: list[tuple[int, QRectF]] = []   # (token index, box) as painted: hover, clicks, tests
        self.setMouseTracking(True)
        policy = QSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)           # as tall as its lines at the width it gets, the details under it
        self.setSizePolicy(policy)

    def color(self, p: float) -> QColor:
        return self._cmap.map(float(p), mode="qcolor")

    def _font(self, token: Token | None = None) -> QFont:
        font = QFont(self.font())
        font.setItalic(token is not None and token.reasoning)
        return font

    def _line_h(self) -> float:
        return QFontMetricsF(self.font()).height() + 2 * PAD + GAP

    def legend_h(self) -> float:
        return QFontMetricsF(self.font()).height() * 1.8

    def heightForWidth(self, width: int) -> int:
        return math.ceil(self._line_h() * len(self.flow(width - 4)) + self.legend_h())

    def sizeHint(self) -> QSize:
        """As tall as its lines at the width it has (before it has one: 50 characters wide)."""
        width = int(QFontMetricsF(self.font()).horizontalAdvance("M") * 50)
        return QSize(width, self.heightForWidth(self.width() if self.width() > 100 else width))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self.updateGeometry()                 # the lines wrap anew: the height it asks for follows

    def minimumSizeHint(self) -> QSize:
        m = QFontMetricsF(self.font())
        return QSize(int(m.horizontalAdvance("M") * self.least_chars), int(self._line_h() + self.legend_h()))

    def flow(self, width: float) -> list[list[tuple[int | str, float]]]:
        """Lines of (token index or a label, box width) that fit `width` px."""
        lines: list[list[tuple[int | str, float]]] = [[]]
        x, label = 0.0, self.panel.tr("transcript.reasoning") + ":"
        for i, token in enumerate(self.tokens):
            items = []
            if token.reasoning and (i == 0 or not self.tokens[i - 1].reasoning):
                items.append((label, QFontMetricsF(self._font(token)).horizontalAdvance(label) + 2 * PAD))
            items.append((i, QFontMetricsF(self._font(token)).horizontalAdvance(token.piece) + 2 * PAD))
            for item in items:
                if x > 0 and x + item[1] > width:
                    lines.append([])
                    x = 0.0
                lines[-1].append(item)
                x += item[1] + GAP
            if token.breaks:
                lines.append([])
                x = 0.0
        return lines

    def paintEvent(self, _event) -> None:
        theme = self.panel.theme
        self.boxes = []
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        line_h = self._line_h()
        text_room = self.height() - self.legend_h()
        lines = self.flow(self.width() - 4)
        fit = max(1, int((text_room + 0.5) // line_h))       # a rounded-down pixel still fits the line
        y, start = 0.0, 2.0
        if len(lines) > fit:                                  # keep the end: the newest tokens, after a "…"
            lines = lines[len(lines) - fit:]
            p.setPen(QColor(theme.muted))
            p.setFont(self.font())
            p.drawText(QRectF(2, 0, self.width(), line_h), Qt.AlignmentFlag.AlignVCenter, "…")
            start += QFontMetricsF(self.font()).horizontalAdvance("… ")
        for line in lines:
            x, start = start, 2.0
            for item, width in line:
                box = QRectF(x, y + GAP / 2, width, line_h - GAP)
                if isinstance(item, str):
                    font = self._font()
                    font.setItalic(True)
                    p.setFont(font)
                    p.setPen(QColor(theme.muted))
                    p.drawText(box, Qt.AlignmentFlag.AlignCenter, item)
                else:
                    self._token(p, item, box)
                x += width + GAP
            y += line_h
        top = min(y, text_room)                                # under the text, or at the foot of a full panel
        self._legend(p, QRectF(2, top, self.width() - 4, self.legend_h()))
        p.end()

    def _token(self, p: QPainter, index: int, box: QRectF) -> None:
        theme, token = self.panel.theme, self.tokens[index]
        p.setFont(self._font(token))
        if token.chosen is None:
            p.setPen(QColor(theme.muted))
        else:
            fill = self.color(token.chosen.prob)
            p.fillRect(box, fill)
            p.setPen(QPen(QColor(theme.grid), 1))
            p.drawRect(box)
            p.setPen(QColor(text_on(fill.name())))
        p.drawText(box, Qt.AlignmentFlag.AlignCenter, token.piece)
        if token.reasoning:
            p.setPen(QPen(QColor(theme.muted), 1.5, Qt.PenStyle.DashLine))
            p.drawRect(box.adjusted(-1, -1, 1, 1))
        if index == self.current:
            p.setPen(QPen(QColor(theme.chosen), 3))
            p.drawRect(box.adjusted(-1.5, -1.5, 1.5, 1.5))
        self.boxes.append((index, box))

    def _legend(self, p: QPainter, area: QRectF) -> None:
        """Five swatches of the scale, each with its number in it (the marks' key is a label under it)."""
        theme = self.panel.theme
        m = QFontMetricsF(self.font())
        p.setFont(self.font())
        p.setPen(QColor(theme.text))
        title = self.panel.tr("transcript.legend")
        row = QRectF(area.left(), area.top() + m.height() * 0.3, area.width(), m.height() * 1.4)
        swatch = m.horizontalAdvance("0.75") + 2 * PAD + 4
        x = area.left()
        if m.horizontalAdvance(title) + 8 + swatch * len(LEGEND_STOPS) <= area.width():   # narrow: the scale alone
            p.drawText(row, Qt.AlignmentFlag.AlignVCenter, title)
            x += m.horizontalAdvance(title) + 8
        for stop in LEGEND_STOPS:
            cell = QRectF(x, row.top(), swatch, row.height())
            fill = self.color(stop)
            p.fillRect(cell, fill)
            p.setPen(QColor(text_on(fill.name())))
            p.drawText(cell, Qt.AlignmentFlag.AlignCenter, f"{stop:g}" if stop in (0, 1) else f"{stop:.2f}")
            x += swatch
        p.setPen(QPen(QColor(theme.grid), 1))
        p.drawRect(QRectF(x - swatch * len(LEGEND_STOPS), row.top(), swatch * len(LEGEND_STOPS), row.height()))

    def token_at(self, pos: QPointF) -> int | None:
        return next((i for i, box in self.boxes if box.contains(pos)), None)

    def event(self, event) -> bool:
        if event.type() == QEvent.Type.ToolTip:
            index = self.token_at(QPointF(event.pos()))
            return answer_tooltip(event, "" if index is None else self.panel.details_of(index), self)
        return super().event(event)

    def mousePressEvent(self, event) -> None:
        index = self.token_at(event.position())
        if index is not None:
            self.panel.pin(index)
        super().mousePressEvent(event)
