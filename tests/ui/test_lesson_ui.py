"""Lessons in the window: the picker, the lesson panel with its self-checks, frames that
point to panels, the glossary, the beam tree and the logits editor (offscreen, real widgets,
dialogs injected)."""


import numpy as np
import pytest
from PySide6.QtCore import Qt

from explorer.core.decode.sampling import SamplingConfig
from explorer.core.models.table_model import load_table_model
from explorer.lessons import DEFAULT_LESSON_ID, all_lessons, lessons_dir, load_lesson
from explorer.resources import resources_dir
from explorer.session import Session
from explorer.session.panels import PANELS as PANEL_IDS, SLIDE_PANELS
from explorer.ui.panels.beam import BeamPanel
from explorer.ui.shell.desk_layout import MATTERS_MARK
from explorer.ui.settings import Settings
from explorer.ui.window import PANELS, MainWindow
from teacher import at_rest, boundary_row, chart_rows, column_ids, column_names, dotted_in, enter_prompt, heatmap, links_in, listed, shown_texts

LOGITS_LESSON = """
format = "token-explorer/lesson"
version = 1
prompt_ids = [0]
title = { en = "Three logits", zh = "三个logits" }
summary = { en = "Candidates A, B, C with logits 2, 1, 0.", zh = "候选A、B、C，logits为2、1、0。" }
model = { kind = "logits", pieces = ["A", "B", "C"], logits = [2.0, 1.0, 0.0] }
settings = { mode = "greedy", max_new_tokens = 1 }

[[frames]]
show = "pick"
step = 0
panels = ["distribution"]
"""


def press(qtbot, widget, key, times=1):
    for _ in range(times):
        qtbot.keyClick(widget, key)


def softmax(x):
    e = np.exp(np.asarray(x, float) - max(x))
    return e / e.sum()


# ---------------------------------------------------------------------------- the picker

def test_the_window_and_the_lessons_know_the_same_panels(window):
    """One Qt-free list of panel ids, next to Frame.panels: the window's panels, in order;
    the slide panels are among them, and a slide can draw each."""
    from explorer.ui.slides.compose import SLIDE_PANEL_CLASSES
    assert tuple(cls.panel_id for cls in PANELS) == PANEL_IDS
    assert set(window.panels) == set(PANEL_IDS) == set(window.docks)
    assert set(SLIDE_PANELS) <= set(PANEL_IDS) and tuple(SLIDE_PANEL_CLASSES) == SLIDE_PANELS


def test_the_lessons_menu_lists_every_lesson_when_it_opens_with_the_playing_one_checked(window):
    menu = window.menus["lessons"]
    fixed = [a.text() for a in menu.actions()]                 # read at start: no lesson yet
    assert fixed == [window.actions[name].text() for name in ("all_lessons", "open_lesson", "edit_lesson")]
    menu.aboutToShow.emit()
    titles = [a.text() for a in menu.actions() if not a.isSeparator()]
    assert titles == [lesson.title_in("en") for lesson in all_lessons()] + fixed
    checked = [a.text() for a in menu.actions() if a.isChecked()]
    assert checked == [window.lesson.title_in("en")]


def play_from_the_menu(qtbot, window, on_real_models: bool) -> list[str]:
    """Open every lesson of the Lessons menu that runs on a real model (or on none) and play
    each to its end with the keys; the ids played, in menu order."""
    assert window.lesson_switcher.actions, "the Lessons menu lists the shipped lessons"
    menu = [a.text() for a in window.menus["lessons"].actions()]
    assert window.actions["all_lessons"].text() in menu and window.actions["open_lesson"].text() in menu
    played = []
    for lesson_id, action in window.lesson_switcher.actions.items():
        if bool(load_lesson(lesson_id).installed_models) != on_real_models:
            continue
        played.append(lesson_id)
        action.trigger()               # a lesson on a real model may first load it in the background
        qtbot.waitUntil(lambda: at_rest(window) and window.lesson.id == lesson_id, timeout=180_000)
        assert window.lesson.id == lesson_id and action.isChecked()
        assert sum(a.isChecked() for a in window.lesson_switcher.actions.values()) == 1
        assert window.panels["lesson"].heading.text() == window.lesson.title_in("en")
        press(qtbot, window, Qt.Key.Key_Home)
        assert window.session.cursor == 0
        frames = window.session.frames           # a question frame takes two presses: the answer, then on
        for _ in range(len(frames) - 1 + sum(f.ask is not None for f in frames)):
            press(qtbot, window, Qt.Key.Key_Right)
        assert window.session.at_end
    assert window.errors == []
    return played


