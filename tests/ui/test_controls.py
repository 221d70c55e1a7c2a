"""The sampling controls rerun the session live, follow its config when it changes from
elsewhere without echoing back, and name a rejected value in red without changing anything."""


import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from explorer.core.models.teaching import load_teaching_model
from explorer.session import Session
from explorer.ui.panels.controls import SamplingControls, parse_stop_strings
from teacher import label_showing, shows


@pytest.fixture
def session():
    return Session(load_teaching_model(), [1, 2])


@pytest.fixture
def controls(qtbot, session):
    widget = SamplingControls(session)
    qtbot.addWidget(widget)
    widget.resize(320, 600)
    widget.show()
    return widget


def run_changes(session):
    seen = []
    session.subscribe("run_changed", lambda s: seen.append(s.config))
    return seen


def test_every_slider_reruns_live_while_it_moves(controls, session):
    seen = run_changes(session)
    for name, ticks, value in (("temperature", 150, 1.5), ("top_k", 3, 3), ("top_p", 80, 0.8),
                               ("min_p", 5, 0.05), ("repetition_penalty", 120, 1.2)):
        controls.slider(name).setValue(ticks)
        assert getattr(session.config, name) == value
        assert controls.spin(name).value() == pytest.approx(value)
    assert len(seen) == 5


def test_arrow_keys_and_the_spin_box_move_the_same_setting(qtbot, controls, session):
    qtbot.keyClick(controls.slider("top_p"), Qt.Key.Key_Left)
    assert session.config.top_p == 0.99
    controls.spin("top_p").setValue(0.5)
    assert session.config.top_p == 0.5 and controls.slider("top_p").value() == 50
    qtbot.keyClick(controls.slider("top_k"), Qt.Key.Key_Right)
    assert session.config.top_k == 1 and isinstance(session.config.top_k, int)


def test_the_other_settings_apply(qtbot, controls, session):
    controls.mode_combo.setCurrentIndex(controls.mode_combo.findData("sample"))
    controls.seed_spin.setValue(7)
    controls.max_new_spin.setValue(5)
    controls.order_combo.setCurrentIndex(controls.order_combo.findData("llama.cpp"))
    controls.stop_edit.setText("！, 你")
    qtbot.keyClick(controls.stop_edit, Qt.Key.Key_Return)
    c = session.config
    assert (c.mode, c.seed, c.max_new_tokens, c.stop_strings) == ("sample", 7, 5, ("！", "你"))
    assert c.order[-1] == "temperature"
    assert controls.order_text.text() == "penalty → top-k → top-p → min-p → temperature"


def test_beam_width_only_in_beam_mode(controls, session):
    assert not controls.beams_spin.isVisible()
    controls.mode_combo.setCurrentIndex(controls.mode_combo.findData("beam"))
    assert session.config.mode == "beam" and controls.beams_spin.isVisible()
    controls.beams_spin.setValue(3)
    assert session.config.num_beams == 3 and session.beam is not None


def test_controls_follow_the_session_without_echoing_back(controls, session):
    seen = run_changes(session)
    session.set_sampling(mode="sample", temperature=2.25, top_k=4, top_p=0.7, min_p=0.1,
                         repetition_penalty=1.3, seed=11, max_new_tokens=6, stop_strings=("！",),
                         order="llama.cpp")
    assert len(seen) == 1                                   # no rerun echoed from the widgets
    assert controls.slider("temperature").value() == 225 and controls.spin("temperature").value() == 2.25
    assert controls.slider("top_k").value() == 4 and controls.slider("top_p").value() == 70
    assert controls.slider("min_p").value() == 10 and controls.slider("repetition_penalty").value() == 130
    assert controls.mode_combo.currentData() == "sample" and controls.seed_spin.value() == 11
    assert controls.max_new_spin.value() == 6 and controls.stop_edit.text() == "！"
    assert controls.order_combo.currentData() == "llama.cpp"


def test_a_custom_order_shows_no_preset_but_the_order_itself(controls, session):
    session.set_sampling(order="top_k,temperature")
    assert controls.order_combo.currentIndex() == -1
    assert controls.order_text.text() == "top-k → temperature"


