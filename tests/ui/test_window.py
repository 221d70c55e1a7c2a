"""The whole window, driven like a teacher drives it (offscreen)."""

import json

import pytest
from PySide6.QtCore import QRect, Qt
from PySide6.QtWidgets import QApplication

from explorer.core.models.teaching import default_params_path
from explorer.i18n import tr
from explorer.lessons import DEFAULT_LESSON_ID, load_lesson
from explorer.ui.app import build_window
from teacher import drawn_texts, enter_prompt, kv_states, table_texts, type_text


def press(qtbot, window, key, times=1):
    for _ in range(times):
        qtbot.keyClick(window, key)


def test_keyboard_stepping_shows_cache_lengths_selections_and_kv_states(qtbot, window):
    s, kv, timeline = window.session, window.panels["kv"], window.panels["timeline"]
    seen = []
    press(qtbot, window, Qt.Key.Key_Home)
    for _ in range(len(s.frames)):
        f = s.frame
        # the KV grid shows exactly the frame's states (one-off rule)
        shown = kv_states(kv)                                       # None: scrolled out of view
        assert shown[-1] and [st for st in shown if st] == [st.value for st, on in zip(f.states, shown) if on]
        assert timeline.counts.text().startswith(f"visible sequence {f.visible_count}  ·  in cache {f.cache_len}  ·  "
                                                 "text shown ")
        if f.kind == "pick":
            seen.append((s.step.selected_id, f.cache_len))
        press(qtbot, window, Qt.Key.Key_Right)
    assert seen == [(3, 2), (5, 3), (6, 4)]
    assert s.at_end and s.frame.kind == "stop"
    press(qtbot, window, Qt.Key.Key_Left, times=3)      # the lesson ends on three stop frames
    assert s.frame.kind == "pick"
    press(qtbot, window, Qt.Key.Key_End)
    assert table_texts(timeline.table)[-1][0] == "Stop: eos"


def test_space_plays_and_stops_at_the_last_frame(qtbot, window):
    player = window.panels["player"]
    player.dwell.setValue(0.2)
    press(qtbot, window, Qt.Key.Key_Space)
    assert player.playing
    qtbot.waitUntil(lambda: window.session.at_end and not player.playing)
    assert player.counter.text() == f"Frame {len(window.session.frames)} / {len(window.session.frames)}"


def test_language_switch_changes_the_visible_strings(qtbot, window):
    window.session.go(2)
    english = {pid: window.docks[pid].windowTitle() for pid in window.docks}
    title_en = window.panels["player"].title.text()
    window.actions["lang_zh"].trigger()
    assert window.session.lang == "zh"
    for pid, dock in window.docks.items():
        assert dock.windowTitle() != english[pid]
    assert window.panels["player"].title.text() != title_en
    assert window.panels["player"].title.text() == "用位置1的logits选出“学习”（p = 0.4700）"
    assert window.menus["file"].title() == tr("menu.file", "zh")
    assert "发生了什么" in window.panels["explanation"].view.toPlainText()
    window.actions["lang_en"].trigger()
    assert window.panels["player"].title.text() == title_en


def test_open_bad_parameters_names_the_problem_and_keeps_the_model(qtbot, window, tmp_path):
    doc = json.loads(default_params_path().read_text(encoding="utf-8"))
    doc["tensors"]["embed"][0][0] = "x"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    before = window.session.model
    window.model_switcher.ask_params_path = lambda: str(bad)
    window.actions["open_params"].trigger()
    assert window.session.model is before
    assert "bad.json: tensors.embed" in window.errors[-1]
    assert window._last_box.isVisible()


def test_open_good_parameters_switches_model(qtbot, window):
    window.model_switcher.ask_params_path = lambda: str(default_params_path())
    window.actions["open_params"].trigger()
    assert window.errors == []
    assert window.session.run.output_ids == (3, 5, 6)


def test_a_prompt_typed_and_not_yet_entered_survives_other_changes(qtbot, window):
    """A teacher types a prompt, then sets the token budget before pressing Enter: the rerun
    with the budget keeps the typed text in the box, and Enter runs it."""
    box, s = window.prompt_bar.edit, window.session
    box.setFocus()
    box.selectAll()
    type_text(box, "我爱学习")
    controls = window.panels["controls"]
    controls.max_new_spin.setFocus()
    controls.max_new_spin.setValue(2)                   # reruns the old prompt with the new budget
    assert s.config.max_new_tokens == 2 and s.prompt_ids == (1, 2)
    assert box.text() == "我爱学习"
    qtbot.keyClick(box, Qt.Key.Key_Return)
    assert s.prompt_ids == (1, 2, 3) and box.text() == "我爱学习"
    type_text(box, "！")                                # typed again, then a lesson with its own prompt
    assert window.lesson_switcher.switch_lesson(load_lesson(DEFAULT_LESSON_ID))
    assert box.text() == "我爱"


