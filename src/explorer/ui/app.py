"""Start the window: a display to show it on, one window per user, fonts, the default
session, the icon, error reporting, the event loop."""

from __future__ import annotations

import os
import signal
import sys
import traceback

from ..core.errors import ExplorerError
from ..i18n import tr
from ..interrupts import exit_status
from ..lessons import DEFAULT_LESSON_ID, load_lesson
from ..catalog.load import default_prompt, load_model, load_params_file
from ..session import Session


def build_window(settings_path: str | None = None, params_path: str | None = None, lesson: str | None = None,
                 model: str | None = None, compact: bool | None = None):
    """The window on a lesson (default: 我爱 to EOS), on a parameter file (prompt 我爱) or on a
    model by name or .gguf path (its default prompt; a big model computes off the UI
    thread). compact: the desk layout for a narrow screen (None: decided by the primary
    screen's width). Needs a QApplication."""
    from .shell.desk_layout import is_compact_width
    from .fonts import apply_app_font
    from .settings import Settings
    from .window import MainWindow
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    apply_app_font(app)
    if compact is None:
        compact = is_compact_width(app.primaryScreen().availableGeometry().width())
    if params_path is not None or model is not None:
        key = model if params_path is None else None      # what load_model takes (None: a parameter file)
        chosen_model = load_params_file(params_path) if params_path is not None else load_model(model)
        # a full recompute per step is cheap for a parameter file, too slow to drag on a real model
        session = Session(chosen_model, chosen_model.vocab.encode(default_prompt(key, chosen_model)),
                          check_recompute=params_path is not None or model == "teaching")
        window = MainWindow(session, Settings(settings_path), compact=compact)
        if model is not None:
            window.model_switcher.remember_model(str(model), chosen_model)     # the picker marks it
            window.retranslate()
    else:
        chosen = load_lesson(lesson or DEFAULT_LESSON_ID)
        window = MainWindow(chosen.build_session(), Settings(settings_path), compact=compact)
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


# Qt platforms that draw without a display server (QT_QPA_PLATFORM, before any ":options")
NO_DISPLAY_PLATFORMS = ("offscreen", "minimal", "minimalegl", "vnc", "eglfs", "linuxfb", "vkkhrdisplay")
NO_DISPLAY = ("no display: use `token-explorer export …` for pictures (slides of every frame) and "
              "`token-explorer trace` for the steps as text; the window needs a desktop session "
              "(or `ssh -X`)")


def display_problem(env, platform: str = sys.platform) -> str | None:
    """Why the window cannot open here, or None. On Linux and the other X11/Wayland systems
    a window needs DISPLAY or WAYLAND_DISPLAY unless QT_QPA_PLATFORM names a platform that
    draws without one; Qt itself would abort with a message about plugins. Asked before
    QApplication is created."""
    if platform in ("win32", "darwin", "cygwin"):
        return None
    if env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"):
        return None
    chosen = [p.split(":", 1)[0].strip() for p in env.get("QT_QPA_PLATFORM", "").split(";")]
    return None if any(p in NO_DISPLAY_PLATFORMS for p in chosen) else NO_DISPLAY


def window_request(args) -> dict:
    """What this start asks a window to open, with paths made absolute (a running window
    has its own working folder)."""
    def absolute(value: str) -> str:
        return os.path.abspath(value) if value.endswith((".toml", ".gguf", ".json")) or os.sep in value else value
    return {key: absolute(value) for key, value in (("params", args.params), ("model", args.model),
                                                    ("lesson", args.lesson)) if value}


def apply_request(window, request: dict) -> None:
    """A later start's request (or a file the system asked to open): the window comes
    forward and opens it; a broken file is reported in the window, naming file and problem."""
    if window.isMinimized():
        window.showNormal()
    window.raise_()
    window.activateWindow()
    if request.get("params"):
        window.model_switcher.open_params(request["params"])
    if request.get("model"):
        window.model_switcher.choose_model(request["model"])
    if request.get("lesson"):
        window.lesson_switcher.open_lesson_file(request["lesson"])


