"""Start the window: fonts, the default session, error reporting, the event loop."""

from __future__ import annotations

import signal
import sys
import traceback

from ..core.errors import ExplorerError
from ..core.params_io import load_params
from ..interrupts import exit_status
from ..lessons import DEFAULT_LESSON_ID, load_lesson
from ..models import default_prompt, load_model
from ..session import Session


def build_window(settings_path: str | None = None, params_path: str | None = None, lesson: str | None = None,
                 model: str | None = None, compact: bool | None = None):
    """The window on a lesson (default: 我爱 to EOS), on a parameter file (prompt 我爱) or on a
    model by name or .gguf path (its default prompt; a big model computes off the UI
    thread). compact: the desk layout for a narrow screen (None: decided by the primary
    screen's width). Needs a QApplication."""
    from .fonts import apply_app_font
    from .settings import Settings
    from .window import MainWindow, is_compact_width
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    apply_app_font(app)
    if compact is None:
        compact = is_compact_width(app.primaryScreen().availableGeometry().width())
    if params_path is not None or model is not None:
        chosen_model = load_params(params_path) if params_path is not None else load_model(model)
        # a full recompute per step is cheap for a parameter file, too slow to drag on a real model
        session = Session(chosen_model, chosen_model.vocab.encode(default_prompt(chosen_model)),
                          check_recompute=params_path is not None or model == "teaching")
        window = MainWindow(session, Settings(settings_path), compact=compact)
        if model is not None:
            window.remember_model(str(model), chosen_model)     # the picker marks it
            window.retranslate()
    else:
        chosen = load_lesson(lesson or DEFAULT_LESSON_ID)
        window = MainWindow(chosen.build_session(), Settings(settings_path), chosen, compact=compact)
    if params_path is not None or model is not None or lesson is not None:
        # the teacher named what to open: the lesson list waits for a start without a choice
        window.start_page_at_first_start = False
    return window


def install_error_hook(window) -> None:
    """Exceptions raised inside Qt callbacks are shown in the window, never lost."""
    def hook(kind, value, tb):
        if isinstance(value, ExplorerError):
            window.report_error(str(value))
            return
        text = "".join(traceback.format_exception(kind, value, tb))
        print(text, file=sys.stderr)
        window.report_error(f"{kind.__name__}: {value}\n\n{text[-2000:]}")
    sys.excepthook = hook


SIGNAL_POLL_MS = 200     # how often the event loop lets Python run a signal handler


def stop_on_signals(app, window) -> None:
    """Ctrl+C or SIGTERM in the terminal that started the window closes it (its layout is
    saved as on any close) and ends the event loop with 130 or 143, without a traceback.
    Python runs signal handlers only between its own instructions, so a timer wakes it."""
    from PySide6.QtCore import QTimer

    def stop(signum, _frame):
        print(f"explorer: {'terminated' if signum == signal.SIGTERM else 'interrupted'}", file=sys.stderr)
        window.close()
        app.exit(exit_status(signum))

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)
    timer = QTimer(window)
    timer.timeout.connect(lambda: None)
    timer.start(SIGNAL_POLL_MS)


def run_app(args) -> int:
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Token Explorer")
    try:
        window = build_window(params_path=args.params, lesson=args.lesson, model=args.model)
    except ExplorerError as exc:
        print(f"explorer: error: {exc}", file=sys.stderr)
        return 2
    install_error_hook(window)
    stop_on_signals(app, window)
    if window.settings["geometry"].isEmpty():
        # first start: the whole screen, as a projector wants it (sized too, for desktops
        # whose window manager does not maximise)
        window.resize(app.primaryScreen().availableGeometry().size())
        window.showMaximized()
    else:
        window.show()                    # where the teacher left it
    return app.exec()
