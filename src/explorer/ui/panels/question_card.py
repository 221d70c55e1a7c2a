"""The card a question puts over a panel it hides: the question in large type and how the
answer comes (Reveal in the window, the next slide on a slide). It covers the whole panel,
opaque, so no pixel and no click of the panel's content gets past it until the answer."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from ...i18n import add_messages, tr
from ...session.panels import panel_title
from ..theme import Theme

QUESTION_SCALE = 1.6     # the question's type, times the panel's: it must read from the back row
MARK_SCALE = 3.0         # the "?" above it

add_messages({
    "question.reveal": {"en": "Press Reveal (V) to show the {panel}.", "zh": "按V键（揭晓答案）显示{panel}。"},
    "question.next_slide": {"en": "The {panel} follows on the next slide.", "zh": "{panel}在下一页揭晓。"},
    "question.hidden": {"en": "{panel}: hidden until the answer", "zh": "{panel}：答案揭晓前隐藏"},
})


class QuestionCard(QWidget):
    """Covers `panel` (a child of it, kept at its size) while a question hides it."""

    def __init__(self, panel: QWidget):
        super().__init__(panel)
        self.setAutoFillBackground(True)
        self.setAttribute(Qt.WidgetAttribute.WA_NoMousePropagation)
        self.mark = QLabel("?", alignment=Qt.AlignmentFlag.AlignCenter)
        self.question = QLabel(alignment=Qt.AlignmentFlag.AlignCenter, wordWrap=True)
        self.hint = QLabel(alignment=Qt.AlignmentFlag.AlignCenter, wordWrap=True)
        self.first = True              # this card asks the question (else it says what it hides)
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        for label in (self.mark, self.question, self.hint):
            layout.addWidget(label)
        layout.addStretch(1)
        self.hide()
        panel.installEventFilter(self)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if obj is self.parentWidget() and event.type() in (QEvent.Type.Resize, QEvent.Type.FontChange):
            self.fit()
        return False

    def show_question(self, question: str, panel_id: str, lang: str, on_slide: bool, theme: Theme,
                      first: bool) -> None:
        """The card for `question` over panel `panel_id`: the first hidden panel of a frame
        asks the question, any other says what it hides (the question once on a slide)."""
        name = panel_title(panel_id, lang)
        self.question.setText(question if first else tr("question.hidden", lang, panel=name))
        self.hint.setText(tr("question.next_slide" if on_slide else "question.reveal", lang, panel=name))
        self.first = first
        palette = self.palette()
        palette.setColor(QPalette.ColorRole.Window, QColor(theme.background))
        for label, colour in ((self.mark, theme.accent), (self.question, theme.text), (self.hint, theme.muted)):
            label_palette = label.palette()
            label_palette.setColor(QPalette.ColorRole.WindowText, QColor(colour))
            label.setPalette(label_palette)
        self.setPalette(palette)
        self.fit()
        self.show()
        self.raise_()

    def fit(self) -> None:
        """The card's place and type follow the panel's: the question as large as the panel's
        height lets it be (a short strip such as a slide's timeline drops the "?" first,
        then sets the question smaller, never below the panel's own type)."""
        panel = self.parentWidget()
        self.setGeometry(panel.rect())
        tries = ((True, QUESTION_SCALE), (False, QUESTION_SCALE), (False, 1.25), (False, 1.0)) if self.first \
            else ((False, 1.0),)
        for mark, scale in tries:
            self._set_type(mark, scale)
            if self.layout().totalHeightForWidth(panel.width()) <= panel.height():
                break

    def _set_type(self, mark: bool, scale: float) -> None:
        panel = self.parentWidget()
        self.mark.setVisible(mark)
        for label, size, bold in ((self.mark, MARK_SCALE, True), (self.question, scale, self.first),
                                  (self.hint, 1.0, False)):
            font = panel.font()
            font.setPointSizeF(font.pointSizeF() * size)
            font.setBold(bold)
            label.setFont(font)
