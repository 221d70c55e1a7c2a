"""One painted line of the text so far (`session.text_so_far`): the prompt in the muted
colour, the output in bold, reasoning in italics inside a dashed box, the bytes of an
unfinished character muted; a long text keeps its end and starts with "…". The timeline
panel shows it under its counts, and a slide above its panels."""

from __future__ import annotations

from html import escape

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from ...core.tokens.vocab import one_line
from ...i18n import add_messages, tr
from ...session.text_so_far import TextPart, plain_text
from ..theme import THEMES, Theme

add_messages({
    "text_line.label": {"en": "Text so far:", "zh": "目前的文字："},
    "text_line.label_reasoning": {"en": "Text so far (reasoning boxed):", "zh": "目前的文字（推理在框内）："},
    "text_line.tip": {"en": "The prompt (grey) and the tokens selected so far (bold), decoded as text. "
                            "Reasoning (italics, in a dashed box) is generated and cached like the rest; "
                            "a chat window hides it. <0x…> marks the bytes of a character not yet complete.",
                      "zh": "提示（灰色）和目前选出的Token（粗体）解码成的文字。推理（斜体、虚线框内）和其余部分"
                            "一样被生成和缓存，只是聊天窗口不显示它。<0x…>表示一个字还没凑齐的字节。"},
})

PAD = 4           # px around the text and inside a reasoning box


class TextLine(QWidget):
    """The text so far, on one line."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._parts: tuple[TextPart, ...] = ()
        self._lang = "en"
        self._theme: Theme = THEMES["light"]
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def set_parts(self, parts: tuple[TextPart, ...], lang: str, theme: Theme) -> None:
        if (parts, lang, theme) == (self._parts, self._lang, self._theme):
            return
        self._parts, self._lang, self._theme = parts, lang, theme
        self.setToolTip(self.tooltip_text())
        self.updateGeometry()
        self.update()

    def label(self) -> str:
        reasoning = any(p.kind == "reasoning" for p in self._parts)
        return tr("text_line.label_reasoning" if reasoning else "text_line.label", self._lang)

    def text(self) -> str:
        """What the line says in full (the label, then the text on one line)."""
        return f"{self.label()} {plain_text(self._parts)}"

    def tooltip_text(self) -> str:
        """The whole text, reasoning in italics, then what the marks mean."""
        def shown(part):
            text = escape(one_line(part.text))
            return {"prompt": text, "answer": f"<b>{text}</b>", "reasoning": f"<i>[{text}]</i>"}.get(part.kind, text)
        return f"<p>{''.join(shown(p) for p in self._parts)}</p><p>{escape(tr('text_line.tip', self._lang))}</p>"

    def _font(self, kind: str) -> QFont:
        font = QFont(self.font())
        font.setBold(kind in ("answer", "label"))
        font.setItalic(kind == "reasoning")
        return font

    def sizeHint(self) -> QSize:
        width = sum(w for _, _, w in self._runs(self._shown_parts()))
        return QSize(round(width) + 2 * PAD, self.minimumSizeHint().height())

    def minimumSizeHint(self) -> QSize:
        height = max(QFontMetricsF(self._font(k)).height() for k in ("label", "reasoning"))
        return QSize(0, round(height) + 2 * PAD + 2)

    def _shown_parts(self) -> list[tuple[str, str]]:
        return [("label", self.label() + " ")] + [(p.kind, one_line(p.text)) for p in self._parts]

    def _runs(self, parts) -> list[tuple[str, str, float]]:
        """(kind, text, width) of each part; a reasoning box adds its padding."""
        return [(k, t, QFontMetricsF(self._font(k)).horizontalAdvance(t) + (2 * PAD if k == "reasoning" else 0))
                for k, t in parts]

    def fitted(self, room: float) -> list[tuple[str, str, float]]:
        """The runs that fit `room` px: all, or the end of the text after the label and "…"."""
        label, *rest = self._runs(self._shown_parts())
        if label[2] + sum(w for _, _, w in rest) <= room:
            return [label, *rest]
        mark = ("muted", "…", QFontMetricsF(self._font("prompt")).horizontalAdvance("…"))
        room -= label[2] + mark[2]
        kept: list[tuple[str, str, float]] = []
        for kind, text, _ in reversed(rest):          # from the end: whole parts, then the end of one
            fits = self._runs([(kind, text)])[0]
            if fits[2] <= room:
                kept.insert(0, fits)
                room -= fits[2]
                continue
            low, high = 0, len(text)                  # the longest end of `text` that fits
            while low < high:
                mid = (low + high + 1) // 2
                low, high = (mid, high) if self._runs([(kind, text[-mid:])])[0][2] <= room else (low, mid - 1)
            if low:
                kept.insert(0, self._runs([(kind, text[-low:])])[0])
            break
        return [label, mark, *kept]

    def paintEvent(self, _event) -> None:
        t = self._theme
        colors = {"label": t.text, "prompt": t.muted, "muted": t.muted, "answer": t.text,
                  "reasoning": t.muted, "incomplete": t.muted}
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        x, height = float(PAD), self.height()
        for kind, text, width in self.fitted(self.width() - 2 * PAD):
            p.setFont(self._font(kind))
            box = QRectF(x, 1, width, height - 2)
            if kind == "reasoning":
                p.setPen(QPen(QColor(t.muted), 1.5, Qt.PenStyle.DashLine))
                p.setBrush(Qt.BrushStyle.NoBrush)
                p.drawRoundedRect(box, 4, 4)
                box = box.adjusted(PAD, 0, -PAD, 0)
            p.setPen(QColor(colors.get(kind, t.text)))
            p.drawText(box, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, text)
            x += width
        p.end()
