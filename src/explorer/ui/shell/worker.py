"""Work off the UI thread (`Jobs`), and the Session runner that computes a big model's
changes in the background (`SessionRunner`)."""

from __future__ import annotations

import threading
import traceback
from typing import Callable

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal, Slot

from ...core.errors import ExplorerError
from ...session import Session

BIG_VOCABULARY = 1000      # more pieces than this: too slow to compute on the UI thread
BIG_LAYERS = 4             # more layers than this: likewise


def is_big(model) -> bool:
    """Is a forward pass of `model` slow enough to need the background?"""
    layers = getattr(getattr(model, "config", None), "n_layers", 0) or 0
    return len(model.vocab) > BIG_VOCABULARY or layers > BIG_LAYERS


def error_message(exc: BaseException, tb: str = "") -> str:
    """What report_error shows: the explorer's own message, or the type, message and the end
    of the traceback of an unexpected exception."""
    if isinstance(exc, ExplorerError):
        return str(exc)
    if isinstance(exc, OSError):
        return f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": ")
    return f"{type(exc).__name__}: {exc}" + (f"\n\n{tb[-2000:]}" if tb else "")


class _Signals(QObject):
    done = Signal(int, object)            # job id, result
    failed = Signal(int, object, str)     # job id, exception, traceback
    progress = Signal(int, int, int)      # job id, done, total


class _Job(QRunnable):
    def __init__(self, job_id: int, fn, signals: _Signals):
        super().__init__()
        self.setAutoDelete(True)
        self.job_id, self.fn, self.signals = job_id, fn, signals

    def run(self) -> None:
        report = lambda done, total: self.signals.progress.emit(self.job_id, int(done), int(total))
        try:
            result = self.fn(report)
        except BaseException as exc:          # noqa: BLE001 - every failure goes back to the window
            self.signals.failed.emit(self.job_id, exc, traceback.format_exc())
        else:
            self.signals.done.emit(self.job_id, result)


class Jobs(QObject):
    """`start(fn, done, failed, progress)`: fn(report) runs in the pool; the callbacks run on
    the UI thread (this object's thread), as queued signals."""

    def __init__(self, parent=None, threads: int = 2):
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(threads)
        self._signals = _Signals(self)
        self._signals.done.connect(self._done)
        self._signals.failed.connect(self._failed)
        self._signals.progress.connect(self._progress)
        self._callbacks: dict[int, tuple] = {}
        self._next_id = 0

    def start(self, fn: Callable, done: Callable, failed: Callable,
              progress: Callable[[int, int], None] | None = None) -> int:
        self._next_id += 1
        self._callbacks[self._next_id] = (done, failed, progress)
        self.pool.start(_Job(self._next_id, fn, self._signals))
        return self._next_id

    def wait(self, msecs: int = 60000) -> bool:
        """Block until every job has ended (closing the window); True if they did."""
        return self.pool.waitForDone(msecs)

    @Slot(int, object)
    def _done(self, job_id: int, result) -> None:
        callbacks = self._callbacks.pop(job_id, None)
        if callbacks is not None:
            callbacks[0](result)

    @Slot(int, object, str)
    def _failed(self, job_id: int, exc, tb: str) -> None:
        callbacks = self._callbacks.pop(job_id, None)
        if callbacks is not None:
            callbacks[1](exc, tb)

    @Slot(int, int, int)
    def _progress(self, job_id: int, done: int, total: int) -> None:
        callbacks = self._callbacks.get(job_id)
        if callbacks is not None and callbacks[2] is not None:
            callbacks[2](done, total)


class SessionRunner(QObject):
    """A Session's `runner` that computes in the background.

    A change then only records what was asked for (the Session stays Qt-free); the runner
    computes `session.prepare()` in the pool and `session.apply()`s the result on the UI
    thread. Changes made while one computation runs only update what was asked for, so a
    slider drag is never queued tick by tick. `cancel()` stops the running generation after
    its current step (finish reason "cancelled")."""

    started = Signal()             # a computation began
    progress = Signal(int, int)    # generated steps done, total
    idle = Signal()                # nothing runs any more
    failed = Signal(str)           # a message for report_error

    def __init__(self, session: Session, jobs: Jobs, parent=None):
        super().__init__(parent)
        self.session, self.jobs = session, jobs
        self._cancel: threading.Event | None = None     # set: the running computation stops
        self.cancelled = False                          # the last computation was cancelled

    @property
    def busy(self) -> bool:
        return self._cancel is not None

    def __call__(self, session: Session) -> None:
        """The Session asks: something was changed."""
        if not self.busy:            # else: the next round computes it (and whatever follows)
            self._start()

    def cancel(self) -> None:
        if self._cancel is not None:
            self._cancel.set()

    def _start(self) -> None:
        cancel = self._cancel = threading.Event()
        session = self.session
        self.cancelled = False
        self.started.emit()
        self.jobs.start(lambda report: session.prepare(cancel=cancel.is_set, on_step=report),
                        self._done, self._failed, self.progress.emit)

    def _done(self, pending) -> None:
        cancelled = self._cancel.is_set()
        self._cancel = None
        self.session.apply(pending)       # False when the session moved on meanwhile: see below
        if cancelled:
            self.cancelled = True
            self.session.discard_requests()   # a cancel stops what was asked for meanwhile too
        elif self.session.behind:
            self._start()
            return
        self.idle.emit()

    def _failed(self, exc, tb: str) -> None:
        self._cancel = None
        self.session.discard_requests()       # nothing changes: the window keeps what it shows
        self.failed.emit(error_message(exc, tb))
        self.idle.emit()
