"""Base of every panel: takes the session in its constructor, subscribes to it, and
redraws from what it holds. Subclasses implement `refresh()`."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtWidgets import QToolTip, QWidget

from ...i18n import tr
from ...session import Session, SessionEvent
from ..theme import THEMES, Theme, tint_text
from .question_card import QuestionCard


def answer_tooltip(event, text: str, widget: QWidget) -> bool:
    """Answer a ToolTip event with `text` (or hide the tip where there is nothing to say);
    True: the event is handled."""
    if text:
        QToolTip.showText(event.globalPos(), text, widget)
    else:
        QToolTip.hideText()
    return True


class Panel(QWidget):
    panel_id = "panel"            # stable name for layouts, exports and tests
    title_key = "panel.panel"     # i18n key of the dock title
    SLIDE_GROWTH = 1.0            # how much larger than the slide's body type a slide may draw it
    SLIDE_STRETCHES = False       # True: a chart, drawn to fill whatever room it gets
    SLIDE_ELIDES = False          # True: on a slide it leaves out what has no room, around a "…"
    on_slide = False              # a copy drawn on a slide (`show_on_slide`)
    # a panel that implements `draw` instead of `refresh` draws nothing out of sight (a tab behind another)

    def __init__(self, session: Session, parent=None):
        super().__init__(parent)
        self.session = session
        self.setFocusPolicy(Qt.FocusPolicy.ClickFocus)     # a click on a panel takes the keys from a text field
        self.theme: Theme = THEMES["light"]
        self._emphasised_labels: list[tuple[QWidget, float]] = []     # (label, type scale): see `emphasised`
        self._tinted_labels: list[tuple[QWidget, str]] = []           # (label, theme colour): see `tinted`
        self._card: QuestionCard | None = None                          # over the panel while a question hides it
        unsubscribe = [session.subscribe(e, self._on_change)
                       for e in SessionEvent]
        # a closure, not a method: the Python side may be half gone when Qt destroys the widget
        self.destroyed.connect(lambda *_: [u() for u in unsubscribe])

    def emphasised(self, label: QWidget, scale: float) -> QWidget:
        """`label` in bold, `scale` times the panel's type size, now and after every zoom or
        presentation-mode change (a child given its own size stops following its parent's)."""
        self._emphasised_labels.append((label, scale))
        self._size_emphasised(label, scale)
        return label

    def _size_emphasised(self, label: QWidget, scale: float) -> None:
        font = self.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * scale)
        label.setFont(font)

    def tinted(self, label: QWidget, role: str) -> QWidget:
        """`label`'s text in the theme's colour `role` ("muted", "error"), now and after every
        theme change. A palette, not a style sheet: a styled widget keeps the font it was
        built with and stops following zoom and presentation mode."""
        self._tinted_labels.append((label, role))
        self._tint(label, role)
        return label

    def _tint(self, label: QWidget, role: str) -> None:
        tint_text(label, self.theme.color(role))

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange and self._emphasised_labels:
            for label, scale in self._emphasised_labels:
                self._size_emphasised(label, scale)
            self.refresh()              # layouts sized from the headings' type follow it

    # ------------------------------------------------------------------ slides
    def show_on_slide(self) -> None:
        """Draw from now on for a slide (this panel is a copy made for one): without the
        controls, interaction hints and scroll bars a projected picture has no use for."""
        self.on_slide = True
        for widget in self.slide_chrome():
            widget.hide()
        self.refresh()
        self.sync_question()

    def slide_chrome(self) -> list[QWidget]:
        """The panel's controls and hints, hidden on a slide."""
        return []

    def slide_content_size(self) -> QSize:
        """The size the panel's content needs at its current type: a slide gives the type
        up to SLIDE_GROWTH times more size until the content fills the panel's room, and
        draws a panel that needs more than its room smaller (or the panel elides)."""
        return self.minimumSizeHint()

    def slide_growth_size(self) -> QSize:
        """What must fit its place for the panel's type to grow (default: all its content)."""
        return self.slide_content_size()

    def slide_minimum_size(self) -> QSize:
        """For a panel that elides (SLIDE_ELIDES): the least it needs, with most left out."""
        return self.slide_content_size()

    def slide_least_height(self, width: float) -> int:
        """The least height that holds the panel at its type in a place `width` wide: what
        it needs with all it can leave out left out (a panel whose text wraps needs less
        as it widens)."""
        return (self.slide_minimum_size() if self.SLIDE_ELIDES else self.slide_content_size()).height()

    def has_content(self) -> bool:
        """Whether the panel has something to show for the session's current frame, read from
        the session's records (a panel that has nothing, such as attention for a model without
        layers, is left out of presentation mode). Every panel has, unless it says otherwise."""
        return True

    def set_presenting(self, presenting: bool) -> None:
        """Presentation mode begins or ends: a panel may lay itself out for the projector
        (the window's own panels only; a slide's copies never present)."""

    def model_has_layers(self) -> bool:
        """Whether the session's model has layers (a cache, attention) to show: a logits or a
        table model has none."""
        return bool(self.session.run.steps[0].trace.layers)

    def tr(self, key: str, **values) -> str:
        return tr(key, self.session.lang, **values)

    def piece(self, token_id) -> str:
        """How the session's vocabulary shows one token."""
        return self.session.model.vocab.display_piece(int(token_id))

    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        for label, role in self._tinted_labels:
            self._tint(label, role)
        self.refresh()
        self.sync_question()

    def _on_change(self, _session) -> None:
        self.refresh()
        self.sync_question()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if getattr(self, "_stale", False):
            self.refresh()
            if self.layout() is not None:
                self.layout().activate()           # laid out for what it drew now, before it paints

    def sync_question(self) -> None:
        """Covered by the question's card while the session's open question hides this panel."""
        s = self.session
        hidden = s.hidden_panels
        if self.panel_id in hidden:
            if self._card is None:
                self._card = QuestionCard(self)
            self._card.show_question(s.frame.ask[s.lang], self.panel_id, s.lang, self.on_slide, self.theme,
                                     first=self.panel_id == hidden[0])
        elif self._card is not None:
            self._card.hide()

    def fit_card(self) -> None:
        """The question's card laid out for the panel's size now (a slide's panels are
        resized while hidden, where no resize event reaches the card until they paint)."""
        if self.covered:
            self._card.fit()

    @property
    def covered(self) -> bool:
        """Hidden by a question's card (its content is not on screen)."""
        return self._card is not None and not self._card.isHidden()

    def refresh(self) -> None:
        """Every panel overrides this, or `draw` instead: such a panel, out of sight, only
        notes that it must draw when it is shown, since what it draws costs the session work
        (a lens, every step's probabilities) that a tab nobody opens should not."""
        self._stale = not self.isVisible() and not self.on_slide
        if not self._stale:
            self.draw()

    def draw(self) -> None:  # pragma: no cover - a panel that waits until it is seen overrides it
        raise NotImplementedError