def test_a_long_prompts_title_keeps_to_its_two_lines(qtbot, window):
    """A 16-token prompt: its title lists the ends of the ids; narrowed, the title is cut
    short with "…" and shows itself whole on hover."""
    enter_prompt(qtbot, window, "我爱" * 8)
    window.session.go(0)
    title = window.panels["player"].title
    full = title.text()
    assert "[1, 2, 1, 2, 1, …(+6)…, 2, 1, 2, 1, 2]" in full and title.toolTip() == ""

    def fits(label):
        room = label.contentsRect()
        used = label.fontMetrics().boundingRect(QRect(0, 0, room.width(), 1 << 20), Qt.TextFlag.TextWordWrap,
                                                label.text())
        return used.height() <= room.height()

    title.resize(260, title.height())
    assert title.text().endswith("…") and fits(title) and title.toolTip() == full
    assert full.startswith(title.text()[:-1])
    title.resize(3000, title.height())
    assert title.text() == full and title.toolTip() == ""


@pytest.mark.parametrize("choice, opens", [({}, True), ({"model": "teaching"}, False),
                                            ({"lesson": DEFAULT_LESSON_ID}, False),
                                            ({"params_path": str(default_params_path())}, False)])
def test_the_lesson_list_opens_at_a_first_start_only_without_a_choice(qtbot, tmp_path, monkeypatch, choice, opens):
    import explorer.ui.window as window_module
    monkeypatch.setattr(window_module.QGuiApplication, "platformName", staticmethod(lambda: "xcb"))
    w = build_window(settings_path=str(tmp_path / "s.ini"), compact=False, **choice)
    qtbot.addWidget(w)
    assert w.start_page_at_first_start is opens


def test_zoom_and_presentation_mode_change_the_type_size(qtbot, window):
    base = QApplication.font().pointSizeF()
    dist = window.panels["distribution"]
    window.session.go(2)                # a pick: the chart is drawn

    def chart_text_follows():           # the painted chart's labels follow the type size too
        sizes = {d.point_size for d in drawn_texts(dist.chart)}
        return bool(sizes) and min(sizes) == pytest.approx(0.9 * dist.font().pointSizeF())

    def headings_follow():              # the frame title and the lesson's name stay larger than the text
        size = dist.font().pointSizeF()
        title = window.panels["player"].title
        return (title.font().pointSizeF() == pytest.approx(1.3 * size) and title.font().bold()
                and title.height() >= 2 * title.fontMetrics().lineSpacing()
                and window.panels["lesson"].heading.font().pointSizeF() == pytest.approx(1.2 * size))

    window.actions["zoom_in"].trigger()
    assert QApplication.font().pointSizeF() == pytest.approx(base + 1)
    qtbot.waitUntil(lambda: dist.font().pointSizeF() == pytest.approx(base + 1))
    assert chart_text_follows() and headings_follow()
    window.actions["presentation"].trigger()
    # 1.4 times on a 1080-line screen, in proportion on others (the offscreen one has 800)
    scale = 1.4 * window.screen().availableGeometry().height() / 1080
    assert window.desk_layout.presentation_scale() == pytest.approx(scale)
    assert QApplication.font().pointSizeF() == pytest.approx((base + 1) * scale)
    qtbot.waitUntil(lambda: dist.font().pointSizeF() == pytest.approx((base + 1) * scale))
    assert chart_text_follows() and headings_follow()
    window.actions["presentation"].trigger()
    window.actions["zoom_out"].trigger()
    assert QApplication.font().pointSizeF() == pytest.approx(base)


# presentation mode's large place on the default lesson: its tabs (the beam tree, empty, left out)
PRESENTED_TABS = {"distribution", "attention", "kv", "lens", "transcript"}   # the logit lens and the transcript: tabs of the large place too (A/B only with a B run)


def tab_group(window, pid):
    """The panel ids in the tab group of `pid`'s dock (itself alone when not tabbed), those
    hidden left out (presentation mode hides a panel with nothing to show)."""
    tabbed = window.tabifiedDockWidgets(window.docks[pid])
    return {pid} | {other for other, dock in window.docks.items() if dock in tabbed and not dock.isHidden()}


def in_sight(window, pid):
    dock = window.docks[pid]
    return dock.isVisible() and not dock.visibleRegion().isEmpty()


def shown_window(qtbot, path):
    w = build_window(settings_path=path, compact=False)
    qtbot.addWidget(w)
    w.resize(1600, 960)
    w.show()
    qtbot.waitExposed(w)
    return w


