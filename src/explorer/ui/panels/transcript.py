"""Transcript panel: the prompt and the tokens chosen so far as text, each chosen token
shaded by the probability it was chosen with (the step record's final distribution), with
a legend in numbers. Colour is never the only cue: a hover shows a token's probability, its
top alternatives and its surprisal in bits, and the details line under the text says the
same for the token of the frame on screen (outlined), or for a token clicked. Clicking an
alternative forces it from that step (the session's what-if; Ctrl+Z undoes). Reasoning
tokens are set in italics in a dashed box, after a "reasoning" label."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from ...core.decode.generate import Run, Step
from ...core.decode.sampling import Distribution
from ...core.decode.speculative import VerifyStep
from ...core.decode.usage import reasoning_flags
from ...core.errors import ExplorerError
from ...i18n import add_messages
from ...session import Session
from ..theme import text_on
from .panel import Panel, answer_tooltip

COLOR_MAP = "cividis"        # colour-blind safe, as the logit lens's and the attention heatmap's
LEGEND_STOPS = (0.0, 0.25, 0.5, 0.75, 1.0)
ALTERNATIVES = 5             # the top of the final distribution a token's details list
GAP = 3                      # px between two token boxes
PAD = 3                      # px inside a token box

add_messages({
    "transcript.caption": {"en": "Chosen tokens shaded by the probability they were chosen with · outlined: this "
                                 "frame's token · grey: prompt · italic, dashed: reasoning",
                           "zh": "选出的Token按被选中时的概率着色 · 加框：这一帧的Token · 灰色：提示 · 斜体虚线框：推理"},
    "transcript.tip": {"en": "The probability is the final one of the token's step (after every sampling stage). "
                             "Hover a token, or click it, for its numbers; click an alternative to force it from "
                             "that step (Ctrl+Z undoes).",
                       "zh": "概率取自该Token那一步的最终分布（经过所有抽样步骤之后）。把鼠标停在Token上或点击它，"
                             "可看到数字；点击一个备选项，就从那一步起强制选它（Ctrl+Z撤销）。"},
    "transcript.legend": {"en": "probability chosen with", "zh": "被选中时的概率"},
    "transcript.reasoning": {"en": "reasoning", "zh": "推理"},
    "transcript.details": {"en": "{piece} (step {step}{how}): p = {prob} · surprisal {bits} bits · top {n}: {top}",
                           "zh": "{piece}（第{step}步{how}）：p = {prob} · 意外度 {bits} 比特 · 前{n}名：{top}"},
    "transcript.forced": {"en": ", forced", "zh": "，人为指定"},
    "transcript.as_reasoning": {"en": ", reasoning", "zh": "，推理"},
    "transcript.prompt_token": {"en": "{piece}: part of the prompt, given, not chosen (no probability).",
                                "zh": "{piece}：属于提示，是给定的，不是选出的（没有概率）。"},
    "transcript.nothing": {"en": "No token chosen yet: step forward past the Prefill.",
                           "zh": "还没有选出Token：前进到Prefill之后。"},
    "transcript.force": {"en": "Force:", "zh": "强制选："},
    "transcript.force_tip": {"en": "Select {piece} at step {step} instead; later steps follow from it (Ctrl+Z undoes).",
                             "zh": "在第{step}步改选{piece}，后面的步骤随之重算（Ctrl+Z撤销）。"},
    "transcript.rejected": {"en": "Not forced: {error}", "zh": "未能强制：{error}"},
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


class TokenFlow(QWidget):
    """The tokens as boxes that wrap like text; a text taller than the room keeps its end
    (the newest tokens) under a "…"; the colour scale with its numbers under the text."""

    def __init__(self, panel: "TranscriptPanel"):
        super().__init__(panel)
        self.panel = panel
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
        return QSize(int(m.horizontalAdvance("M") * 24), int(self._line_h() + self.legend_h()))

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
        p.drawText(row, Qt.AlignmentFlag.AlignVCenter, title)
        x = area.left() + m.horizontalAdvance(title) + 8
        swatch = m.horizontalAdvance("0.75") + 2 * PAD + 4
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


class TranscriptPanel(Panel):
    panel_id = "transcript"
    title_key = "transcript.title"
    SLIDE_STRETCHES = True        # the text fills the room a slide gives it (its start elides)

    def __init__(self, session: Session, parent=None):
        super().__init__(session, parent)
        self.caption = self.tinted(QLabel(wordWrap=True), "muted")
        self.text = TokenFlow(self)
        self.details = QLabel(wordWrap=True)
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error = self.tinted(QLabel(wordWrap=True), "error")
        self.force_label = QLabel()
        self.buttons = [QPushButton() for _ in range(ALTERNATIVES)]
        self.force_row = QWidget()
        # the buttons share the width they get (a narrow tab clips the last one), never widen the desk's column
        self.force_row.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        row = QHBoxLayout(self.force_row)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.force_label)
        for button in self.buttons:
            button.clicked.connect(lambda _=False, b=button: self._force(b))
            row.addWidget(button)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.caption)
        layout.addWidget(self.text)
        layout.addWidget(self.details)
        layout.addWidget(self.error)
        layout.addWidget(self.force_row)
        layout.addStretch(1)
        self.error.hide()
        self._chosen: tuple = (None, [], {})     # the run read, its choices_of, the Chosen read so far
        self.pinned: int | None = None            # a token clicked: its details until the frame changes
        self._frame_key = None
        self.refresh()

    def slide_chrome(self) -> list[QWidget]:
        return [self.force_row, self.error]

    def slide_content_size(self) -> QSize:
        size = self.text.sizeHint()
        labels = (self.caption, self.details)
        return QSize(size.width(), size.height() + sum(label.sizeHint().height() for label in labels))

    def _chosen_at(self, run: Run, index: int) -> Chosen | None:
        """Output token `index`'s numbers (None past what the run's steps chose)."""
        if self._chosen[0] is not run:
            self._chosen = (run, choices_of(run), {})
        _, choices, cache = self._chosen
        if index >= len(choices):
            return None
        if index not in cache:
            cache[index] = chosen_of(*choices[index])
        return cache[index]

    def tokens(self) -> list[Token]:
        """The frame's visible tokens: the prompt, then the chosen ones with their step's numbers."""
        s = self.session
        run, vocab, ids = s.run, s.model.vocab, s.frame.visible_ids
        n_prompt = len(run.prompt_ids)
        flags = reasoning_flags(run.prompt_ids, ids[n_prompt:], vocab)
        out = []
        for i, token_id in enumerate(ids):
            chosen = self._chosen_at(run, i - n_prompt) if i >= n_prompt else None
            out.append(Token(int(token_id), vocab.display_piece(int(token_id)),
                             vocab.piece_text(int(token_id)).endswith("\n"), chosen,
                             i >= n_prompt and flags[i - n_prompt]))
        return out

    def details_of(self, index: int) -> str:
        """A token's numbers in words: probability, surprisal in bits, the top alternatives."""
        token = self.text.tokens[index]
        if token.chosen is None:
            return self.tr("transcript.prompt_token", piece=token.piece)
        c = token.chosen
        how = (self.tr("transcript.forced") if c.forced else "") + \
              (self.tr("transcript.as_reasoning") if token.reasoning else "")
        top = ", ".join(f"{self.piece(t)} {prob_text(p)}" for t, p in zip(c.top_ids, c.top_probs))
        bits = surprisal_bits(c.prob)
        return self.tr("transcript.details", piece=token.piece, step=c.step, how=how, prob=prob_text(c.prob),
                       bits="∞" if math.isinf(bits) else f"{bits:.2f}", n=len(c.top_ids), top=top)

    def shown(self) -> int | None:
        """The token whose details are under the text: the one clicked, else the frame's."""
        return self.pinned if self.pinned is not None else self.text.current

    def pin(self, index: int) -> None:
        self.pinned = index
        self._show_details()

    def _force(self, button: QPushButton) -> None:
        token_id, step = button.property("token_id"), button.property("step")
        try:
            self.session.force(int(step), int(token_id))
        except ExplorerError as err:
            self.error.setText(self.tr("transcript.rejected", error=err))
            self.error.show()
            return
        self.error.hide()

    def draw(self) -> None:
        """The frame's text (out of sight, a tab, nothing is read until it is shown: reading
        every step's probabilities makes core keep a vocabulary-sized array per step)."""
        s = self.session
        self.caption.setText(self.tr("transcript.caption"))
        self.caption.setToolTip(self.tr("transcript.tip"))
        self.force_label.setText(self.tr("transcript.force"))
        tokens = self.tokens()
        shown = (s.run, s.frame.visible_ids)
        if self._frame_key is None or self._frame_key[0] is not shown[0] or self._frame_key[1] != shown[1]:
            self.pinned = None                  # another frame or run: the details follow its token again
            self._frame_key = shown
        self.text.tokens = tokens
        n_prompt = len(s.run.prompt_ids)
        self.text.current = len(tokens) - 1 if len(tokens) > n_prompt else None
        self._show_details()
        self.text.updateGeometry()
        self.text.update()

    def _show_details(self) -> None:
        index = self.shown()
        self.details.setText(self.tr("transcript.nothing") if index is None else self.details_of(index))
        chosen = None if index is None else self.text.tokens[index].chosen
        for n, button in enumerate(self.buttons):
            if chosen is None or not chosen.forcible or n >= len(chosen.top_ids):
                button.hide()
                continue
            token_id = chosen.top_ids[n]
            selected = token_id == self.text.tokens[index].id
            button.setText(("✓ " if selected else "") + f"{self.piece(token_id)} {chosen.top_probs[n]:.2f}")
            button.setEnabled(not selected)
            button.setProperty("token_id", token_id)
            button.setProperty("step", chosen.step)
            button.setToolTip(self.tr("transcript.force_tip", piece=self.piece(token_id), step=chosen.step))
            button.show()
        self.force_label.setVisible(chosen is not None and chosen.forcible)
