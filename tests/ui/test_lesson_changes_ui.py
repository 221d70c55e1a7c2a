"""A teacher deviating from the lesson in front of the class: the window never shows a title
or text about the lesson's settings as if it were about the chart, says what changed, and
goes back with one key."""

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from explorer.lessons import load_lesson
from explorer.session.session import DEFAULT_CONFIG
from teacher import enter_prompt, type_text


def press(qtbot, window, key) -> None:
    qtbot.keyClick(QApplication.focusWidget() or window, key)


def type_setting(qtbot, window, name: str, text: str) -> None:
    """Click into a setting's number box, type a value, press Return (the keys then go back)."""
    spin = window.panels["controls"].spin(name)
    qtbot.mouseClick(spin, Qt.MouseButton.LeftButton)
    spin.setFocus()
    spin.selectAll()
    type_text(spin, text)
    qtbot.keyClick(spin, Qt.Key.Key_Return)
    press(qtbot, window, Qt.Key.Key_Escape)                  # out of the box: the arrows are the player's


def badge(player) -> str:
    """The badge as a teacher reads it: its text, or whole in its tooltip when it ends in "…"."""
    return player.changed.toolTip() or player.changed.text()


def open_lesson(window, name: str):
    assert window.lesson_switcher.switch_lesson(load_lesson(name))
    return window.session


def go_to_title(qtbot, window, fragment: str) -> None:
    s = window.session
    press(qtbot, window, Qt.Key.Key_Home)
    while fragment not in window.panels["player"].title.text():
        assert not s.at_end, fragment
        press(qtbot, window, Qt.Key.Key_Right)


def test_a_changed_temperature_retitles_the_frame_and_marks_the_lessons_text(qtbot, window):
    s, player = open_lesson(window, "sampling"), window.panels["player"]
    go_to_title(qtbot, window, "T = 2: A 0.5065")
    assert not badge(player) and not player.back_to_lesson.isVisible()
    type_setting(qtbot, window, "temperature", "0.56")
    assert s.config.temperature == 0.56
    assert "0.5065" not in player.title.text() and "T = 2" not in player.title.text()
    assert "0.5065" not in window.windowTitle()
    assert badge(player) == "Changed from the lesson: temperature 0.56 (lesson: 2)"
    assert player.back_to_lesson.isVisible()
    explanation = window.panels["explanation"].view.toPlainText()
    assert explanation.startswith("Your settings differ from the lesson's\n")
    assert "temperature 0.56 (lesson: 2)" in explanation.split("\n")[1]
    press(qtbot, window, Qt.Key.Key_R)                      # Go → Back to the lesson's settings
    assert s.config.temperature == 2.0 and player.title.text().startswith("T = 2: A 0.5065")
    assert not badge(player) and not player.back_to_lesson.isVisible()


def test_the_badge_button_restores_the_lesson_and_a_chinese_badge_reads(qtbot, window):
    s, player = open_lesson(window, "sampling"), window.panels["player"]
    window.set_lang("zh")
    go_to_title(qtbot, window, "T = 2：")
    type_setting(qtbot, window, "top_k", "2")
    assert badge(player) == "与课程设置不同：top-k 2（课程：0）"
    assert player.changed.text() == badge(player)          # whole on one line: CJK's taller line has room
    qtbot.mouseClick(player.back_to_lesson, Qt.MouseButton.LeftButton)
    assert s.config.top_k == 0 and not badge(player)


def test_the_next_frames_own_top_p_is_applied_on_arrival_and_said(qtbot, window):
    s, player = open_lesson(window, "sampling"), window.panels["player"]
    go_to_title(qtbot, window, "top-p = 0.8: keep two")
    type_setting(qtbot, window, "top_p", "0.27")
    assert s.config.top_p == 0.27
    press(qtbot, window, Qt.Key.Key_Right)
    assert player.title.text() == "The same probabilities, top-p = 0.9: keep three"
    assert s.config.top_p == 0.9 and window.panels["controls"].spin("top_p").value() == 0.9
    assert int((s.step.distribution.probs > 0).sum()) == 3
    assert window.statusBar().currentMessage() == ("This frame uses its own settings; your changes were set "
                                                   "aside: top-p 0.27 (lesson: 0.9)")
    assert not badge(player)


def test_a_typed_prompt_in_a_lesson_is_named_and_the_title_is_the_runs_own(qtbot, window):
    s, player = open_lesson(window, "prefill-decode"), window.panels["player"]
    press(qtbot, window, Qt.Key.Key_Right)
    authored = player.title.text()
    enter_prompt(qtbot, window, "我爱学习")
    assert s.in_lesson and s.prompt_ids == (1, 2, 3)
    assert "prompt “我爱学习” (lesson: “我我学习你”)" in badge(player)
    assert player.title.text() != authored
    press(qtbot, window, Qt.Key.Key_Right)                   # the keys are the player's after Enter
    assert s.cursor == 2


