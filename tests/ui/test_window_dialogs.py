"""The window's open dialogs (Model → Open model file…, Lessons → Open lesson file…, File → Open
parameters…) fed the corpus of broken files of test_broken_inputs.py: each is a sentence
naming the file, never a traceback, and what was open stays; its boxes never offer more
than the limits the command line and lessons have."""

from __future__ import annotations

import os

from PySide6.QtCore import Qt
from broken_files import BROKEN_LESSONS, BROKEN_PARAMS, broken_ggufs, special_files, write  # noqa: F401

from teacher import at_rest

from explorer.core.limits import MAX_BEAMS, MAX_NEW_TOKENS, MAX_SEED


def test_a_window_never_offers_more_than_the_limits(qtbot, window):
    controls = window.panels["controls"]
    assert controls.beams_spin.maximum() == MAX_BEAMS
    assert controls.max_new_spin.maximum() == MAX_NEW_TOKENS
    assert controls.seed_spin.maximum() == MAX_SEED
    window.prompt_bar.edit.setText("我爱" * 1100)                       # a pasted page: 2,200 tokens
    qtbot.keyClick(window.prompt_bar.edit, Qt.Key.Key_Return)
    assert "prompt: 2,200 tokens, more than the 2,048 a run may start from" in window.errors[-1]
    assert window.session.prompt_ids == (1, 2)                       # the prompt stays



def _open_with_dialog(qtbot, window, monkeypatch, action: str, path: str) -> str:
    """Trigger an open action whose file dialog answers `path`; the error the window reports."""
    from PySide6.QtWidgets import QFileDialog
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *args, **kwargs: (path, "")))
    before = len(window.errors)
    window.actions[action].trigger()
    qtbot.waitUntil(lambda: len(window.errors) > before and at_rest(window), timeout=60_000)
    return window.errors[-1]


def test_the_windows_open_dialogs_report_broken_files_by_name(qtbot, window, monkeypatch, tmp_path,
                                                              broken_ggufs, special_files):
    lesson, model = window.lesson, window.session.model
    cases = [("open_lesson", write(tmp_path / f"{n}.toml", t), w) for n, (t, w) in BROKEN_LESSONS.items()]
    cases += [("open_params", write(tmp_path / f"{n}.json", t), w) for n, (t, w) in BROKEN_PARAMS.items()]
    cases += [("open_gguf", path, w) for path, w in broken_ggufs.values()]
    cases += [(action, path, w) for path, w in special_files.values() for action in ("open_params",)]
    for action, path, words in cases:
        message = _open_with_dialog(qtbot, window, monkeypatch, action, path)
        assert os.path.basename(path) in message and words in message, (path, message)
        assert "Traceback" not in message and "Error:" not in message
    assert window.lesson is lesson and window.session.model is model      # what was open stays
