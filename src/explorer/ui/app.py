"""Start the window: fonts, the default session, error reporting, the event loop."""

from __future__ import annotations

import sys
import traceback

from ..core.errors import ExplorerError
from ..core.params_io import load_params
from ..lessons import DEFAULT_LESSON_ID, load_lesson
from ..session import Session

DEFAULT_PROMPT = "我爱"


def build_window(settings_path: str | None = None, params_path: str | None = None, lesson: str | None = None):
    """The window on a lesson (default: 我爱 to EOS), or on a parameter file with the prompt
    我爱. Needs a QApplication."""
    from .fonts import apply_app_font
    from .settings import Settings
    from .window import MainWindow
    from PySide6.QtWidgets import QApplication

    apply_app_font(QApplication.instance())
    if params_path is not None:
        model = load_params(params_path)
        return MainWindow(Session(model, model.vocab.encode(DEFAULT_PROMPT)), Settings(settings_path))
    chosen = load_lesson(lesson or DEFAULT_LESSON_ID)
    return MainWindow(chosen.build_session(), Settings(settings_path), chosen)


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


def run_app(args) -> int:
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Token Explorer")
    try:
        window = build_window(params_path=args.params, lesson=args.lesson)
    except ExplorerError as exc:
        print(f"explorer: error: {exc}", file=sys.stderr)
        return 2
    install_error_hook(window)
    window.resize(1600, 960)
    window.show()
    return app.exec()