def test_every_lesson_from_the_menu_plays_every_frame_without_error(qtbot, window):
    played = play_from_the_menu(qtbot, window, on_real_models=False)
    assert len(played) == 14 and "wo-ai-to-eos" in played and "api-parameters" in played


def test_every_real_model_lesson_from_the_menu_plays_every_frame_without_error(qtbot, window, smollm2, gemma3):
    assert play_from_the_menu(qtbot, window, on_real_models=True) == ["real-model", "gemma-wo-ai", "prefix-cache",
                                                                          "inside-and-across"]


def test_the_lesson_given_at_start_is_checked_in_the_menu(qtbot, tmp_path):
    from explorer.ui.app import build_window
    w = build_window(settings_path=str(tmp_path / "s.ini"), lesson=DEFAULT_LESSON_ID)
    qtbot.addWidget(w)
    assert w.lesson.id == DEFAULT_LESSON_ID and w.lesson_switcher.actions[DEFAULT_LESSON_ID].isChecked()


def test_bad_lesson_file_names_file_and_key_and_the_lesson_stays(qtbot, window, tmp_path):
    text = (lessons_dir() / "wo-ai-to-eos.toml").read_text(encoding="utf-8")
    bad = tmp_path / "broken-lesson.toml"
    bad.write_text(text.replace('show = "decode"\nstep = 1', 'show = "decode"\nstep = "one"', 1), encoding="utf-8")
    window.session.go(3)
    before, frames = window.lesson, window.session.frames
    window.lesson_switcher.ask_path = lambda: str(bad)
    window.actions["open_lesson"].trigger()
    assert "broken-lesson.toml" in window.errors[-1] and "frames[3].step" in window.errors[-1]
    assert window._last_box.isVisible()
    assert window.lesson is before and window.session.frames == frames and window.session.cursor == 3
    assert window.lesson_switcher.actions[before.id].isChecked()
    assert window.panels["lesson"].heading.text() == before.title_in("en")


def test_a_good_lesson_file_opens_and_no_shipped_lesson_is_checked(logits_window):
    window = logits_window                   # the fixture opened the file and saw no error
    assert window.lesson.id == "three-logits" and window.session.model.name == "logits"
    assert not any(a.isChecked() for a in window.lesson_switcher.actions.values())
    assert window.panels["lesson"].heading.text() == "Three logits"
    window.lesson_switcher.ask_path = lambda: ""                  # cancelled dialog: nothing happens
    window.actions["open_lesson"].trigger()
    assert window.lesson.id == "three-logits" and window.errors == []


def test_the_lesson_list_grows_with_the_type_within_the_screen(qtbot, window):
    desk = window.lesson_switcher.show_start_page().size()
    window.actions["zoom_out"].trigger()
    window.actions["zoom_out"].trigger()
    smaller = window.lesson_switcher.show_start_page().size()
    room = window.screen().availableGeometry()
    assert smaller.height() < desk.height() <= 0.9 * room.height()     # 800 lines offscreen: a cap
    window.actions["presentation"].trigger()
    page = window.lesson_switcher.show_start_page()
    assert page.width() <= 0.9 * room.width() and page.height() <= 0.9 * room.height()