def test_an_empty_stop_string_is_named_in_red_and_changes_nothing(qtbot, controls, session):
    before_config, before_run = session.config, session.run
    controls.stop_edit.setText("！,,你")
    qtbot.keyClick(controls.stop_edit, Qt.Key.Key_Return)
    label = label_showing(controls, "not applied")              # drawn in the theme's red
    assert label.text().startswith("Stop strings: not applied.") and "stop_strings" in label.text()
    assert label.palette().color(label.foregroundRole()) == QColor(controls.theme.error) == QColor("#C00000")
    assert session.config is before_config and session.run is before_run
    controls.stop_edit.setText("！")                          # fixed: applied, message gone
    qtbot.keyClick(controls.stop_edit, Qt.Key.Key_Return)
    assert session.config.stop_strings == ("！",) and not shows(controls, "not applied")


def test_a_value_the_widget_allows_but_the_run_cannot_take_is_refused(controls, session):
    session.force(2, 5)                                      # what-if at step 2 ...
    before = session.config
    controls.max_new_spin.setValue(2)                         # ... then only steps 0 and 1 remain
    assert label_showing(controls, "not applied").text().startswith("Max new tokens: not applied.")
    assert session.config is before and session.overrides == {2: 5}


def test_in_greedy_mode_the_temperature_is_marked_as_not_in_use(controls, session):
    assert session.config.mode == "greedy"
    assert controls._hints["temperature"].text().startswith("Not used by greedy")
    assert not controls._labels["temperature"].isEnabled() and controls.slider("temperature").isEnabled()
    controls.mode_combo.setCurrentIndex(controls.mode_combo.findData("sample"))
    assert controls._hints["temperature"].text() == "0 = greedy" and controls._labels["temperature"].isEnabled()


def test_switching_to_chinese_changes_the_labels(controls, session):
    english = controls._labels["temperature"].text()
    session.set_lang("zh")
    assert english == "Temperature" and controls._labels["temperature"].text() == "温度"
    assert controls._hints["temperature"].text() == "贪心和束搜索不使用温度：直接取最高的Token"   # greedy mode
    assert controls._hints["top_p"].text() == "1 = 关闭"
    assert controls.mode_combo.itemText(0) == "贪心"
    assert controls.order_text.text().startswith("重复惩罚 → 温度")


def test_stop_strings_text_parsing():
    assert parse_stop_strings("") == () and parse_stop_strings("  ") == ()
    assert parse_stop_strings("！, 。") == ("！", "。")
    assert parse_stop_strings("a,,b") == ("a", "", "b")


def test_in_beam_mode_every_setting_the_search_does_not_read_is_disabled_and_says_why(controls, session):
    controls.mode_combo.setCurrentIndex(controls.mode_combo.findData("beam"))
    assert session.config.mode == "beam" and controls.beams_spin.isEnabled() and controls.max_new_spin.isEnabled()
    blind = controls._beam_blind()
    assert {"temperature", "top_k", "top_p", "min_p", "seed", "order", "stop_strings", "typical_p",
            "presence_penalty"} <= set(blind)
    for name, widgets in (("repetition_penalty", (controls.slider("repetition_penalty"),)),   # applied, as HF does
                          ("min_new_tokens", (controls.spin("min_new_tokens"),)), ("logit_bias", (controls.bias_edit,))):
        assert name not in blind and all(w.isEnabled() and not w.toolTip() for w in widgets)
    for name, widgets in blind.items():
        for widget in (*widgets, controls._labels[name]):
            assert not widget.isEnabled(), name
            assert widget.toolTip().startswith("Not used by beam search"), name
    controls.mode_combo.setCurrentIndex(controls.mode_combo.findData("sample"))     # back: usable again
    for name, widgets in blind.items():
        assert all(w.isEnabled() and not w.toolTip() for w in widgets), name
        assert controls._labels[name].isEnabled()
    assert controls._labels["typical_p"].toolTip().startswith("Keep the tokens")     # its own tip is back


def test_the_beam_panel_says_which_processors_shaped_the_tree(qtbot, session):
    from explorer.ui.panels.beam import BeamPanel
    session.set_sampling(mode="beam", repetition_penalty=2.0)
    panel = BeamPanel(session)
    qtbot.addWidget(panel)
    panel.refresh()
    assert "repetition_penalty reshaped every beam's log-probabilities" in panel.caption.text()
    session.set_sampling(repetition_penalty=1.0)
    panel.refresh()
    assert "reshaped" not in panel.caption.text()
