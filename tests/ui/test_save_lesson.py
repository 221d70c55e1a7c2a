"""File → Save as lesson… as a teacher uses it: a run of their own (a typed prompt, a step, the
temperature moved, a token forced by a click on its bar) saved with Ctrl+S and opened in a
fresh window shows the same frames; a file changed on disk is replaced only when the teacher
says so; a failed write names the file and the window keeps its run."""

from __future__ import annotations

import errno
import os

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from explorer.ui.app import build_window
from explorer.ui.shell.help import shortcut_rows
from teacher import CTRL, click_bar, column_ids, enter_prompt


def open_window(qtbot, tmp_path, **where):
    window = build_window(settings_path=str(tmp_path / f"settings-{len(list(tmp_path.iterdir()))}.ini"),
                          compact=False, **where)
    qtbot.addWidget(window)
    window.resize(1600, 960)
    window.show()
    window.activateWindow()                                  # the keys go to the window a teacher looks at
    qtbot.waitUntil(window.isActiveWindow)
    return window


def press(qtbot, window, key, modifier=Qt.KeyboardModifier.NoModifier) -> None:
    qtbot.keyClick(QApplication.focusWidget() or window, key, modifier)


def teachers_run(qtbot, window) -> None:
    """Type a prompt, step, set sampling and move the temperature slider, force 你 at step 0."""
    s, controls, dist = window.session, window.panels["controls"], window.panels["distribution"]
    enter_prompt(qtbot, window, "我爱学习")
    press(qtbot, window, Qt.Key.Key_Right)
    assert s.frame.kind == "prefill"
    controls.mode_combo.setCurrentIndex(controls.mode_combo.findData("sample"))
    controls.slider("temperature").setValue(175)
    press(qtbot, window, Qt.Key.Key_Right)
    assert s.frame.kind == "pick" and s.config.temperature == pytest.approx(1.75)
    click_bar(qtbot, dist, len(dist.chart.rows) - 1, column_ids(dist).index(4))
    assert s.overrides == {0: 4} and window.errors == []


def save_with_ctrl_s(qtbot, window, path):
    offered = []
    window.ask_lesson_file = lambda name: offered.append(name) or path
    press(qtbot, window, Qt.Key.Key_S, CTRL)
    return offered


def every_frame(qtbot, window) -> list[tuple]:
    """Each frame as the teacher steps through it with Right: kind, step, ids, the title the
    player shows, the distribution's bars and the top probabilities of the step."""
    s, rows = window.session, []
    press(qtbot, window, Qt.Key.Key_Home)
    while True:
        step = s.step
        top = None if step is None else sorted(step.distribution.probs.tolist(), reverse=True)[:3]
        bars = column_ids(window.panels["distribution"]) if s.frame.shows_distribution else None
        rows.append((s.frame.kind, s.frame.step, s.frame.visible_ids, s.frame.cache_len,
                     window.panels["player"].title.text(), bars, top,
                     None if step is None else (step.selected_id, step.forced)))
        if s.at_end:
            return rows
        press(qtbot, window, Qt.Key.Key_Right)


def test_a_teachers_own_run_saved_with_ctrl_s_reopens_frame_for_frame(qtbot, tmp_path):
    window = open_window(qtbot, tmp_path, model="teaching")
    teachers_run(qtbot, window)
    path = tmp_path / "class" / "mine.lesson.toml"
    path.parent.mkdir()
    assert save_with_ctrl_s(qtbot, window, path) == ["我爱学习.lesson.toml"]     # named after the prompt
    assert window.errors == [] and path.is_file()
    assert str(path) in window.statusBar().currentMessage()
    live = every_frame(qtbot, window)

    again = open_window(qtbot, tmp_path, lesson=str(path))
    assert again.session.in_lesson and again.errors == []
    assert again.session.config == window.session.config and again.session.overrides == {0: 4}
    assert every_frame(qtbot, again) == live
    assert len(live) == len(window.session.frames) and any(row[7] == (4, True) for row in live)


def test_save_as_lesson_is_in_the_file_menu_and_the_shortcut_list(qtbot, window):
    action = window.actions["save_lesson"]
    assert action in window.menus["file"].actions()
    assert action.text() == "Save as lesson…"
    assert ("Save as lesson…", "Ctrl+S") in shortcut_rows(window.actions, "en")
    window.set_lang("zh")
    assert action.text() == "另存为课程…"


def test_a_lesson_file_changed_on_disk_is_replaced_only_when_the_teacher_says_so(qtbot, tmp_path):
    window = open_window(qtbot, tmp_path, model="teaching")
    path = tmp_path / "mine.lesson.toml"
    save_with_ctrl_s(qtbot, window, path)
    written = path.read_text(encoding="utf-8")
    asked = []
    window.ask_replace_lesson = lambda p, changed: asked.append((p, changed)) or False
    window.session.set_sampling(temperature=0.5)
    save_with_ctrl_s(qtbot, window, path)                      # its own file, as it wrote it: no question
    assert asked == [] and path.read_text(encoding="utf-8") != written
    path.write_text("# my own edits\n", encoding="utf-8")     # a colleague edits it meanwhile
    save_with_ctrl_s(qtbot, window, path)
    assert asked == [(path, True)] and path.read_text(encoding="utf-8") == "# my own edits\n"
    window.ask_replace_lesson = lambda p, changed: True
    save_with_ctrl_s(qtbot, window, path)
    assert path.read_text(encoding="utf-8").startswith("# Saved by Token Explorer")


def test_an_opened_lesson_file_edited_since_asks_before_it_is_replaced(qtbot, tmp_path):
    first = open_window(qtbot, tmp_path, model="teaching")
    path = tmp_path / "mine.lesson.toml"
    save_with_ctrl_s(qtbot, first, path)
    window = open_window(qtbot, tmp_path, lesson=str(path))
    path.write_text(path.read_text(encoding="utf-8") + "# edited after it was opened\n", encoding="utf-8")
    asked = []
    window.ask_replace_lesson = lambda p, changed: asked.append(changed) or False
    assert save_with_ctrl_s(qtbot, window, path) == ["mine.lesson.toml"]       # the lesson's own name
    assert asked == [True] and path.read_text(encoding="utf-8").endswith("# edited after it was opened\n")


@pytest.mark.parametrize("failure", [errno.ENOSPC, errno.EROFS])
def test_a_full_disk_or_a_read_only_folder_is_named_and_the_window_keeps_its_run(qtbot, tmp_path, monkeypatch,
                                                                                 failure):
    window = open_window(qtbot, tmp_path, model="teaching")
    teachers_run(qtbot, window)
    s = window.session
    before = (s.cursor, s.config, s.overrides, s.run)
    path = tmp_path / "mine.lesson.toml"

    def refuse(*_args, **_kw):
        raise OSError(failure, os.strerror(failure))

    monkeypatch.setattr(os, "replace", refuse)
    save_with_ctrl_s(qtbot, window, path)
    assert len(window.errors) == 1 and str(path) in window.errors[0] and os.strerror(failure) in window.errors[0]
    assert not path.exists() and (s.cursor, s.config, s.overrides, s.run) == before
    monkeypatch.undo()
    save_with_ctrl_s(qtbot, window, path)                      # room again: the same run is saved
    assert path.is_file() and len(window.errors) == 1