def test_start_page_opens_once_at_first_start_and_opens_a_lesson(qtbot, tmp_path):
    from explorer.ui.app import build_window
    settings = str(tmp_path / "s.ini")
    w = build_window(settings_path=settings)
    qtbot.addWidget(w)
    w.start_page_at_first_start = True
    w.show()
    qtbot.waitUntil(lambda: w.lesson_switcher.start_page is not None and w.lesson_switcher.start_page.isVisible(), timeout=60_000)
    page = w.lesson_switcher.start_page
    assert page.windowModality() != Qt.WindowModality.ApplicationModal   # open(), not exec()
    assert set(page.open_buttons) == set(w.lesson_switcher.actions)
    assert w.settings["start_page_shown"] is True
    w.session.go(4)
    qtbot.mouseClick(page.open_buttons[DEFAULT_LESSON_ID], Qt.MouseButton.LeftButton)
    assert not page.isVisible() and w.lesson.id == DEFAULT_LESSON_ID and w.session.cursor == 0
    w.close()
    again = build_window(settings_path=settings)
    qtbot.addWidget(again)
    again.start_page_at_first_start = True
    again.show()
    qtbot.wait(50)
    assert again.lesson_switcher.start_page is None                       # remembered: shown once
    again.actions["all_lessons"].trigger()                # and always from the menu
    assert again.lesson_switcher.start_page.isVisible()


def test_free_session_says_so_and_points_to_the_lessons_menu(qtbot, tmp_path):
    from explorer.core.models.teaching import default_params_path
    from explorer.ui.app import build_window
    w = build_window(settings_path=str(tmp_path / "s.ini"), params_path=str(default_params_path()))
    qtbot.addWidget(w)
    panel = w.panels["lesson"]
    assert w.lesson is None and "Lessons menu" in panel.text() and panel.check_views == []
    assert not any(a.isChecked() for a in w.lesson_switcher.actions.values())
    w.lesson_switcher.actions[DEFAULT_LESSON_ID].trigger()
    assert "Lessons menu" not in panel.text() and panel.heading.text() == w.lesson.title_in("en")


# ---------------------------------------------------------------------------- the lesson panel

def test_lesson_panel_shows_the_checks_and_show_answer_reveals_the_answer(qtbot, window):
    panel, lesson = window.panels["lesson"], window.lesson
    text = panel.text()
    assert lesson.summary["en"] in text and "Before you start" in text and "After class" in text
    assert "Builds on:" in text
    assert len(panel.checks("before")) == sum(c.when == "before" for c in lesson.checks) >= 1
    assert len(panel.checks("after")) == sum(c.when == "after" for c in lesson.checks) >= 1
    view = panel.checks("after")[0]
    assert view.check.question["en"] in view.question.text()
    assert view.answer.isHidden() and view.check.answer["en"] not in panel.text()
    qtbot.mouseClick(view.button, Qt.MouseButton.LeftButton)
    assert view.answer.isVisible() and view.check.answer["en"] in view.answer.text()
    assert view.button.text() == "Hide answer" and view.check.answer["en"] in panel.text()
    qtbot.mouseClick(view.button, Qt.MouseButton.LeftButton)
    assert view.answer.isHidden() and view.button.text() == "Show answer"


def test_lesson_panel_names_the_panels_that_matter_on_each_frame(qtbot, window):
    panel = window.panels["lesson"]
    window.session.go(1)                     # Prefill: attention, KV cache, timeline
    assert panel.matters.text() == "● On this frame, look at: Attention, KV cache, Timeline"
    window.session.go(2)
    assert panel.matters.text() == "● On this frame, look at: Next-token distribution, KV cache"


def test_frames_panels_are_marked_on_their_docks(qtbot, window):
    for index in range(len(window.session.frames)):
        window.session.go(index)
        matters = set(window.session.frame.panels)
        assert matters, "every frame of the default lesson names its panels"
        for pid, dock in window.docks.items():
            assert dock.windowTitle().startswith(MATTERS_MARK) == (pid in matters), (index, pid)
            assert bool(dock.property("matters")) == (pid in matters)
            bar = dock.titleBarWidget()
            assert bar.marked == bar.label.font().bold() == (pid in matters)
            assert bar.label.text() == dock.windowTitle()
    window.actions["lang_zh"].trigger()
    assert window.docks["distribution"].windowTitle() == MATTERS_MARK + "下一个Token的概率分布"


