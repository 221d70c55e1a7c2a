"""The lesson editor as a teacher uses it: open a lesson, open the editor (E), choose frame 3,
type a new title and see it in the player's title and in the exported slide, take it back
with Ctrl+Z in the editor (Ctrl+Z elsewhere still takes back a forced token), delete and
move frames, have an invalid text refused with the loader's message, save, and be asked
when closing with edits not saved."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication

from explorer.lessons import lessons_dir, parse_lesson
from explorer.ui.shell.export_actions import FrameChoice
from teacher import CTRL, CTRL_SHIFT, type_text

WO_AI = lessons_dir() / "wo-ai-to-eos.toml"
OLD_TITLE = "Position 1's logits select 学习 (p = {prob})"


@pytest.fixture(autouse=True)
def no_question_when_the_test_ends(window):
    """The window a test leaves with edits closes without a dialog (a test that closes it asks its own)."""
    window.ask_unsaved_edits = lambda: "discard"


def open_editor(qtbot, window):
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    qtbot.keyClick(window, Qt.Key.Key_E)                   # Lesson → Edit lesson
    editor = window.lesson_editor.editor
    assert editor is not None and window.lesson_editor.dock.isVisible() and window.errors == []
    return editor


def choose_frame(qtbot, editor, n: int) -> None:
    rect = editor.frame_list.visualItemRect(editor.frame_list.item(n - 1))
    qtbot.mouseClick(editor.frame_list.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


def retype(qtbot, editor, box, text: str) -> None:
    """Click into a field, select all and type `text` over it, as a teacher does."""
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton)
    box.setFocus(Qt.FocusReason.MouseFocusReason)
    qtbot.keyClick(box, Qt.Key.Key_A, CTRL)
    with qtbot.waitSignal(editor.played, timeout=5000):
        if text:
            type_text(box, text)
        else:
            qtbot.keyClick(box, Qt.Key.Key_Delete)


def player_title(window) -> str:
    return window.panels["player"].title._full


def export(window, path):
    window.ask_export_frame = lambda: FrameChoice(path)
    window.actions["export_frame"].trigger()
    assert window.errors == []
    return path.read_bytes()


def test_a_new_title_plays_at_once_exports_and_is_undone(window, qtbot, tmp_path):
    s = window.session
    editor = open_editor(qtbot, window)
    choose_frame(qtbot, editor, 3)
    assert s.cursor == 2
    original = export(window, tmp_path / "before.png")
    retype(qtbot, editor, editor.texts["title"], "Greedy picks {piece} here")
    assert s.content is editor.model.lesson and s.cursor == 2
    assert "Greedy picks 学习 here" in window.windowTitle()
    assert "Greedy picks 学习 here" in player_title(window)
    edited = export(window, tmp_path / "edited.png")
    # the same slide as a window playing that lesson written by hand
    by_hand = tmp_path / WO_AI.name
    by_hand.write_text(WO_AI.read_text(encoding="utf-8").replace(OLD_TITLE, "Greedy picks {piece} here"),
                       encoding="utf-8")
    from explorer.ui.app import build_window
    other = build_window(settings_path=str(tmp_path / "other.ini"), compact=False)
    qtbot.addWidget(other)
    other.resize(1600, 960)
    other.show()
    other.lesson_switcher.open_lesson_file(str(by_hand))
    other.session.go(2)
    assert edited != original and export(other, tmp_path / "by-hand.png") == edited
    # Ctrl+Z with the keys in the editor takes the title back
    assert editor.has_focus()
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Z, CTRL)
    assert editor.texts["title"].text() == OLD_TITLE
    assert "学习" in window.windowTitle() and "Greedy" not in window.windowTitle()
    assert export(window, tmp_path / "undone.png") == original
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Z, CTRL_SHIFT)      # and redo
    assert "Greedy picks 学习 here" in window.windowTitle()


def test_ctrl_z_outside_the_editor_takes_back_a_forced_token(window, qtbot):
    s = window.session
    editor = open_editor(qtbot, window)
    choose_frame(qtbot, editor, 3)
    retype(qtbot, editor, editor.texts["title"], "Mine")
    s.force(0, 4)
    assert s.overrides == {0: 4}
    window.keys.give_back()                                   # the keys leave the editor
    assert not editor.has_focus()
    qtbot.keyClick(window, Qt.Key.Key_Z, CTRL)
    assert s.overrides == {} and editor.model.changed          # the force went, the edit stayed
    assert editor.model.lesson.plans[2].extras["title"]["en"] == "Mine"


def test_frames_deleted_and_moved_follow_in_the_player(window, qtbot):
    s = window.session
    editor = open_editor(qtbot, window)
    n = len(s.frames)
    choose_frame(qtbot, editor, 2)
    kind = s.frame.kind
    with qtbot.waitSignal(editor.played, timeout=5000):
        qtbot.mouseClick(editor.frame_buttons["delete"], Qt.MouseButton.LeftButton)
    assert len(s.frames) == n - 1 and editor.frame_list.count() == n - 1
    assert window.windowTitle().split(":")[0].endswith(f"/ {n - 1}")
    choose_frame(qtbot, editor, 1)
    first = s.frame.kind
    with qtbot.waitSignal(editor.played, timeout=5000):
        qtbot.mouseClick(editor.frame_buttons["down"], Qt.MouseButton.LeftButton)
    assert s.cursor == 1 and s.frame.kind == first and s.frames[0].kind != first
    with qtbot.waitSignal(editor.played, timeout=5000):
        qtbot.mouseClick(editor.frame_buttons["duplicate"], Qt.MouseButton.LeftButton)
    assert len(s.frames) == n and s.cursor == 2
    with qtbot.waitSignal(editor.played, timeout=5000):
        qtbot.mouseClick(editor.frame_buttons["add_here"], Qt.MouseButton.LeftButton)
    assert len(s.frames) == n + 1 and (s.frame.kind, s.frame.step) == (s.frames[2].kind, s.frames[2].step)
    for _ in range(4):
        editor.undo()
    assert len(s.frames) == n and s.frames[1].kind == kind and not editor.model.changed


def test_an_invalid_text_is_refused_with_the_loaders_message(window, qtbot):
    s = window.session
    editor = open_editor(qtbot, window)
    choose_frame(qtbot, editor, 3)
    before, lesson = window.windowTitle(), s.content
    box = editor.texts["title"]
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton)
    qtbot.keyClick(box, Qt.Key.Key_A, CTRL)
    with qtbot.waitSignal(editor.refused, timeout=5000) as refused:
        type_text(box, "{nope}")
    assert "wo-ai-to-eos.toml:" in refused.args[0] and "frames[2].title.en: unknown placeholder" in refused.args[0]
    assert editor.message.isVisible() and "'nope'" in editor.message.text()
    assert s.content is lesson and window.windowTitle() == before and not editor.model.changed


def test_closing_with_unsaved_edits_asks(window, qtbot, tmp_path):
    editor = open_editor(qtbot, window)
    retype(qtbot, editor, editor.texts["title"], "Mine")
    asked = []
    window.ask_unsaved_edits = lambda: asked.append(1) or "cancel"
    assert not window.close() and window.isVisible() and asked
    target = tmp_path / "mine.lesson.toml"
    window.ask_lesson_file = lambda name: target               # a shipped lesson: Save asks where
    window.ask_unsaved_edits = lambda: "save"
    assert window.close()
    assert parse_lesson(target).plans[0].extras["title"]["en"] == "Mine"


def test_closing_after_saving_does_not_ask_and_discard_closes(window, qtbot, tmp_path):
    editor = open_editor(qtbot, window)
    target = tmp_path / "mine.lesson.toml"
    window.ask_lesson_file = lambda name: target
    retype(qtbot, editor, editor.texts["explain.why"], "It matters.")
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_S, CTRL)
    assert target.is_file() and not editor.changed and window.session.content.path == target
    retype(qtbot, editor, editor.lesson_title, "My lesson")
    target.write_text(target.read_text(encoding="utf-8"))       # unchanged on disk: Save writes without asking
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_S, CTRL)
    assert parse_lesson(target).title["en"] == "My lesson"
    window.ask_unsaved_edits = lambda: pytest.fail("nothing unsaved")
    retype(qtbot, editor, editor.lesson_title, "Not kept")
    window.ask_unsaved_edits = lambda: "discard"
    assert window.close()
    assert parse_lesson(target).title["en"] == "My lesson"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_editor_in_both_languages(window, qtbot, tmp_path, lang):
    window.set_lang(lang)
    editor = open_editor(qtbot, window)
    window.lesson_editor.dock.resize(520, 900)
    choose_frame(qtbot, editor, 3)
    other = "zh" if lang == "en" else "en"
    editor.language.setCurrentIndex(editor.language.findData(other))
    retype(qtbot, editor, editor.texts["title"], "")            # not translated: the other language shows
    assert editor.texts["title"].placeholderText().startswith("not translated" if lang == "en" else "未翻译")
    for i in range(editor.tabs.count()):
        editor.tabs.setCurrentIndex(i)
        editor.grab().save(str(tmp_path / f"editor-{lang}-{i}.png"))


def test_the_slide_preview_follows_the_text_a_moment_after_typing(window, qtbot, tmp_path):
    editor = open_editor(qtbot, window)
    choose_frame(qtbot, editor, 3)
    qtbot.waitUntil(lambda: editor.preview.pixmap() is not None and not editor.preview.pixmap().isNull(),
                    timeout=60_000)
    before = editor.preview.pixmap().toImage()
    retype(qtbot, editor, editor.texts["title"], "A title of my own for this slide")
    qtbot.waitUntil(lambda: editor.preview.pixmap().toImage() != before, timeout=60_000)
    shown = editor.preview.pixmap().toImage()
    exported = QImage(str(tmp_path / "frame.png")) if export(window, tmp_path / "frame.png") else None
    scaled = exported.scaled(shown.size(), Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.SmoothTransformation)
    assert scaled == shown                         # the preview is the exported slide, made smaller
    editor.grab().save(str(tmp_path / "editor-preview.png"))
