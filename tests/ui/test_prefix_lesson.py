"""The prefix-cache lesson on SmolLM2: request 2 reuses the positions it shares with request 1
and computes the rest, with the logits of a Prefill from scratch; a changed word of the system
prompt invalidates every cached position from it on. The counts are worked out here from the
tokenizer's ids, not read from the code under test; times are shown, never asserted on."""

from __future__ import annotations

import re

import pytest
from PySide6.QtWidgets import QLabel

from explorer.cli.trace import trace_output
from explorer.lessons import LessonError, load_lesson
from explorer.lessons.schema import parse_lesson
from explorer.session.narration import frame_explanation, frame_title
from explorer.ui.panels.kv import KVGridPanel
from explorer.ui.panels.timeline import TimelinePanel
from teacher import drawn_texts, kv_row_cells, shows, table_texts
from explorer.ui.panels.kv_legend import KVLegend

SYSTEM = "<|im_start|>system\nYou are a {} AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
TURN = "<|im_start|>user\nWhat is the capital of {}?<|im_end|>\n<|im_start|>assistant\n"
FLOAT32_TOLERANCE = 1e-3               # SmolLM2's float32 logits of magnitude ~20, as its recompute check


def shared(a, b) -> int:
    """Leading ids two sequences have in common."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


@pytest.fixture(scope="module")
def prompts(smollm2):
    encode = smollm2.vocab.encode
    return {"base": encode(SYSTEM.format("helpful") + TURN.format("France")),
            "second": encode(SYSTEM.format("helpful") + TURN.format("Germany")),
            "changed": encode(SYSTEM.format("friendly") + TURN.format("Germany"))}


@pytest.fixture(scope="module")
def session(smollm2):
    return load_lesson("prefix-cache").build_session()


def run_of(session, name):
    names = [n for n, _ in session.content.scenarios]
    return session.scenario_results()[names.index(name)][0]


def frame_index(session, name, kind):
    names = [n for n, _ in session.content.scenarios]
    return next(i for i, plan in enumerate(session.content.plans)
                if names[plan.scenario] == name and plan.kind == kind)


def test_request_2_reuses_the_shared_positions_and_computes_the_rest(session, prompts):
    base, second = run_of(session, "base"), run_of(session, "second")
    reused = shared(prompts["base"], prompts["second"])          # up to "of": ␣France / ␣Germany differ
    assert (len(prompts["base"]), len(prompts["second"]), reused) == (37, 37, 29)
    assert base.steps[0].reused_positions == 0 and base.prefix is None
    prefill = second.steps[0]
    assert (prefill.reused_positions, prefill.computed_positions) == (reused, len(prompts["second"]) - reused)
    assert prefill.positions == tuple(range(29, 37))
    # the prefix cache holds request 1's 37 prompt positions: 30 layers x 2 x 3 K/V heads x 64 x 4 bytes each
    assert len(second.prefix.cached_ids) == 37 and second.prefix.stored_bytes == 37 * 30 * 2 * 3 * 64 * 4
    assert second.prefix.match.invalidated == tuple(range(29, 37))
    assert all(s.recompute_max_abs_diff < FLOAT32_TOLERANCE for s in second.steps)   # = a Prefill from scratch
    assert second.output_text == "The capital of Germany is Berlin." and second.finish_reason == "eos"


def test_a_changed_word_of_the_system_prompt_invalidates_everything_after_it(session, prompts, smollm2):
    changed = run_of(session, "changed")
    at = shared(prompts["base"], prompts["changed"])
    assert smollm2.vocab.display_piece(prompts["changed"][at]) == "␣friendly" and at == 6
    assert changed.prefix.match.changed_at == at and changed.steps[0].reused_positions == at
    assert changed.prefix.match.invalidated == tuple(range(at, 37))
    assert changed.steps[0].computed_positions == 37 - at
    assert changed.steps[0].recompute_max_abs_diff < FLOAT32_TOLERANCE


def test_the_frames_say_reused_and_computed(session):
    session.go(frame_index(session, "second", "prefill"))
    run, vocab = session.run, session.model.vocab
    assert frame_title(session.frame, run, vocab, "en") == "Request 2: reused 29 positions, computed 8"
    assert frame_title(session.frame, run, vocab, "zh") == "请求2：复用29个位置，计算8个"
    session.go(frame_index(session, "second", "pick"))
    assert frame_title(session.frame, session.run, vocab, "en") == \
        "Time to first token: a Prefill of 8 positions instead of 37"
    assert frame_title(session.frame, session.run, vocab, "zh") == "首Token时间：Prefill只算8个位置，而不是37个"
    session.go(frame_index(session, "changed", "prefill"))
    assert frame_title(session.frame, session.run, vocab, "en") == \
        "One token changed at position 6 (␣helpful → ␣friendly): reused 6, computed 31"
    assert frame_title(session.frame, session.run, vocab, "zh") == \
        "位置6的Token变了（␣helpful → ␣friendly）：复用6个，计算31个"


def test_the_frame_texts_hold_counts_not_measured_times(session):
    """Times change from run to run: the window's timeline measures them, while the frame texts
    (slides, speaker notes) keep to counts, so two exports of the lesson are the same."""
    vocab = session.model.vocab
    for i, frame in enumerate(session.frames):
        session.go(i)
        for lang in ("en", "zh"):
            texts = [frame_title(session.frame, session.run, vocab, lang)]
            texts += list(frame_explanation(session.frame, session.run, vocab, lang).values())
            assert not any(re.search(r"\d\s*ms\b", t) for t in texts), (i, lang, texts)


def test_the_window_measures_the_time_to_first_token(qtbot, session):
    timeline = TimelinePanel(session)
    qtbot.addWidget(timeline)
    session.go(frame_index(session, "second", "pick"))
    speed = timeline.findChild(QLabel, "speed").text()
    assert re.search(r"time to first token [\d.,]+ ms, 29 positions from the prefix cache", speed), speed


def test_the_panels_mark_reused_and_invalidated_positions(qtbot, session):
    grid, timeline = KVGridPanel(session), TimelinePanel(session)
    for panel in (grid, timeline):
        qtbot.addWidget(panel)
    grid.resize(1400, 700)
    grid.show()
    qtbot.waitExposed(grid)
    session.go(frame_index(session, "second", "prefill"))
    marks = kv_row_cells(grid, 1)[:37]                            # layer 0's V row
    assert marks == ["reused"] * 29 + ["invalidated"] * 8
    assert table_texts(timeline.table)[0][2].startswith("reused 29, computed 8: 29, 30")
    assert shows(grid, "prefix cache: 37 positions (1.7 MB) · reused 29, computed 8")
    session.go(frame_index(session, "changed", "prefill"))
    assert kv_row_cells(grid, 0)[:37] == ["reused"] * 6 + ["invalidated"] * 31
    assert shows(grid, "token changed at position 6: 31 cached positions invalidated")
    session.go(frame_index(session, "second", "stop"))           # 45 columns: short labels, named in the legend
    cells = kv_row_cells(grid, 0)
    assert (cells[0], cells[29], cells[37]) == ("reu", "inv", "proc")
    assert "reused: K/V taken from the prefix cache: an earlier request computed them" in " ".join(d.text for d in drawn_texts(grid.findChild(KVLegend)))
    session.go(0)                                                 # request 1: nothing reused
    assert set(kv_row_cells(grid, 0)[:37]) == {"processed"}


def test_the_lesson_traces_in_both_languages_with_the_counts(session):
    """What `explorer trace --lesson prefix-cache [--lang zh]` prints, on the session built above."""
    en, zh = trace_output(session, "en"), trace_output(session, "zh")
    assert "reused 29 positions, computed 8" in en and "reused 6 positions, computed 31" in en
    assert "token changed at position 6 (␣helpful → ␣friendly): 31 cached positions invalidated (6–36)" in en
    assert "复用29个位置，计算8个" in zh and "位置6的Token变了（␣helpful → ␣friendly）：31个已缓存的位置失效" in zh
    assert en.count("time to first token: ") == 3 and zh.count("首Token时间：") == 3


def test_prefix_from_must_name_an_earlier_scenario(tmp_path):
    text = (load_lesson("prefix-cache").path.read_text("utf-8")
            .replace('prefix_from = "base"', 'prefix_from = "later"', 1))
    bad = tmp_path / "bad.toml"
    bad.write_text(text, "utf-8")
    with pytest.raises(LessonError, match=r"bad.toml:\d+: scenarios\[0\].prefix_from: 'later': expected a scenario "
                                          r"named before this one"):
        parse_lesson(bad)
