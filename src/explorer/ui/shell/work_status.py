"""The status bar's account of background work: what runs, how far it got (with a live rate
in tokens per second while a big model generates), and a Cancel button."""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QLabel, QProgressBar, QPushButton, QStatusBar

from ...i18n import add_messages, tr
from ...session import Session
from .worker import SessionRunner

REUSED_STEP_SECONDS = 0.001   # a step reported faster than this was taken from the last Run, not computed
WORK_SHOWN_AFTER_MS = 300     # a computation shorter than this never shows the progress bar (no flicker,
                              # and a progress bar repaints itself at once on every value: costly while dragging)

add_messages({
    "work.computing": {"en": "Computing…", "zh": "正在计算…"},
    "work.progress": {"en": "%v / %m tokens", "zh": "%v / %m 个Token"},
    "work.rate": {"en": "{n} tokens · {rate:.1f} tok/s", "zh": "{n}个Token · 每秒{rate:.1f}个Token"},
    "work.steps": {"en": "{n} tokens", "zh": "{n}个Token"},
    "work.cancel.tip": {"en": "Stop generating after the current step (the run ends as cancelled)",
                        "zh": "在当前这一步之后停止生成（结束原因为“已取消”）"},
    "work.cancelled": {"en": "Cancelled after {n} tokens", "zh": "已取消：生成了{n}个Token"},
})


class WorkStatus:
    """The work widgets in `status_bar`: shown for a model load, an install or a lesson's
    preparation (`show`, `show_fraction`, `hide`), and by themselves while `runner`
    computes a change; Cancel calls `cancel`."""

    def __init__(self, status_bar: QStatusBar, runner: SessionRunner, session: Session,
                 cancel: Callable[[], None]):
        self.status_bar, self.runner, self.session = status_bar, runner, session
        self.label = QLabel()
        self.bar = QProgressBar()
        self.bar.setMaximumWidth(260)
        self.cancel_button = QPushButton()
        self.cancel_button.clicked.connect(cancel)
        for widget in (self.label, self.bar, self.cancel_button):
            status_bar.addPermanentWidget(widget)
            widget.hide()
        self._last, self._intervals = (0, 0.0), []
        self._timer = QTimer(status_bar, singleShot=True, interval=WORK_SHOWN_AFTER_MS)
        self._timer.timeout.connect(lambda: self._set_visible(True, self.runner.busy))
        runner.started.connect(self._started)
        runner.progress.connect(self._progress)
        runner.idle.connect(self._idle)

    def show(self, text: str, cancel: bool, delayed: bool = False) -> None:
        """The work widgets, at once or (`delayed`) only if the work is still running
        WORK_SHOWN_AFTER_MS later; a Cancel button if `cancel`."""
        lang = self.session.lang
        self.label.setText(text)
        self.bar.setRange(0, 0)                 # busy until the first step is reported
        self.bar.setTextVisible(False)
        self.cancel_button.setText(tr("cancel", lang))
        self.cancel_button.setToolTip(tr("work.cancel.tip", lang))
        if delayed:
            self._timer.start()
        else:
            self._set_visible(True, cancel)

    def show_fraction(self, text: str, done: int, total: int) -> None:
        """The bar at `done` of `total` in percent, and what is done in words."""
        self.bar.setRange(0, total)
        self.bar.setValue(done)
        self.bar.setFormat("%p%")
        self.bar.setTextVisible(True)
        self.label.setText(text)

    def hide(self) -> None:
        self._timer.stop()
        self._set_visible(False)

    def _set_visible(self, visible: bool, cancel: bool = False) -> None:
        for widget in (self.label, self.bar):
            widget.setVisible(visible)
        self.cancel_button.setVisible(visible and cancel)
        self.cancel_button.setEnabled(visible and cancel)

    def _started(self) -> None:
        self._last = (0, time.perf_counter())      # (steps done, when)
        self._intervals: list[float] = []          # seconds per step of the last computed steps
        self.show(tr("work.computing", self.session.lang), cancel=True, delayed=True)

    def _progress(self, done: int, total: int) -> None:
        """The bar, and a live rate over the last steps. Steps taken from the previous Run
        (no forward pass) arrive within microseconds: they do not count."""
        lang = self.session.lang
        self.bar.setRange(0, max(1, total))
        self.bar.setValue(min(done, total))
        self.bar.setFormat(tr("work.progress", lang))
        self.bar.setTextVisible(True)
        now, (last_done, last_time) = time.perf_counter(), self._last
        if done > last_done and now - last_time >= REUSED_STEP_SECONDS:
            self._intervals = (self._intervals + [(now - last_time) / (done - last_done)])[-8:]
        self._last = (done, now)
        if self._intervals:
            rate = len(self._intervals) / sum(self._intervals)
            self.label.setText(tr("work.rate", lang, n=done, rate=rate))
        else:
            self.label.setText(tr("work.steps", lang, n=done))

    def _idle(self) -> None:
        self.hide()
        if self.runner.cancelled:
            self.status_bar.showMessage(tr("work.cancelled", self.session.lang,
                                           n=len(self.session.run.output_ids)), 15000)
