"""The window's tests: a window fixture (also one on SmolLM2), a type size to set, and the
application's look put back."""

import pytest


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


@pytest.fixture
def real(qtbot, window, smollm2):
    """The default window switched to SmolLM2 from the picker (the loaded model is shared)."""
    from explorer.catalog.load import load_model
    from teacher import pick, wait_idle
    window.model_switcher.load_model = lambda key: smollm2 if key == "smollm2" else load_model(key)
    pick(window, "smollm2")
    wait_idle(qtbot, window)
    assert window.session.model is smollm2 and window.errors == []
    return window
