"""Keys as a teacher in front of a class presses them: sent to whatever widget has the
keyboard focus at that moment (as a keyboard or a presentation clicker does), never to a
widget the test picks; and what the player then shows."""

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QTableWidget

from teacher import CTRL, click_bar, column_ids, enter_prompt, type_text


def press(qtbot, window, key, modifier=Qt.KeyboardModifier.NoModifier) -> None:
    """A key pressed on the keyboard: it goes to the widget with the focus (else the window)."""
    qtbot.keyClick(QApplication.focusWidget() or window, key, modifier)


def top_level(name: str):
    return next(w for w in QApplication.topLevelWidgets() if w.objectName() == name and w.isVisible())


def counter(window) -> str:
    return window.panels["player"].counter.text()


def test_after_enter_in_the_prompt_the_arrows_step_through_the_new_run(qtbot, window):
    s = window.session
    enter_prompt(qtbot, window, "我爱学习")
    assert s.prompt_ids == (1, 2, 3) and window.errors == []
    assert s.cursor == 0 and not window.prompt_bar.edit.hasFocus()
    press(qtbot, window, Qt.Key.Key_Right)
    press(qtbot, window, Qt.Key.Key_Right)
    assert s.cursor == 2 and counter(window) == f"Frame 3 / {len(s.frames)}"
    press(qtbot, window, Qt.Key.Key_End)
    assert s.at_end and window.prompt_bar.edit.text() == "我爱学习"    # End moved the player, not the text cursor
    press(qtbot, window, Qt.Key.Key_Home)
    assert s.cursor == 0


def test_a_rejected_prompt_keeps_the_keys_in_the_box_to_fix_it(qtbot, window):
    enter_prompt(qtbot, window, "我恨")                        # 恨 is not in the vocabulary
    assert window.errors and window.prompt_bar.edit.hasFocus()


def test_clicking_last_then_left_goes_back_one_frame(qtbot, window):
    s, player = window.session, window.panels["player"]
    qtbot.mouseClick(player.buttons["last"], Qt.MouseButton.LeftButton)
    assert s.at_end and not player.buttons["last"].isEnabled()
    assert not player.dwell.hasFocus()                        # the disabled button did not hand it the keys
    press(qtbot, window, Qt.Key.Key_Left)
    assert s.cursor == len(s.frames) - 2
    press(qtbot, window, Qt.Key.Key_Home)
    assert s.cursor == 0 and player.dwell.value() == 2.0


def test_next_clicked_onto_the_last_frame_leaves_the_keys_with_the_player(qtbot, window):
    s, player = window.session, window.panels["player"]
    s.go(len(s.frames) - 2)
    qtbot.mouseClick(player.buttons["next"], Qt.MouseButton.LeftButton)
    assert s.at_end
    press(qtbot, window, Qt.Key.Key_PageUp)
    assert s.cursor == len(s.frames) - 2 and player.dwell.value() == 2.0


@pytest.mark.parametrize("forward, back", [(Qt.Key.Key_PageDown, Qt.Key.Key_PageUp),
                                           (Qt.Key.Key_Down, Qt.Key.Key_Up),
                                           (Qt.Key.Key_Right, Qt.Key.Key_Left)])
def test_clicker_keys_go_forward_and_back(qtbot, window, forward, back):
    s = window.session
    press(qtbot, window, forward)
    press(qtbot, window, forward)
    assert s.cursor == 2
    press(qtbot, window, back)
    assert s.cursor == 1


def test_keys_go_to_the_player_from_a_slider_a_chart_and_a_button(qtbot, window):
    s = window.session
    slider = window.panels["controls"].slider("temperature")
    qtbot.mouseClick(slider, Qt.MouseButton.LeftButton, pos=slider.rect().center())
    settled = s.config
    slider.setFocus()
    press(qtbot, window, Qt.Key.Key_Right)
    assert s.cursor == 1 and s.config == settled                # the player moved, not the slider
    window.panels["attention"].setFocus()
    press(qtbot, window, Qt.Key.Key_PageDown)
    assert s.cursor == 2
    window.panels["player"].buttons["first"].setFocus()
    press(qtbot, window, Qt.Key.Key_End)
    assert s.at_end


def test_clicking_a_panel_takes_the_keys_back_from_the_prompt_box(qtbot, window):
    s, box = window.session, window.prompt_bar.edit
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton)
    box.setFocus()
    press(qtbot, window, Qt.Key.Key_Home)                    # typing: Home moves the text cursor
    assert s.cursor == 0 and box.cursorPosition() == 0
    qtbot.mouseClick(window.panels["kv"], Qt.MouseButton.LeftButton)
    press(qtbot, window, Qt.Key.Key_Right)
    assert s.cursor == 1


def test_escape_leaves_the_prompt_box_and_drops_what_was_not_entered(qtbot, window):
    s, box = window.session, window.prompt_bar.edit
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton)
    box.setFocus()
    type_text(box, "学习")
    assert box.text().endswith("学习")
    press(qtbot, window, Qt.Key.Key_Escape)
    assert not box.hasFocus() and box.text() == "我爱" and s.prompt_ids == (1, 2)
    press(qtbot, window, Qt.Key.Key_Right)
    assert s.cursor == 1