def test_attention_full_frame_shows_the_stacked_matrix_and_restores_the_toggle(qtbot, window):
    attention = window.panels["attention"]
    press(qtbot, window, Qt.Key.Key_Home)
    press(qtbot, window, Qt.Key.Key_Right, times=7)
    assert window.session.cursor == 7 and not attention.full_matrix_toggle.isChecked()
    press(qtbot, window, Qt.Key.Key_Right)             # frame 9: view = attention_full
    assert window.session.frame.view == ("attention_full",)
    assert attention.full_matrix_toggle.isChecked()
    assert heatmap(attention).shape == (4, 4) and boundary_row(attention) == 2
    assert any(text.startswith("full matrix up to") for text in shown_texts(attention))
    press(qtbot, window, Qt.Key.Key_Right)
    assert not attention.full_matrix_toggle.isChecked()
    assert heatmap(attention).shape == (1, 4)     # the last Decode step's row again
    attention.full_matrix_toggle.setChecked(True)      # the teacher's own choice survives the frame
    press(qtbot, window, Qt.Key.Key_Left)
    press(qtbot, window, Qt.Key.Key_Left)
    assert attention.full_matrix_toggle.isChecked()


# ---------------------------------------------------------------------------- beam search

def beam_session():
    model = load_table_model(resources_dir() / "tables" / "beam-example.json")
    return Session(model, [6], SamplingConfig(mode="beam", num_beams=2, max_new_tokens=2))


def test_beam_panel_shows_the_course_example(qtbot):
    panel = BeamPanel(beam_session())
    qtbot.addWidget(panel)
    rows = {r[0].lstrip("◆ "): r for r in panel.rows()}
    assert rows["A"][1:3] == ("0.600", "0.600") and rows["A"][0] == "◆ A"   # on the greedy path
    assert rows["E"] == ("◆ E", "0.510", "0.306", "kept · ◆ greedy")
    assert rows["D"] == ("D", "0.990", "0.396", "kept")
    assert [r for r in panel.rows() if r[0] == "F"] == [("F", "0.490", "0.294", "pruned"),    # A F
                                                        ("F", "0.010", "0.004", "pruned")]    # B F
    final = panel.final.text()
    assert "1. B D: joint probability 0.396" in final and "2. A E: joint probability 0.306" in final
    assert "Greedy (width 1): A E: joint probability 0.306" in final


def test_beam_panel_outside_beam_mode_and_in_the_window(qtbot, window):
    panel = window.panels["beam"]
    assert panel.note.isVisibleTo(panel) and "Beam search is off" in panel.note.text()
    assert not panel.tree.isVisibleTo(panel)
    window.session.set_sampling(mode="beam", num_beams=2)
    assert not panel.note.isVisibleTo(panel) and panel.rows()
    assert window.errors == []
    window.actions["lang_zh"].trigger()
    assert panel.tree.headerItem().text(1) == "P(Token|前缀)" and "最终候选" in panel.final.text()


def test_the_beam_lessons_tree_frames_bring_the_beam_tree_forward(qtbot, window):
    from explorer.lessons import load_lesson
    assert window.lesson_switcher.switch_lesson(load_lesson("beam"))
    tree_frames = [i for i, f in enumerate(window.session.frames) if "beam" in f.panels]
    assert len(tree_frames) == 3
    for presenting in (False, True):
        if presenting:
            window.actions["presentation"].trigger()
        for index in tree_frames:
            window.session.go(index)
            dock = window.docks["beam"]
            qtbot.waitUntil(lambda d=dock: d.isVisible() and not d.visibleRegion().isEmpty())
            assert window.panels["beam"].rows()           # the tree itself, not the "off" note


# ---------------------------------------------------------------------------- the logits editor

@pytest.fixture
def logits_window(qtbot, window, tmp_path):
    path = tmp_path / "three-logits.toml"
    path.write_text(LOGITS_LESSON, encoding="utf-8")
    window.lesson_switcher.ask_path = lambda: str(path)
    window.actions["open_lesson"].trigger()
    assert window.errors == []
    return window