def test_presentation_mode_shows_fewer_larger_panels_and_gives_the_desk_layout_back(qtbot, window):
    with qtbot.waitSignal(window.desk_layout.fit_settled, timeout=60_000):    # the desk as the teacher sees it
        window.session.go(2)                     # a pick: the distribution and the KV cache matter
    qtbot.keyClick(window, Qt.Key.Key_Escape)    # at the desk, Escape does not enter it
    assert not window.desk_layout.presenting
    desk = {pid: dock.geometry() for pid, dock in window.docks.items() if in_sight(window, pid)}
    window.actions["presentation"].trigger()
    assert window.desk_layout.presenting and window.isFullScreen() and window.actions["presentation"].isChecked()
    # the large place's tabs (no beam tree: no beam search ran), the column beside it
    assert tab_group(window, "distribution") == PRESENTED_TABS and window.docks["beam"].isHidden()
    assert tab_group(window, "explanation") == {"explanation", "lesson", "glossary"}
    assert all(tab_group(window, pid) == {pid} for pid in ("timeline", "controls"))
    in_front = ("timeline", "distribution", "controls", "explanation")
    qtbot.waitUntil(lambda: all(in_sight(window, pid) for pid in in_front))
    assert not in_sight(window, "attention") and not in_sight(window, "player")     # the player: chrome, hidden
    window.session.go(3)                         # a Decode: attention comes forward
    qtbot.waitUntil(lambda: in_sight(window, "attention"))
    in_front = ("player", "kv", *in_front)       # the desk shows these too
    qtbot.keyClick(window, Qt.Key.Key_Escape)                 # Escape leaves it, as F11 does
    assert not window.desk_layout.presenting and not window.actions["presentation"].isChecked()
    qtbot.waitUntil(lambda: tab_group(window, "distribution") == {"distribution"})
    assert tab_group(window, "lesson") == {"lesson", "glossary", "beam", "lens", "transcript", "versus"}
    qtbot.waitUntil(lambda: all(in_sight(window, pid) for pid in (*in_front, "attention")))
    # sized as before, not as the larger type had them (the player's two-line title, say)
    qtbot.waitUntil(lambda: {pid: window.docks[pid].geometry() for pid in desk} == desk)


def test_a_panel_popped_out_full_screen_goes_back_before_presentation_mode(qtbot, window):
    window.session.go(2)                         # a pick: the chart, the weights and the cache to show
    window.desk_layout.panel_full_screen("distribution")
    dock = window.docks["distribution"]
    assert dock.isFloating() and dock.isFullScreen()
    window.actions["presentation"].trigger()
    assert not dock.isFloating() and tab_group(window, "distribution") == PRESENTED_TABS
    window.actions["presentation"].trigger()
    qtbot.waitUntil(lambda: tab_group(window, "distribution") == {"distribution"})
    assert not dock.isFloating() and in_sight(window, "distribution")    # docked at the desk, as before it popped out


def test_escape_puts_a_popped_out_panel_back_then_leaves_presentation_mode(qtbot, window):
    dock = window.docks["distribution"]
    window.desk_layout.panel_full_screen("distribution")
    qtbot.keyClick(dock, Qt.Key.Key_Escape)
    assert not dock.isFloating()
    window.actions["presentation"].trigger()
    window.desk_layout.panel_full_screen("distribution")
    assert dock.isFloating() and dock.isFullScreen()
    qtbot.keyClick(dock, Qt.Key.Key_Escape)                  # first the panel goes back
    assert not dock.isFloating() and window.desk_layout.presenting
    qtbot.keyClick(window, Qt.Key.Key_Escape)                # then presentation mode ends
    assert not window.desk_layout.presenting
    line = window.prompt_bar.edit                                # and Escape is the widgets' again
    assert not window.desk_layout.escape.isEnabled()
    qtbot.keyClick(line, Qt.Key.Key_Escape)
    assert not window.desk_layout.presenting and not dock.isFloating()


def test_a_narrow_screen_gets_attention_and_distribution_as_tabs_of_one_dock(qtbot, tmp_path):
    from explorer.ui.shell.desk_layout import is_compact_width
    assert is_compact_width(1366) and is_compact_width(1600) and not is_compact_width(1920)
    w = build_window(settings_path=str(tmp_path / "s.ini"))      # the offscreen screen: 800 px wide
    qtbot.addWidget(w)
    w.resize(800, 780)
    w.show()
    qtbot.waitExposed(w)
    assert w.compact and tab_group(w, "distribution") == {"distribution", "attention"}
    assert all(tab_group(w, pid) == {pid} for pid in ("controls", "explanation", "timeline", "kv"))
    w.session.go(2)                              # a pick: the distribution is in front
    qtbot.waitUntil(lambda: in_sight(w, "distribution") and not in_sight(w, "attention"))
    w.session.go(3)                              # a Decode: attention comes forward
    qtbot.waitUntil(lambda: in_sight(w, "attention"))
    # sharing one dock, the chart and the explanation are wider than four panels in a row allow
    assert w.docks["distribution"].width() > w.width() / 3
    w.reset_layout()
    assert tab_group(w, "distribution") == {"distribution", "attention"}


