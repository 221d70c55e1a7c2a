"""Glossary panel: every key term of the course with its definition in the current
language, and a filter box. The explanation panel marks these terms in its text; clicking
one selects it here."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QLineEdit, QListWidget, QListWidgetItem, QVBoxLayout

from ...i18n import add_messages
from ...lessons.glossary import course_glossary, glossary_terms
from ...session import Session
from .panel import Panel

add_messages({
    "glossary.filter": {"en": "Filter terms…", "zh": "筛选术语…"},
    "glossary.count": {"en": "{shown} of {total} terms", "zh": "共{total}个术语，显示{shown}个"},
    "glossary.missing": {"en": "The glossary is not available: {why}", "zh": "术语表不可用：{why}"},
})


class GlossaryPanel(Panel):
    panel_id = "glossary"
    title_key = "glossary.title"

    def __init__(self, session: Session, parent=None):
        super().__init__(session, parent)
        self.filter = QLineEdit()
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self._apply_filter)
        self.count = QLabel()
        self.list = QListWidget()
        self.list.setWordWrap(True)
        self.list.setUniformItemSizes(False)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setVerticalScrollMode(QListWidget.ScrollMode.ScrollPerPixel)
        self.list.setAlternatingRowColors(True)     # one band per term: name line, then its definition
        self.list.setSpacing(2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.filter)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.count)
        self._lang = None
        self.refresh()

    # ------------------------------------------------------------------ read-only, for tests
    def selected_term(self) -> str | None:
        item = self.list.currentItem()
        return None if item is None or not item.isSelected() else item.data(Qt.ItemDataRole.UserRole)

    # ------------------------------------------------------------------ actions
    def select_term(self, term_id: str) -> bool:
        """Show `term_id` selected (the filter is cleared if it hid it); False if unknown."""
        item = self._item(term_id)
        if item is None:
            return False
        if item.isHidden():
            self.filter.clear()
        self.list.setCurrentItem(item)
        self.list.scrollToItem(item, QListWidget.ScrollHint.PositionAtTop)
        return True

    # ------------------------------------------------------------------ drawing
    def _item(self, term_id: str) -> QListWidgetItem | None:
        for i in range(self.list.count()):
            if self.list.item(i).data(Qt.ItemDataRole.UserRole) == term_id:
                return self.list.item(i)
        return None

    def refresh(self) -> None:
        lang = self.session.lang
        self.filter.setPlaceholderText(self.tr("glossary.filter"))
        if lang == self._lang:
            return                       # the terms do not change with the frame
        self._lang = lang
        current = self.selected_term()
        g, why = course_glossary()
        self.list.clear()
        if g is None:
            self.list.addItem(self.tr("glossary.missing", why=why))
        for term in glossary_terms():
            item = QListWidgetItem(f"{term.term[lang]}\n{term.definition[lang]}")
            item.setData(Qt.ItemDataRole.UserRole, term.id)
            item.setToolTip(term.definition[lang])
            self.list.addItem(item)
        self._apply_filter()
        if current is not None:
            self.select_term(current)

    def _apply_filter(self, *_args) -> None:
        needle = self.filter.text().strip().casefold()
        lang = self.session.lang
        terms = {t.id: t for t in glossary_terms()}
        shown = 0
        for i in range(self.list.count()):
            item = self.list.item(i)
            term = terms.get(item.data(Qt.ItemDataRole.UserRole))
            if term is None:
                continue
            words = " ".join([*(term.term[l] for l in ("en", "zh")), term.definition[lang], term.id])
            hit = not needle or needle in words.casefold()
            item.setHidden(not hit)
            shown += hit
        self.count.setText(self.tr("glossary.count", shown=shown, total=len(terms)))
