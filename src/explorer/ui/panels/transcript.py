"""Transcript panel: the prompt and the tokens chosen so far as text, each chosen token
shaded by the probability it was chosen with (the step record's final distribution), with
a legend in numbers. Colour is never the only cue: a hover shows a token's probability, its
top alternatives and its surprisal in bits, and the details line under the text says the
same for the token of the frame on screen (outlined), or for a token clicked. Clicking an
alternative forces it from that step (the session's what-if; Ctrl+Z undoes). Reasoning
tokens are set in italics in a dashed box, after a "reasoning" label."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from ...core.decode.generate import Run
from ...core.errors import ExplorerError
from ...i18n import add_messages
from ...session import Session
from .panel import Panel
from .token_flow import ALTERNATIVES, Chosen, Token, TokenFlow, choices_of, chosen_of, run_tokens, token_details


add_messages({
    "transcript.caption": {"en": "Chosen tokens shaded by the probability they were chosen with · outlined: this "
                                 "frame's token · grey: prompt · italic, dashed: reasoning",
                           "zh": "选出的Token按被选中时的概率着色 · 加框：这一帧的Token · 灰色：提示 · 斜体虚线框：推理"},
    "transcript.tip": {"en": "The probability is the final one of the token's step (after every sampling stage). "
                             "Hover a token, or click it, for its numbers; click an alternative to force it from "
                             "that step (Ctrl+Z undoes).",
                       "zh": "概率取自该Token那一步的最终分布（经过所有抽样步骤之后）。把鼠标停在Token上或点击它，"
                             "可看到数字；点击一个备选项，就从那一步起强制选它（Ctrl+Z撤销）。"},
    "transcript.nothing": {"en": "No token chosen yet: step forward past the Prefill.",
                           "zh": "还没有选出Token：前进到Prefill之后。"},
    "transcript.force": {"en": "Force:", "zh": "强制选："},
    "transcript.force_tip": {"en": "Select {piece} at step {step} instead; later steps follow from it (Ctrl+Z undoes).",
                             "zh": "在第{step}步改选{piece}，后面的步骤随之重算（Ctrl+Z撤销）。"},
    "transcript.rejected": {"en": "Not forced: {error}", "zh": "未能强制：{error}"},
})


class TranscriptPanel(Panel):
    panel_id = "transcript"
    title_key = "transcript.title"
    SLIDE_STRETCHES = True        # the text fills the room a slide gives it (its start elides)
    SLIDE_ELIDES = True           # ... down to its newest line

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

    def slide_minimum_size(self) -> QSize:
        """The newest line of the text and the legend, with the caption and the details wrapped
        to the panel's width: a slide's half keeps the body type (the start elides)."""
        least = self.text.minimumSizeHint()
        return QSize(least.width(), self.slide_least_height(max(self.width(), least.width())))

    def slide_least_height(self, width: float) -> int:
        inner = max(1, int(width) - 8)
        labels = sum(label.heightForWidth(inner) for label in (self.caption, self.details) if label.isVisibleTo(self))
        return self.text.minimumSizeHint().height() + labels + 16

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
        return run_tokens(s.run, s.model.vocab, s.frame.visible_ids, lambda i: self._chosen_at(s.run, i))

    def details_of(self, index: int) -> str:
        return token_details(self.text.tokens[index], self.piece, self.tr)

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
