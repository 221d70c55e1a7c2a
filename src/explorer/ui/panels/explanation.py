"""Explanation panel: what happened on the current frame, why it matters, how it is
implemented, a common misconception and a check; glossary terms are marked and linked."""

from __future__ import annotations

from functools import lru_cache
from html import escape

from PySide6.QtCore import QUrl, Signal
from PySide6.QtGui import QCursor, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QTextBrowser, QToolTip, QVBoxLayout

from ...i18n import tr
from ...lessons.glossary import course_glossary, find_term
from ...session import Session
from ...session.narration import frame_explanation, frame_title
from ...session.panels import panel_title
from .panel import Panel

TERM_SCHEME = "term"          # links "term:kv-cache" in the explanation HTML



class ExplanationPanel(Panel):
    panel_id = "explanation"
    title_key = "explanation.title"
    term_clicked = Signal(str)      # a marked term was clicked: its glossary id

    def __init__(self, session: Session, parent=None):
        super().__init__(session, parent)
        self.view = QTextBrowser()
        self.view.setOpenLinks(False)
        self.view.highlighted.connect(self._hovered)
        self.view.anchorClicked.connect(self._clicked)
        self.last_tip = ""             # the definition shown last (hover or click)
        self._html = ""                # the whole text as HTML
        self._headings: tuple = ()     # (key, heading, colour) per section, as last set
        self._paragraphs: list[str] = []   # each section's paragraph HTML, as last set
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.view)
        self.refresh()

    def sections(self) -> dict[str, str]:
        """The frame's explanation; while its question is open only the question: the
        explanation tells the answer."""
        s = self.session
        if s.asking:
            panels = tr("list.sep", s.lang).join(panel_title(p, s.lang) for p in s.hidden_panels)
            return {"question": frame_title(s.frame, s.run, s.model.vocab, s.lang) + " "
                    + tr("question.wait", s.lang, panels=panels)}
        return frame_explanation(s.frame, s.run, s.model.vocab, s.lang)

    def refresh(self) -> None:
        lang = self.session.lang
        sections = self.sections()
        # the note that the lesson's text was written for other settings stands out
        headings = tuple((key, tr(f"section.{key}", lang), self.theme.error if key == "changed" else self.theme.accent)
                         for key in sections)
        paragraphs = [self._marked(text, lang) for text in sections.values()]
        self._html = "".join(
            f"<h3 style='color:{colour}; margin-bottom:2px'>{escape(heading)}</h3>"
            f"<p style='margin-top:0'>{paragraph}</p>"
            for (_key, heading, colour), paragraph in zip(headings, paragraphs))
        if headings != self._headings:           # setHtml relayouts the whole text
            self._headings = headings
            self.view.setHtml(self._html)
            self._dot_term_links(self.view.document().begin(), None)
        else:                                    # a slider changed a number: only that paragraph
            for k, (old, new) in enumerate(zip(self._paragraphs, paragraphs)):
                if old != new:
                    self._replace_paragraph(k, new)
        self._paragraphs = paragraphs

    def _replace_paragraph(self, k: int, html: str) -> None:
        """The text of section k's paragraph (block 2k + 1, after its heading) replaced:
        the document lays out just that block again."""
        block = self.view.document().findBlockByNumber(2 * k + 1)
        cursor = QTextCursor(block)
        cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor)
        cursor.insertHtml(html)
        self._dot_term_links(block, block.next())

    # ------------------------------------------------------------------ glossary terms
    def _marked(self, text: str, lang: str) -> str:
        return marked_html(text, lang, self.theme.text)

    def _dot_term_links(self, block, end) -> None:
        """Term links from `block` up to `end` (None: the last block) get a dotted
        underline (Qt's HTML import knows only solid ones)."""
        doc = self.view.document()
        cursor = QTextCursor(doc)
        dotted = QTextCharFormat()
        dotted.setFontUnderline(True)
        dotted.setUnderlineStyle(QTextCharFormat.UnderlineStyle.DotLine)
        while block.isValid() and block != end:
            it = block.begin()
            while not it.atEnd():
                fragment = it.fragment()
                if fragment.charFormat().anchorHref().startswith(f"{TERM_SCHEME}:"):
                    cursor.setPosition(fragment.position())
                    cursor.setPosition(fragment.position() + fragment.length(), QTextCursor.MoveMode.KeepAnchor)
                    cursor.mergeCharFormat(dotted)
                it += 1
            block = block.next()

    def term_tip(self, term_id: str) -> str:
        """The tooltip of a marked term: its name and definition in the current language."""
        term = find_term(term_id)
        if term is None:
            return ""
        lang = self.session.lang
        return (f"<b>{escape(term.term[lang], quote=False)}</b><br>"
                f"{escape(term.definition[lang], quote=False)}")

    @staticmethod
    def _term_of(url: QUrl) -> str | None:
        return url.path() if url.scheme() == TERM_SCHEME else None

    def _hovered(self, url: QUrl) -> None:
        term_id = self._term_of(url)
        if term_id is None:
            QToolTip.hideText()
            return
        self._show_tip(term_id)

    def _clicked(self, url: QUrl) -> None:
        term_id = self._term_of(url)
        if term_id is not None:
            self._show_tip(term_id)
            self.term_clicked.emit(term_id)

    def _show_tip(self, term_id: str) -> None:
        self.last_tip = self.term_tip(term_id)
        if self.last_tip:
            QToolTip.showText(QCursor.pos(), self.last_tip, self.view)


@lru_cache(maxsize=512)
def marked_html(text: str, lang: str, color: str) -> str:
    """`text` as HTML with the first mention of each glossary term made a dotted link.
    Cached: a slider drag redraws the same explanation many times."""
    g = course_glossary()[0]
    if g is None:
        return escape(text)
    out, at, seen = [], 0, set()
    for start, end, term_id in g.find(text, lang):
        if term_id in seen:
            continue
        seen.add(term_id)
        out += [escape(text[at:start]),
                f"<a href='{TERM_SCHEME}:{term_id}' style='color:{color}'>{escape(text[start:end])}</a>"]
        at = end
    return "".join(out) + escape(text[at:])
