"""Explanation of the current frame: what happened, why it matters, how it is
implemented, a common misconception, and how to check it was done right."""

from __future__ import annotations

from html import escape

from PySide6.QtWidgets import QTextBrowser, QVBoxLayout

from ..i18n import add_messages, tr
from ..session.narration import frame_explanation
from .panel import Panel

add_messages({"explanation.title": {"en": "Explanation", "zh": "讲解"}})


class ExplanationPanel(Panel):
    panel_id = "explanation"
    title_key = "explanation.title"

    def __init__(self, session, parent=None):
        super().__init__(session, parent)
        self.view = QTextBrowser()
        self.view.setOpenLinks(False)
        self._html = ""
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.view)
        self.refresh()

    def sections(self) -> dict[str, str]:
        s = self.session
        return frame_explanation(s.frame, s.run, s.model.vocab, s.lang)

    def refresh(self) -> None:
        lang, accent = self.session.lang, self.theme.accent
        parts = [f"<h3 style='color:{accent}; margin-bottom:2px'>{escape(tr(f'section.{key}', lang))}</h3>"
                 f"<p style='margin-top:0'>{escape(text)}</p>"
                 for key, text in self.sections().items()]
        html = "".join(parts)
        if html != self._html:             # setHtml relayouts and repaints even when unchanged
            self._html = html
            self.view.setHtml(html)