def test_leaving_a_lesson_for_another_model_starts_from_the_defaults(qtbot, window):
    s = open_lesson(window, "sampling")                      # sample mode, T = 1, one new token
    type_setting(qtbot, window, "temperature", "0.82")
    window.model_switcher.choose_model("teaching")
    assert not s.in_lesson and window.errors == []
    assert s.config == DEFAULT_CONFIG.with_(temperature=0.82)     # not the lesson's mode or max tokens
    assert s.prompt_ids == (1, 2) and s.cursor == 0
    message = window.statusBar().currentMessage()
    assert "Free exploration starts from the default settings; your own changes are kept: temperature 0.82" \
        in message


def test_a_new_prompt_starts_the_player_at_its_first_frame(qtbot, tmp_path):
    from explorer.ui.app import build_window
    window = build_window(settings_path=str(tmp_path / "settings.ini"), model="teaching", compact=False)
    qtbot.addWidget(window)
    window.resize(1600, 960)
    window.show()
    window.activateWindow()                                  # the keys go to the window a teacher looks at
    qtbot.waitUntil(window.isActiveWindow)
    s = window.session                                       # free exploration on the teaching model
    assert not s.in_lesson
    press(qtbot, window, Qt.Key.Key_End)
    assert s.at_end
    enter_prompt(qtbot, window, "我爱学习")
    assert s.cursor == 0 and window.panels["player"].counter.text().startswith("Frame 1 /")


def test_a_model_switch_keeps_the_teachers_prompt_when_the_new_model_reads_it(qtbot, window, smollm2):
    s = window.session
    window.model_switcher.choose_model("teaching")
    enter_prompt(qtbot, window, "我爱学习")
    window.model_switcher.remember_model("smollm2", smollm2)
    window.model_switcher.choose_model("smollm2")
    qtbot.waitUntil(lambda: s.model is smollm2 and not s.behind)
    assert window.prompt_bar.edit.text() == "我爱学习"
    assert smollm2.vocab.decode(s.prompt_ids) == "我爱学习"
    enter_prompt(qtbot, window, "Hello")
    window.model_switcher.choose_model("teaching")           # its 7 tokens cannot read "Hello"
    qtbot.waitUntil(lambda: s.model is not smollm2 and not s.behind)
    assert s.prompt_ids == (1, 2) and window.prompt_bar.edit.text() == "我爱"
    assert "its vocabulary cannot read “Hello”: it starts from “我爱”" in window.statusBar().currentMessage()


def test_a_bar_clicked_on_the_last_frame_shows_the_forced_pick(qtbot, window):
    from teacher import click_bar, column_ids
    s, dist, player = window.session, window.panels["distribution"], window.panels["player"]
    press(qtbot, window, Qt.Key.Key_End)
    assert s.frame.kind == "stop"
    click_bar(qtbot, dist, len(dist.chart.rows) - 1, column_ids(dist).index(4))    # 你 instead of EOS
    assert s.frame.kind == "pick" and s.step.forced and s.step.selected_id == 4
    assert player.title.text().startswith("Forced 你 (id 4)")


def test_in_presentation_mode_the_badge_is_beside_the_frames_title(qtbot, window):
    open_lesson(window, "sampling")
    go_to_title(qtbot, window, "T = 2: A 0.5065")
    press(qtbot, window, Qt.Key.Key_F11)
    bar = window.desk_layout.title_bar
    assert bar.isVisible() and not window.panels["player"].isVisible()
    assert not bar.badge.isVisible()
    type_setting(qtbot, window, "temperature", "0.56")
    full = bar.badge.toolTip() or bar.badge.text()
    assert bar.badge.isVisible() and full == "Changed from the lesson: temperature 0.56 (lesson: 2)"
    assert bar.badge.palette().color(bar.badge.foregroundRole()).name() == window.theme.error.lower()   # in red
    assert "0.5065" not in bar.label.text()
    press(qtbot, window, Qt.Key.Key_R)
    assert not bar.badge.isVisible() and bar.label.text().startswith("T = 2: A 0.5065")


def test_new_logits_typed_in_the_sampling_lesson_are_named_by_their_numbers(qtbot, window):
    s, player, box = open_lesson(window, "sampling"), window.panels["player"], window.prompt_bar.edit
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton)
    box.setFocus()
    box.selectAll()
    type_text(box, "0, 3, 1")
    qtbot.keyClick(box, Qt.Key.Key_Return)
    assert window.errors == [] and s.in_lesson
    assert "model logits [0, 3, 1] (lesson: logits [2, 1, 0])" in badge(player)