def test_an_exported_window_slide_is_laid_out_for_its_width_not_the_screen(tmp_path):
    from explorer.export.spec import ExportSpec
    from explorer.lessons import DEFAULT_LESSON_ID, load_lesson
    from explorer.ui.slides.window_style import export_window
    from explorer.ui.window import MainWindow
    session = load_lesson(DEFAULT_LESSON_ID).build_session()
    for width, compact in ((1920, False), (1280, True)):
        spec = ExportSpec(tmp_path, width=width, height=width * 9 // 16, style="window")
        with export_window(MainWindow, session, spec) as window:
            assert window.compact is compact


def test_a_window_never_asks_for_more_height_than_the_screen_has(qtbot, window):
    chart = window.panels["distribution"].chart

    def fits():                                      # the window's own limit: the screen less its frame
        return window.minimumSizeHint().height() <= window.desk_layout.screen_room()

    def settled_after(change):
        """`change`, then wait until the window has checked it fits and changed nothing more."""
        with qtbot.waitSignal(window.desk_layout.fit_settled, timeout=60_000):
            change()

    settled_after(lambda: window.session.go(2))
    assert len(chart.rows) == 2 and fits()
    few = chart.minimumSizeHint().height()           # greedy: all it needs
    settled_after(lambda: window.session.set_sampling(mode="sample", temperature=0.8, top_k=3, top_p=0.9,
                                                      min_p=0.01))
    assert len(chart.rows) == 6 and fits()           # raw, four stages, final
    many = chart.minimumSizeHint().height()
    settled_after(lambda: qtbot.keyClick(window, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier))
    assert chart.minimumSizeHint().height() < many and fits()    # larger type: the chart's rows give way
    settled_after(lambda: qtbot.keyClick(window, Qt.Key.Key_Minus, Qt.KeyboardModifier.ControlModifier))
    settled_after(lambda: window.session.set_sampling(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0))
    assert len(chart.rows) == 2 and fits()           # room again: the chart asks for all it needs
    assert chart.minimumSizeHint().height() == few


def test_the_presentation_layout_is_remembered_and_the_next_start_is_at_the_desk(qtbot, tmp_path):
    path = str(tmp_path / "s.ini")
    w = shown_window(qtbot, path)
    w.actions["presentation"].trigger()
    w.tabifyDockWidget(w.docks["explanation"], w.docks["controls"])      # the teacher's own arrangement
    w.actions["presentation"].trigger()
    qtbot.waitUntil(lambda: tab_group(w, "controls") == {"controls"})    # the desk, as it was
    w.actions["presentation"].trigger()
    assert "controls" in tab_group(w, "explanation")
    w.close()                                                            # closed while presenting
    again = shown_window(qtbot, path)
    assert not again.desk_layout.presenting and not again.isFullScreen()
    assert tab_group(again, "controls") == {"controls"} and tab_group(again, "distribution") == {"distribution"}
    again.actions["presentation"].trigger()
    assert "controls" in tab_group(again, "explanation")
    again.session.go(2)
    again.reset_layout()                                                 # while presenting: the default one
    assert tab_group(again, "controls") == {"controls"}
    assert tab_group(again, "distribution") == PRESENTED_TABS


def test_a_damaged_presentation_layout_in_the_settings_gives_the_default_one(qtbot, tmp_path):
    from PySide6.QtCore import QByteArray

    from explorer.ui.settings import Settings
    path = str(tmp_path / "s.ini")
    settings = Settings(path)
    settings["presentation_state"] = QByteArray(b"not a layout")
    settings.sync()
    assert Settings(path)["presentation_state"] == QByteArray(b"not a layout")
    w = shown_window(qtbot, path)
    w.session.go(2)
    w.actions["presentation"].trigger()
    assert tab_group(w, "distribution") == PRESENTED_TABS and w.errors == []


def test_settings_are_remembered_and_reset(qtbot, tmp_path):
    path = str(tmp_path / "s.ini")
    w = build_window(settings_path=path)
    qtbot.addWidget(w)
    w.set_lang("zh")
    w.set_theme("high-contrast")
    w.close()
    again = build_window(settings_path=path)
    qtbot.addWidget(again)
    assert again.session.lang == "zh" and again.actions["high_contrast"].isChecked()
    again.reset_layout()
    third = build_window(settings_path=path)
    qtbot.addWidget(third)
    assert third.session.lang == "en" and not third.actions["high_contrast"].isChecked()