def test_logits_editor_rebuilds_the_model_and_the_bars_follow(qtbot, logits_window):
    w = logits_window
    dist = w.panels["distribution"]
    assert w.prompt_bar.label.text() == "Logits:" and w.prompt_bar.edit.text() == "2, 1, 0"
    assert column_ids(dist) == [1, 2, 3]                  # no bar for the context token "…"
    assert np.allclose(chart_rows(dist)["raw"].values, softmax([2, 1, 0]), atol=1e-12)
    w.prompt_bar.edit.setFocus()
    w.prompt_bar.edit.setText("0, 3, 1")
    qtbot.keyClick(w.prompt_bar.edit, Qt.Key.Key_Return)
    assert w.errors == []
    assert w.session.model.vocab.pieces == ("…", "A", "B", "C")
    assert column_ids(dist) == [2, 3, 1]                  # columns by probability
    assert np.allclose(chart_rows(dist)["raw"].values, softmax([3, 1, 0]), atol=1e-12)
    assert w.session.run.output_ids == (2,)              # greedy now picks B
    w.prompt_bar.edit.setText("1, 1, 1, 2.5")                # one more number: a new candidate D
    qtbot.keyClick(w.prompt_bar.edit, Qt.Key.Key_Return)
    assert w.session.model.vocab.pieces == ("…", "A", "B", "C", "D")
    assert column_names(dist)[0] == "D" and w.session.run.output_ids == (4,)
    w.prompt_bar.edit.clearFocus()
    assert w.prompt_bar.edit.text() == "1, 1, 1, 2.5"


def test_entered_logits_give_way_to_another_model_with_the_same_prompt(qtbot, logits_window):
    """Once entered, the box's numbers are the model's; a new model (another frame's numbers)
    shows its own, also when the teacher clicks back into the box."""
    from explorer.lessons.models import logits_model
    w = logits_window
    w.prompt_bar.edit.setFocus()
    w.prompt_bar.edit.setText("1 1 1")
    qtbot.keyClick(w.prompt_bar.edit, Qt.Key.Key_Return)
    assert not w.prompt_bar.edit.isModified() and not w.prompt_bar.edit.hasFocus()   # the keys are the player's
    w.prompt_bar.edit.setFocus()
    w.session.set_model(logits_model(("A", "B", "C"), (0.5, 4.0, 1.0)))
    assert w.session.prompt_ids == (0,) and w.prompt_bar.edit.text() == "0.5, 4, 1"


def test_logits_entered_after_a_prompt_typed_on_another_scenario_keep_the_context_token(qtbot, window):
    """output-projection mixes a logits model (base) with the teaching one (valid, padded): a
    teaching prompt typed on a teaching frame used to make the next logits entry fail with
    "prompt ids: id 4 ... outside the vocabulary" (found by a random-actions seed)."""
    window.lesson_switcher.actions["output-projection"].trigger()
    s = window.session
    s.go(2)                                                    # the "valid" scenario's Prefill
    assert s.model.name == "teaching" and not window.prompt_bar.editing_logits
    enter_prompt(qtbot, window, "你爱我")
    assert window.errors == [] and s.prompt_ids == (4, 2, 1)
    s.go(0)                                                    # the base scenario: logits
    assert window.prompt_bar.editing_logits
    enter_prompt(qtbot, window, "1, 2, 3")
    assert window.errors == [] and s.prompt_ids == (0,) and s.model.vocab.pieces == ("…", "甲", "乙", "丙")
    assert s.run.output_ids == (3,)                            # 丙 has the largest logit


@pytest.mark.parametrize("text, problem", [("1, x, 0", "'x' is not a number"), ("1, inf", "not a finite"),
                                           ("", "at least one number")])
def test_bad_logits_are_reported_and_nothing_changes(qtbot, logits_window, text, problem):
    w = logits_window
    model = w.session.model
    enter_prompt(qtbot, w, text)
    assert problem in w.errors[-1]
    assert w.session.model is model and w.prompt_bar.edit.text() == "2, 1, 0"


def test_leaving_a_logits_lesson_gives_the_prompt_back(qtbot, logits_window):
    w = logits_window
    w.lesson_switcher.actions[DEFAULT_LESSON_ID].trigger()
    assert w.prompt_bar.label.text() == "Prompt:" and w.prompt_bar.edit.text() == "我爱"


# ---------------------------------------------------------------------------- language

def test_language_switch_changes_the_new_panels(qtbot, window):
    lesson, beam = window.panels["lesson"], window.panels["beam"]
    english = lesson.text(), beam.note.text()
    window.actions["lang_zh"].trigger()
    assert lesson.text() != english[0] and "课前自测" in lesson.text() and "课后自测" in lesson.text()
    assert window.lesson.summary["zh"] in lesson.text()
    assert lesson.checks("after")[0].button.text() == "显示答案"
    assert beam.note.text() != english[1] and "束搜索" in beam.note.text()
    assert window.menus["lessons"].title() == "课程(&L)"
    assert window.lesson_switcher.actions[DEFAULT_LESSON_ID].text() == window.lesson.title_in("zh")
    window.actions["lang_en"].trigger()
    assert lesson.text() == english[0]


