"""Nothing lost: the lesson editor's unsaved edits are kept in a recovery file as they are
made; a window killed mid-edit (a real process, killed with SIGKILL) leaves them there, and
the next start offers them back: restored, they play and are saved with Ctrl+S; discarded,
they are gone; "not now" keeps them for a later start. A failed save keeps them, a folder
where they cannot be kept is said once, and a recovery file this program cannot read is put
aside, never deleted."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from explorer.lessons import lessons_dir, parse_lesson
from explorer.lessons.recovery import FILE_NAME, left_behind
from test_lesson_editor import choose_frame, open_editor, player_title, retype
from teacher import CTRL

WO_AI = lessons_dir() / "wo-ai-to-eos.toml"
SUPPORT = Path(__file__).resolve().parents[1] / "support"
LONG = 120_000           # ms: a generous bound for a slow, shared machine, never a speed claim

# A window in a process of its own: the teacher opens the editor, types a new title for
# frame 3, and the process says so once the recovery file holds it, then waits to be killed.
EDIT_THEN_WAIT = textwrap.dedent('''
    import sys, time
    from pathlib import Path
    sys.path.insert(0, {support!r})
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication
    from PySide6.QtTest import QTest
    app = QApplication([])
    from explorer.ui.app import build_window
    from teacher import type_text
    window = build_window(settings_path={settings!r}, compact=False)
    window.show()
    editor = window.lesson_editor.open()
    editor.frame_list.setCurrentRow(2)
    box = editor.texts["title"]
    box.setFocus()
    QTest.keyClick(box, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    type_text(box, "Killed before it was saved")
    kept = Path({settings!r}).parent / {name!r}
    while not (kept.is_file() and "Killed before" in kept.read_text(encoding="utf-8")):
        app.processEvents()
        time.sleep(0.01)
    print("kept", flush=True)
    while True:
        app.processEvents()
        time.sleep(0.05)
''')


@pytest.fixture
def window(window):
    """The window of tests/ui/conftest.py, closing without a question when the test ends."""
    window.ask_unsaved_edits = lambda: "discard"
    return window


def new_window(qtbot, settings: Path, answer: str, asked: list):
    """A window on `settings`, answering the offer of edits left behind with `answer`."""
    from explorer.ui.app import build_window
    w = build_window(settings_path=str(settings), compact=False)
    qtbot.addWidget(w)
    w.ask_restore_edits = lambda unsaved: asked.append(unsaved) or answer
    w.ask_unsaved_edits = lambda: "discard"
    w.resize(1600, 960)
    w.show()
    qtbot.waitExposed(w)
    return w


@pytest.fixture
def killed_mid_edit(tmp_path) -> Path:
    """The settings file of a window whose process was killed while its edits were unsaved."""
    settings = tmp_path / "settings.ini"
    script = EDIT_THEN_WAIT.format(support=str(SUPPORT), settings=str(settings), name=FILE_NAME)
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout.readline().strip() == "kept"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    return settings


def test_edits_of_a_killed_window_are_offered_restored_played_and_saved(qtbot, killed_mid_edit, tmp_path):
    asked = []
    window = new_window(qtbot, killed_mid_edit, "restore", asked)
    qtbot.waitUntil(lambda: bool(asked) and window.lesson_editor.editor is not None, timeout=LONG)
    (unsaved,) = asked
    assert unsaved.path == WO_AI and "Killed before it was saved" in unsaved.text
    editor = window.lesson_editor.editor
    assert window.lesson_editor.dock.isVisible() and editor.changed and window.errors == []
    window.session.go(2)
    assert player_title(window) == "Killed before it was saved"
    assert "Restored the unsaved edits" in window.statusBar().currentMessage()
    target = tmp_path / "kept.lesson.toml"
    window.ask_lesson_file = lambda name: target           # a shipped lesson: Save asks where
    qtbot.keyClick(editor.frame_list, Qt.Key.Key_S, CTRL)
    assert parse_lesson(target).plans[2].extras["title"]["en"] == "Killed before it was saved"
    assert not editor.changed and not (tmp_path / FILE_NAME).exists()   # saved: nothing left to offer


@pytest.mark.parametrize("answer, kept", [("discard", False), ("later", True)])
def test_edits_left_behind_discarded_are_gone_and_not_now_keeps_them(qtbot, killed_mid_edit, answer, kept):
    asked = []
    window = new_window(qtbot, killed_mid_edit, answer, asked)
    qtbot.waitUntil(lambda: bool(asked), timeout=LONG)
    assert window.lesson_editor.editor is None and window.errors == []
    assert (killed_mid_edit.parent / FILE_NAME).exists() == kept


def test_edits_are_kept_as_they_are_made_and_dropped_when_undone(window, qtbot, tmp_path):
    editor = open_editor(qtbot, window)
    choose_frame(qtbot, editor, 3)
    kept = tmp_path / FILE_NAME
    assert not kept.exists()
    retype(qtbot, editor, editor.texts["title"], "Mine")
    record = json.loads(kept.read_text(encoding="utf-8"))
    assert record["path"] == str(WO_AI) and record["pid"] == os.getpid() and record["file"] is None
    assert 'en = "Mine"' in record["text"] and 'en = "Mine"' not in record["saved"]
    assert left_behind(tmp_path) is None                       # this process holds them: not offered
    qtbot.keyClick(editor.texts["title"], Qt.Key.Key_Z, CTRL)  # the editor's undo: nothing to save
    assert not editor.changed and not kept.exists()


def test_a_save_onto_a_full_disk_keeps_the_edits_in_the_window_and_the_recovery_file(window, qtbot, tmp_path,
                                                                                       monkeypatch):
    editor = open_editor(qtbot, window)
    retype(qtbot, editor, editor.lesson_title, "Not yet saved")
    target = tmp_path / "mine.lesson.toml"
    window.ask_lesson_file = lambda name: target

    def full_disk(path, text):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr("explorer.lessons.writer.write_text_atomic", full_disk)
    qtbot.keyClick(editor.lesson_title, Qt.Key.Key_S, CTRL)
    assert window.errors and str(target) in window.errors[-1] and "No space left on device" in window.errors[-1]
    assert not target.exists()
    assert editor.changed and window.session.content.title["en"] == "Not yet saved"
    assert "Not yet saved" in (tmp_path / FILE_NAME).read_text(encoding="utf-8")


def test_a_folder_where_edits_cannot_be_kept_is_said_once_and_editing_goes_on(qtbot, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    window = new_window(qtbot, blocker / "settings.ini", "later", [])
    editor = open_editor(qtbot, window)
    retype(qtbot, editor, editor.lesson_title, "One")
    retype(qtbot, editor, editor.lesson_title, "Two")
    said = [e for e in window.errors if FILE_NAME in e]
    assert len(said) == 1 and "cannot be kept" in said[0]
    assert window.session.content.title["en"] == "Two"


@pytest.mark.parametrize("content", ['{"format": "token-explorer/unsaved-lesson", "version": 1, "pid": "x"}',
                                     "[" * 100_000, "not json", '{"format": "other"}'])
def test_a_recovery_file_this_program_cannot_read_is_put_aside_and_named(qtbot, tmp_path, content):
    (tmp_path / FILE_NAME).write_text(content)
    asked = []
    window = new_window(qtbot, tmp_path / "settings.ini", "restore", asked)
    aside = tmp_path / "unsaved-lesson.unreadable.json"
    qtbot.waitUntil(lambda: bool(window.errors), timeout=LONG)
    assert asked == [] and FILE_NAME in window.errors[-1] and str(aside) in window.errors[-1]
    assert aside.read_text() == content and not (tmp_path / FILE_NAME).exists()


def test_editing_other_content_with_unsaved_edits_asks_first(window, qtbot):
    editor = open_editor(qtbot, window)
    retype(qtbot, editor, editor.lesson_title, "Edited")
    edited = window.session.content
    window.lesson_switcher.open_lesson_file(str(lessons_dir() / "sampling.toml"))
    assert window.session.content is not edited
    asked = []
    window.ask_unsaved_edits = lambda: asked.append(1) or "cancel"
    window.lesson_editor.open()                                # E on the other lesson: asked, and cancelled
    assert asked and editor.model.lesson.title["en"] == "Edited" and window.session.content is editor.model.lesson
    window.ask_unsaved_edits = lambda: "discard"
    window.lesson_switcher.open_lesson_file(str(lessons_dir() / "sampling.toml"))
    window.lesson_editor.open()
    assert not editor.changed and editor.model.lesson.path.name == "sampling.toml"