def test_in_presentation_mode_a_first_escape_leaves_the_field_a_second_the_mode(qtbot, window):
    press(qtbot, window, Qt.Key.Key_F11)
    assert window.desk_layout.presenting
    spin = window.panels["controls"].spin("temperature")
    spin.setFocus()
    press(qtbot, window, Qt.Key.Key_Escape)
    assert window.desk_layout.presenting and not spin.hasFocus()
    press(qtbot, window, Qt.Key.Key_Escape)
    assert not window.desk_layout.presenting


def test_ctrl_z_undoes_a_forced_token_after_clicking_last(qtbot, window):
    s, dist = window.session, window.panels["distribution"]
    s.go(2)
    click_bar(qtbot, dist, len(dist.chart.rows) - 1, column_ids(dist).index(4))
    assert s.overrides == {0: 4}
    qtbot.mouseClick(window.panels["player"].buttons["last"], Qt.MouseButton.LeftButton)
    press(qtbot, window, Qt.Key.Key_Z, CTRL)
    assert s.overrides == {}


def test_b_blanks_the_screen_and_any_key_brings_it_back_without_moving(qtbot, window):
    s = window.session
    s.go(1)
    press(qtbot, window, Qt.Key.Key_B)
    blank = window.blank
    assert blank.isVisible() and blank.geometry() == window.rect()
    picture = window.grab().toImage()
    assert picture.pixelColor(picture.width() // 2, picture.height() // 2).name() == "#000000"
    press(qtbot, window, Qt.Key.Key_Right)                   # brings the window back, moves nothing
    assert not blank.isVisible() and s.cursor == 1
    press(qtbot, window, Qt.Key.Key_Period)                  # what many clickers send for "black screen"
    assert blank.isVisible()
    qtbot.mouseClick(blank, Qt.MouseButton.LeftButton)
    assert not blank.isVisible()
    press(qtbot, window, Qt.Key.Key_Right)
    assert s.cursor == 2


def test_b_typed_in_the_prompt_box_is_a_letter(qtbot, window):
    box = window.prompt_bar.edit
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton)
    box.setFocus()
    press(qtbot, window, Qt.Key.Key_End)
    qtbot.keyClicks(box, "b")
    assert box.text() == "我爱b" and not window.blank.isVisible()


def test_help_lists_every_key_that_drives_the_player(qtbot, window):
    press(qtbot, window, Qt.Key.Key_F1)
    dialog = top_level("shortcuts-dialog")
    table = dialog.findChild(QTableWidget)
    rows = {table.item(r, 0).text(): (table.item(r, 1).text() if table.item(r, 1) else "")
            for r in range(table.rowCount())}
    assert "PgDown" in rows["Next frame"] and "Right" in rows["Next frame"] and "Down" in rows["Next frame"]
    assert "PgUp" in rows["Previous frame"] and rows["Play / pause"] == "Space"
    assert "B" in rows["Blank the screen / bring it back"]
    assert any("Esc" == keys for keys in rows.values())
    dialog.close()


def test_about_names_the_version_and_the_models_licences(qtbot, window):
    from explorer import __version__
    window.actions["about"].trigger()
    box = top_level("about-box")
    text = box.text()
    assert __version__ in text and "Apache-2.0" in text and "Gemma Terms of Use" in text
    box.close()


def test_the_text_field_a_window_hands_the_focus_to_as_it_activates_gives_it_back(qtbot, window):
    """On a desktop, the first click on the window activates it and Qt focuses the first
    field of the tab chain (the Dwell box): the teacher did not choose it, the keys go back."""
    s, dwell = window.session, window.panels["player"].dwell
    s.go(3)
    dwell.setFocus(Qt.FocusReason.ActiveWindowFocusReason)
    qtbot.waitUntil(lambda: not dwell.hasFocus())
    press(qtbot, window, Qt.Key.Key_Left)
    assert s.cursor == 2 and dwell.value() == 2.0


def test_a_field_the_teacher_clicked_into_keeps_the_keys_when_the_window_comes_back(qtbot, window):
    box = window.prompt_bar.edit
    box.setFocus(Qt.FocusReason.MouseFocusReason)            # the teacher clicked into the prompt
    box.setFocus(Qt.FocusReason.ActiveWindowFocusReason)     # another window, then back to this one
    QApplication.processEvents()                             # the give-back would come on the next loop turn
    QApplication.processEvents()
    assert box.hasFocus()


def test_after_the_lesson_list_closes_the_keys_drive_the_player(qtbot, window):
    """Closing a dialog (the lesson list at the first start) gives the keys back to the window
    even where no window manager hands the focus back."""
    s = window.session
    qtbot.keyClick(window, Qt.Key.Key_L, CTRL)
    page = window.lesson_switcher.start_page
    qtbot.waitUntil(page.isVisible)
    page.activateWindow()
    qtbot.waitUntil(page.isActiveWindow)
    page.close()
    qtbot.waitUntil(window.isActiveWindow)
    press(qtbot, window, Qt.Key.Key_Right)
    assert s.cursor == 1