def _open_files_from_the_system(app, window) -> None:
    """macOS hands a document opened in Finder to the running app as a FileOpen event."""
    from PySide6.QtCore import QEvent, QObject

    class FileOpen(QObject):
        def eventFilter(self, watched, event) -> bool:
            if event.type() == QEvent.Type.FileOpen:
                apply_request(window, {"lesson": event.file()})
                return True
            return False

    app._file_open = FileOpen(app)           # kept alive by the application
    app.installEventFilter(app._file_open)


def _task_bar_identity() -> None:
    """Windows groups a window on the task bar by its process's app id: without one it
    shows Python's icon instead of ours."""
    if sys.platform == "win32":
        import ctypes
        ctypes.windll.shell32.SetCurrentProcessExplicitAppUserModelID("TokenExplorer.TokenExplorer")


def first_window(args, settings_path: str | None = None):
    """(the window this start opens, the problem to report in it or None). What the
    options name, else (a broken lesson file, a model not installed) the default lesson:
    a file opened from the file manager has no terminal to print the problem in."""
    try:
        return build_window(settings_path, params_path=args.params, lesson=args.lesson, model=args.model), None
    except ExplorerError as exc:
        window = build_window(settings_path)
        window.start_page_at_first_start = False     # the teacher chose something: the problem comes first
        return window, str(exc)


SIGNAL_POLL_MS = 200     # how often the event loop lets Python run a signal handler


def stop_on_signals(window) -> dict:
    """Ctrl+C or SIGTERM in the terminal that started the window closes it (its layout is
    saved as on any close), which ends the event loop as any last close does; the returned
    record then holds the status, 130 or 143. The handler only asks the event loop to close
    the window: closing inside whatever Python code the signal interrupted crashed Qt at
    exit. Python runs signal handlers only between its own instructions, so a timer wakes it."""
    from PySide6.QtCore import QTimer

    stopped = {"status": None}

    def stop(signum, _frame):
        print(f"token-explorer: {'terminated' if signum == signal.SIGTERM else 'interrupted'}", file=sys.stderr)
        stopped["status"] = exit_status(signum)
        QTimer.singleShot(0, window.close)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)
    timer = QTimer(window)
    timer.timeout.connect(lambda: None)
    timer.start(SIGNAL_POLL_MS)
    return stopped


def run_app(args) -> int:
    no_display = display_problem(os.environ)
    if no_display is not None:
        print(f"token-explorer: {no_display}", file=sys.stderr)
        return 2
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from ..desktop.launcher import COMMAND
    from .app_icon import app_icon
    from .single_instance import ANSWER_MS, claim, instance_name

    _task_bar_identity()
    # argv[0] names the X11 window class (WM_CLASS), which the launcher's StartupWMClass matches
    app = QApplication.instance() or QApplication([COMMAND])
    app.setApplicationName("Token Explorer")
    app.setDesktopFileName(COMMAND)          # Wayland's app id: the launcher entry and its icon
    app.setWindowIcon(app_icon())
    request = window_request(args)
    try:
        server = claim(instance_name(), request)
        if server is None:
            print("token-explorer: Token Explorer is already running: its window "
                  + ("opens it" if request else "comes forward"))
            return 0
        window, problem = first_window(args)
    except ExplorerError as exc:
        print(f"token-explorer: error: {exc}", file=sys.stderr)
        return 2
    if server.notice:                    # a window seemed to run but did not answer: said in both places
        print(f"token-explorer: {server.notice}", file=sys.stderr)
        QTimer.singleShot(0, lambda: window.show_status(tr("instance.unanswered", window.session.lang,
                                                           seconds=ANSWER_MS // 1000), 15000))
    server.received.connect(lambda later: apply_request(window, later))
    _open_files_from_the_system(app, window)
    install_error_hook(window)
    stopped = stop_on_signals(window)
    if window.settings["geometry"].isEmpty():
        # first start: the whole screen, as a projector wants it (sized too, for desktops
        # whose window manager does not maximise)
        window.resize(app.primaryScreen().availableGeometry().size())
        window.showMaximized()
    else:
        window.show()                    # where the teacher left it
    if problem is not None:              # in the terminal, and in the window once it is shown
        print(f"token-explorer: error: {problem}", file=sys.stderr)
        QTimer.singleShot(0, lambda: window.report_error(problem))
    status = app.exec()
    return stopped["status"] or status
