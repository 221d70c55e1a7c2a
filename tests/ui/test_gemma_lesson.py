"""The lesson “我爱 on a model that reads Chinese” (gemma-wo-ai): Gemma 3 270M reads 我爱 as
the course's two tokens, greedy decoding loops, a repetition penalty breaks the loop, and
SmolLM2 reads the same prompt as byte tokens. Its texts are checked against what its runs
computed (properties of the runs, not pasted outputs); it exports; the lesson list offers
it, or offers to install its models. Playing every frame in both languages and tracing it
are tested with every shipped lesson (test_lessons.py).

Expected values are the tokenizers' ids and the models' file facts, written here as constants."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from explorer.catalog import registry as model_registry
from explorer.cli.main import main
from explorer.lessons import load_lesson
from explorer.session.narration import frame_explanation, frame_title
from explorer.ui.app import build_window
from teacher import at_rest, column_names, drawn_texts, first_row_height, kv_row_heads, painted_bar_height

WO_AI = (2, 237169, 238587)          # <bos> 我 爱 on Gemma's tokenizer
WO, AI = WO_AI[1:]
LONG = 180_000                       # ms: a generous bound on a shared machine, not a speed claim


@pytest.fixture(scope="module")
def session(gemma3, smollm2):
    return load_lesson("gemma-wo-ai").build_session()


def scenario_run(session, name):
    names = [n for n, _ in session.content.scenarios]
    return session.scenario_results()[names.index(name)][0]


def texts(session, index, lang="en"):
    """(title, {section: text}) of frame `index`, after moving there."""
    session.go(index)
    frame, run, vocab = session.frame, session.run, session.model.vocab
    return frame_title(frame, run, vocab, lang), frame_explanation(frame, run, vocab, lang)


def frame_index(session, scenario, kind, step=None):
    names = [n for n, _ in session.content.scenarios]
    for i, (plan, frame) in enumerate(zip(session.content.plans, session.frames)):
        if names[plan.scenario] == scenario and frame.kind == kind and (step is None or frame.step == step):
            return i
    raise AssertionError(f"no {kind} frame of step {step} on {scenario!r}")


def has_pair(ids, a, b) -> bool:
    return any(x == a and y == b for x, y in zip(ids, ids[1:]))


def test_gemma_reads_我爱_as_the_courses_two_tokens_and_loops_greedily(session, gemma3):
    run, vocab = scenario_run(session, "base"), gemma3.vocab
    session.go(0)
    assert session.model is gemma3                          # the shared copy, not a second one
    assert run.prompt_ids == WO_AI and [vocab.display_piece(i) for i in WO_AI[1:]] == ["我", "爱"]
    out = run.output_ids
    assert run.finish_reason == "length" and len(out) == 8
    assert vocab.display_piece(out[0]) == "我家"            # two characters in one token
    assert has_pair(out, WO, AI) and out[4:8] == out[0:4]   # the prompt comes back, every four tokens
    assert run.output_text.count("我爱") >= 1
    assert all(s.recompute_max_abs_diff is not None and s.recompute_max_abs_diff < 1e-3 for s in run.steps)


def test_the_penalty_breaks_the_loop_after_the_same_first_two_picks(session):
    base, penalty = scenario_run(session, "base"), scenario_run(session, "penalty")
    assert penalty.config.repetition_penalty == 1.5 and base.config.repetition_penalty == 1.0
    assert penalty.output_ids[:2] == base.output_ids[:2] and penalty.output_ids[2] != base.output_ids[2] == WO
    assert not has_pair(penalty.prompt_ids[-1:] + penalty.output_ids, WO, AI)
    assert "我爱" not in penalty.output_text and "我爱" in base.output_text
    assert penalty.finish_reason == "stop_string"
    # the penalty stage pushed 我 down at the third pick: it had been the top candidate
    stages = penalty.steps[2].distribution
    assert stages.probs[WO] < penalty.steps[2].distribution.probs[penalty.output_ids[2]]
    assert base.steps[2].distribution.probs[WO] > stages.probs[WO]


def test_smollm2_reads_我爱_as_five_byte_tokens_and_writes_one_character_in_three(session, smollm2):
    run, vocab = scenario_run(session, "smollm2"), smollm2.vocab
    assert vocab.decode(run.prompt_ids) == "我爱" and len(run.prompt_ids) == 5
    assert all(vocab.split_characters(run.prompt_ids))
    assert len(run.output_ids) == 3 and len(run.output_text) == 1
    session.go(frame_index(session, "smollm2", "input"))
    assert session.model is smollm2                         # the frame's own model


def test_the_frames_say_what_the_runs_computed(session, gemma3):
    base, penalty = scenario_run(session, "base"), scenario_run(session, "penalty")
    title, _ = texts(session, 0)
    assert title == "我爱 on Gemma 3: <bos> 我 爱 = [2, 237169, 238587]"
    title, explain = texts(session, frame_index(session, "base", "pick", 0))
    assert f"p = {base.steps[0].distribution.probs[base.output_ids[0]]:.4f}" in title
    assert f"out of {gemma3.config.vocab_size:,} candidates" in title
    title, explain = texts(session, frame_index(session, "base", "stop"))
    assert f"“我爱{base.output_text}”" in title and "我爱我家" in title
    title, explain = texts(session, frame_index(session, "penalty", "pick", 2))
    third = gemma3.vocab.display_piece(penalty.output_ids[2])
    assert f"the third pick is {third}" in title and "The first two picks are the same, 我家 and ，" in explain["what"]
    title, explain = texts(session, frame_index(session, "penalty", "stop"))
    assert f"“我爱{penalty.output_text}" in title and "我爱 is not written again" in explain["why"]
    title, explain = texts(session, frame_index(session, "smollm2", "input"), "zh")
    assert title == "对照：SmolLM2把“我爱”读成5个字节Token"


def test_the_window_frame_states_the_models_layer_pattern(session, gemma3):
    windows = gemma3.config.windows                        # per layer: 512, or 0 for a global layer
    title, explain = texts(session, frame_index(session, "base", "decode", 1))
    local = sum(1 for w in windows if w)
    assert f"{local} of the {len(windows)} layers read only the latest {max(windows)} positions" in title
    assert [i for i, w in enumerate(windows) if not w] == [5, 11, 17]
    assert "layers 5, 11 and 17" in explain["what"]
    assert session.frame.cache_len < max(windows)          # short: nothing hatched, and it opens fast


def test_the_lesson_exports_its_first_frames(session, qapp, capsys, tmp_path):
    assert main(["export", "--lesson", "gemma-wo-ai", "--frames", "1-3", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    pngs = sorted(p.name for p in tmp_path.glob("*.png"))
    assert len(pngs) == 3 and pngs[0].startswith("01-input")


# ---------------------------------------------------------------------------- in the window

def test_the_lesson_list_offers_it_on_gemma_and_opens_it(qtbot, window, gemma3, smollm2):
    page = window.lesson_switcher.show_start_page()
    button = page.open_buttons["gemma-wo-ai"]
    texts_shown = [label.text() for label in button.parentWidget().findChildren(QLabel)]
    assert button.text() == "Open" and "Runs on the real model Gemma 3 270M." in texts_shown
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: at_rest(window), timeout=LONG)
    s = window.session
    assert window.errors == [] and window.lesson.id == "gemma-wo-ai" and s.model is gemma3
    assert len(kv_row_heads(window.panels["kv"], every=True)) == 2 * len(gemma3.config.windows)
    s.go(frame_index(s, "base", "pick", 0))
    distribution = window.panels["distribution"]
    assert column_names(distribution)[0] == "我家"
    # p = 0.109 of 262,144 tokens: the bars fill their rows against an axis that ends at 0.12, written there
    chart = distribution.chart
    left_of_bars = chart.bar_center(0, 0).x() - (chart.bar_center(0, 1).x() - chart.bar_center(0, 0).x()) / 2
    ticks = [d.text for d in drawn_texts(chart) if d.box.right() < left_of_bars]
    assert ticks.count("0.12") == len(chart.rows) and "1" not in ticks
    assert painted_bar_height(chart, 0, 0) > 0.5 * first_row_height(chart)
    s.go(frame_index(s, "smollm2", "input"))               # the side-by-side frame: SmolLM2's 30 layers
    assert s.model is smollm2 and len(kv_row_heads(window.panels["kv"], every=True)) == 60 and window.errors == []


def test_without_its_models_the_list_offers_to_install_them_one_after_the_other(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv(model_registry.CACHE_ENV, str(tmp_path / "empty-cache"))
    model_registry.cache_dir().mkdir()
    w = build_window(settings_path=str(tmp_path / "settings.ini"), compact=False)
    qtbot.addWidget(w)
    page = w.lesson_switcher.show_start_page()
    button = page.open_buttons["gemma-wo-ai"]
    assert button.text() == "Install and open…"
    shown = " ".join(label.text() for label in button.parentWidget().findChildren(QLabel))
    assert "explorer model install gemma3-270m" in shown and "explorer model install smollm2" in shown
    installs = []
    w.model_switcher.install_model = lambda name, then=None: installs.append((name, then)) or True
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert [name for name, _ in installs] == ["gemma3-270m"] and not page.isVisible()
    with open(model_registry.model_path("gemma3-270m"), "wb") as fh:   # as if installed: a (sparse) file of its size
        fh.truncate(model_registry.MODELS["gemma3-270m"].size)
    installs[0][1]()                                       # Gemma is in place: SmolLM2 next
    assert [name for name, _ in installs] == ["gemma3-270m", "smollm2"] and w.errors == []
