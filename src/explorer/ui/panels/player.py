"""Player: first / previous / play-pause / next / last, a dwell time, the frame counter
"3 / 8" and the frame's title. Playing stops by itself at the last frame."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QRect, Qt, QTimer
from PySide6.QtWidgets import QDoubleSpinBox, QHBoxLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout

from ...i18n import add_messages
from ...session import Session
from ...session.changes import badge_text
from ...session.narration import frame_title
from .panel import Panel

add_messages({
    "player.first": {"en": "|◀ First", "zh": "|◀ 第一步"},
    "player.prev": {"en": "◀ Previous", "zh": "◀ 上一步"},
    "player.play": {"en": "▶ Play", "zh": "▶ 播放"},
    "player.pause": {"en": "‖ Pause", "zh": "‖ 暂停"},
    "player.next": {"en": "Next ▶", "zh": "下一步 ▶"},
    "player.last": {"en": "Last ▶|", "zh": "最后 ▶|"},
    "player.dwell": {"en": "Dwell", "zh": "停留"},
    "player.seconds": {"en": " s", "zh": " 秒"},
    "player.counter": {"en": "Frame {i} / {n}", "zh": "第 {i} / {n} 步"},
    "player.back_to_lesson": {"en": "Back to the lesson's settings", "zh": "恢复课程设置"},
})


LINE_SAMPLE = "Ag 国"  # what one line of a title must hold, Latin and Chinese


def one_line_height(label: QLabel) -> int:
    """The height a label needs for one line of its type, Latin and Chinese (whose fallback
    font stands taller than the label's own line spacing)."""
    rect = label.fontMetrics().boundingRect(QRect(0, 0, 1 << 20, 1 << 20), Qt.TextFlag.TextWordWrap, LINE_SAMPLE)
    return rect.height() + 4


class FittedTitle(QLabel):
    """A word-wrapped title held to the label's height: one too long for it ends in "…",
    and hovering shows it whole. The height is the caller's (fixed, so that a new title
    never relayouts the window)."""

    def __init__(self):
        super().__init__(wordWrap=True)
        self._full = ""

    def set_title(self, text: str) -> None:
        if text != self._full:            # a slider tick that leaves the title as it was: no refit
            self._full = text
            self._fit()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit()

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._fit()

    def _fits(self, text: str) -> bool:
        room = self.contentsRect()
        flags = Qt.TextFlag.TextWordWrap | Qt.AlignmentFlag.AlignLeft
        return self.fontMetrics().boundingRect(QRect(0, 0, room.width(), 1 << 20), flags, text).height() <= room.height()

    def _fit(self) -> None:
        text = self._full
        if self.contentsRect().width() > 0 and not self._fits(text):
            short, long = 0, len(text)          # the longest start that fits with "…" after it
            while short < long:
                mid = (short + long + 1) // 2
                short, long = (mid, long) if self._fits(text[:mid].rstrip() + "…") else (short, mid - 1)
            text = text[:short].rstrip() + "…"
        tip = self._full if text != self._full else ""
        if tip != self.toolTip():
            self.setToolTip(tip)
        if text != self.text():
            self.setText(text)


class PlayerPanel(Panel):
    panel_id = "player"
    title_key = "player.title"

    def __init__(self, session: Session, parent=None):
        super().__init__(session, parent)
        self.timer = QTimer(self)
        self.timer.timeout.connect(self._tick)
        self.buttons = {name: QPushButton() for name in ("first", "prev", "play", "next", "last")}
        actions = {"first": session.first, "prev": session.prev, "play": self.toggle_play,
                   "next": session.next, "last": session.last}
        for name, button in self.buttons.items():
            button.clicked.connect(actions[name])
        self.dwell = QDoubleSpinBox()
        self.dwell.setRange(0.2, 30.0)
        self.dwell.setSingleStep(0.5)
        self.dwell.setValue(2.0)
        self.dwell.valueChanged.connect(lambda v: self.timer.setInterval(int(v * 1000)))
        self.dwell_label = QLabel()
        self.counter = QLabel()
        self.title = self.emphasised(FittedTitle(), 1.3)
        # what the teacher changed from the lesson, on the buttons' row (no relayout when it comes)
        self.changed = self.tinted(FittedTitle(), "error")      # one line; too long for it: "…" and a tooltip
        self.changed.setObjectName("changed-badge")
        self.changed.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.back_to_lesson = QPushButton()
        self.back_to_lesson.clicked.connect(session.restore_lesson_settings)
        row = QHBoxLayout()
        for name in ("first", "prev", "play", "next", "last"):
            row.addWidget(self.buttons[name])
        row.addSpacing(16)
        row.addWidget(self.dwell_label)
        row.addWidget(self.dwell)
        row.addSpacing(16)
        row.addWidget(self.counter)
        row.addSpacing(16)
        row.addWidget(self.changed, 1)
        row.addWidget(self.back_to_lesson)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.addLayout(row)
        layout.addWidget(self.title)
        self.refresh()

    @property
    def playing(self) -> bool:
        return self.timer.isActive()

    def toggle_play(self) -> None:
        if self.playing:
            self.timer.stop()
        else:
            if self.session.at_end:
                self.session.first()
            self.timer.start(int(self.dwell.value() * 1000))
        self.refresh()

    def _tick(self) -> None:
        self.session.next()
        if self.session.at_end:
            self.timer.stop()
            self.refresh()

    def refresh(self) -> None:
        s = self.session
        for name, button in self.buttons.items():
            key = "pause" if name == "play" and self.playing else name
            button.setText(self.tr(f"player.{key}"))
        self.buttons["first"].setEnabled(s.cursor > 0)
        self.buttons["prev"].setEnabled(s.cursor > 0)
        self.buttons["next"].setEnabled(not s.at_end)
        self.buttons["last"].setEnabled(not s.at_end)
        self.dwell_label.setText(self.tr("player.dwell"))
        if self.dwell.suffix() != self.tr("player.seconds"):   # setSuffix always relayouts
            self.dwell.setSuffix(self.tr("player.seconds"))
        self.counter.setText(self.tr("player.counter", i=s.cursor + 1, n=len(s.frames)))
        line = one_line_height(self.changed)
        if self.changed.maximumHeight() != line:
            self.changed.setFixedHeight(line)
        self.changed.set_title(badge_text(s.frame.changed, s.lang))
        self.back_to_lesson.setText(self.tr("player.back_to_lesson"))
        self.back_to_lesson.setVisible(bool(s.frame.changed))
        # two lines, fixed: a new title (a slider moves its probability) must not relayout the window
        lines = 2 * self.title.fontMetrics().lineSpacing() + 4
        if self.title.maximumHeight() != lines:
            self.title.setFixedHeight(lines)
        self.title.set_title(frame_title(s.frame, s.run, s.model.vocab, s.lang))