def test_a_window_made_for_export_finds_the_lesson_it_plays(qtbot, window, tmp_path):
    other = MainWindow(window.session.copy(), Settings(str(tmp_path / "e.ini")))
    qtbot.addWidget(other)
    # one source of truth: the window's lesson is its session's, so the copy knows it too
    assert other.lesson is window.lesson and other.lesson.id == "wo-ai-to-eos"
    assert other.panels["lesson"].heading.text() == window.lesson.title_in("en")


# ---------------------------------------------------------------------------- glossary and terms

def test_glossary_panel_lists_every_term_and_filters(qtbot, window):
    from explorer.lessons.glossary import load_glossary
    glossary, panel = load_glossary(), window.panels["glossary"]
    def shown_terms():
        return listed(panel.list, Qt.ItemDataRole.UserRole)

    def item_text(term_id):
        return listed(panel.list)[shown_terms().index(term_id)]

    assert shown_terms() == list(glossary.ids)
    kv = glossary.term("kv-cache")
    assert item_text("kv-cache") == f"{kv.term['en']}\n{kv.definition['en']}"
    qtbot.keyClicks(panel.filter, "mask")
    shown = shown_terms()
    assert "causal-mask" in shown and 0 < len(shown) < len(glossary.ids)
    for term_id in shown:
        t = glossary.term(term_id)
        assert "mask" in (t.term["en"] + t.term["zh"] + t.definition["en"] + term_id).casefold()
    assert panel.count.text() == f"{len(shown)} of {len(glossary.ids)} terms"
    window.actions["lang_zh"].trigger()
    assert shown_terms() == shown and panel.filter.placeholderText() == "筛选术语…"
    panel.filter.clear()
    assert shown_terms() == list(glossary.ids)
    assert item_text("kv-cache") == f"{kv.term['zh']}\n{kv.definition['zh']}"


def _anchor_point(view, term_id):
    """Where the first link to `term_id` is drawn, in viewport coordinates."""
    from PySide6.QtGui import QTextCursor
    doc = view.document()
    block = doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            f = it.fragment()
            if f.charFormat().anchorHref() == f"term:{term_id}":
                cursor = QTextCursor(doc)
                cursor.setPosition(f.position() + f.length() // 2)
                return view.cursorRect(cursor).center()
            it += 1
        block = block.next()
    raise AssertionError(f"no link to {term_id}")


def test_explanation_marks_terms_hover_shows_and_click_selects_the_definition(qtbot, window):
    from PySide6.QtWidgets import QToolTip

    from explorer.lessons.glossary import load_glossary
    glossary, panel = load_glossary(), window.panels["explanation"]
    window.session.go(1)                                  # Prefill: "... The attention matrix ..."
    linked = links_in(panel.view.document(), "term")
    assert {"attention", "causal-mask", "softmax"} <= set(linked)
    assert "attention" in dotted_in(panel.view.document())
    assert linked.count("attention") == 1                 # first mention per section only
    window.docks["explanation"].raise_()
    point = _anchor_point(panel.view, "attention")
    qtbot.mouseMove(panel.view.viewport(), point)
    qtbot.waitUntil(lambda: panel.last_tip != "", timeout=60_000)
    assert glossary.term("attention").definition["en"] in panel.last_tip
    assert QToolTip.isVisible() and glossary.term("attention").definition["en"] in QToolTip.text()
    point = _anchor_point(panel.view, "causal-mask")
    qtbot.mouseClick(panel.view.viewport(), Qt.MouseButton.LeftButton, pos=point)
    assert window.panels["glossary"].selected_term() == "causal-mask"
    assert glossary.term("causal-mask").definition["en"] in panel.last_tip
    window.actions["lang_zh"].trigger()
    assert "attention" in links_in(panel.view.document(), "term")     # 注意力 in the Chinese text
    assert glossary.term("attention").term["zh"] in dotted_in(panel.view.document())
