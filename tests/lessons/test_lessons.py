"""Shipped lessons: each loads, builds, plays every frame in both languages, and its runs
give the course's numbers (written here as constants, never computed by the code under
test). Malformed lesson files and glossaries fail with the file and the key path.
The glossary: terms, definitions, and how terms are found in explanation text."""

import json
import re

import numpy as np
import pytest

from explorer.cli.main import main
from explorer.i18n import LANGS
from explorer.lessons import LessonError, all_lessons, lesson_names, load_lesson
from explorer.lessons.glossary import GlossaryError, glossary_path, load_glossary
from explorer.session.narration import SECTIONS, frame_explanation, frame_title
from paths import RESOURCES

COURSE_LESSONS = {          # id -> order: the lessons written from the course text
    "prefill-decode": 2, "selected-not-processed": 3, "sampling": 4, "beam": 5,
    "stop-reasons": 6, "output-projection": 7, "tokens-not-characters": 8,
}
REAL_MODEL_LESSONS = {"real-model": 9, "gemma-wo-ai": 14,     # on SmolLM2 and Gemma 3 (`explorer model install`)
                      "prefix-cache": 15, "inside-and-across": 18}
THINKING_LESSONS = {        # thinking longer, four kinds of extra compute (and the reasoning-token follow-ups)
    "reasoning-budget": 10, "self-consistency": 11, "search-evaluator": 12, "tool-evidence": 13,
}
BEYOND_LESSONS = {"speculative": 16,    # serving techniques that follow from the KV cache
                  "api-parameters": 17}   # the sampling parameters of real APIs
AUTHORED = dict(sorted({**COURSE_LESSONS, **REAL_MODEL_LESSONS, **THINKING_LESSONS, **BEYOND_LESSONS}.items(),
                       key=lambda item: item[1]))
SHIPPED = ["wo-ai-to-eos", *AUTHORED]


def texts_of(session, index):
    """(title, {section: text}) of frame `index` in every language, after moving there."""
    session.go(index)
    frame, run, vocab = session.frame, session.run, session.model.vocab
    return {lang: (frame_title(frame, run, vocab, lang), frame_explanation(frame, run, vocab, lang))
            for lang in LANGS}


def frames_by_scenario(lesson, session):
    """[(frame index, scenario name, frame)] of a lesson's session."""
    names = [name for name, _ in lesson.scenarios]
    return [(i, names[plan.scenario], f) for i, (plan, f) in enumerate(zip(lesson.plans, session.frames))]


def frame_on(lesson, session, scenario, kind, step=None):
    """Move to the first frame of `kind` (and `step`) on `scenario`; return the session."""
    for i, name, f in frames_by_scenario(lesson, session):
        if name == scenario and f.kind == kind and (step is None or f.step == step):
            session.go(i)
            return session
    raise AssertionError(f"no {kind} frame of step {step} on scenario {scenario!r}")


class _Sessions(dict):
    """Lesson id -> a session playing it, built when a test first asks (a lesson on a real model
    needs that model only in the tests that play it, which are marked real_model)."""
    def __missing__(self, name):
        self[name] = load_lesson(name).build_session()
        return self[name]


@pytest.fixture(scope="module")
def sessions():
    return _Sessions()


# ---------------------------------------------------------------------------- every lesson

def test_the_shipped_lessons_in_teaching_order():
    assert lesson_names() == SHIPPED
    orders = {lesson.id: lesson.order for lesson in all_lessons()}
    assert {k: orders[k] for k in AUTHORED} == AUTHORED


@pytest.mark.parametrize("name", SHIPPED)
def test_every_frame_plays_in_both_languages(sessions, name):
    session = sessions[name]
    assert len(session.frames) >= 5
    for i in range(len(session.frames)):
        for lang, (title, explain) in texts_of(session, i).items():
            assert title.strip(), (name, i, lang)
            assert set(explain) == set(SECTIONS)
            for section, text in explain.items():
                assert text.strip() and not re.search(r"\{\w+\}", text), (name, i, lang, section)
            assert not re.search(r"\{\w+\}", title)


@pytest.mark.parametrize("name", list(AUTHORED))
def test_course_lessons_author_every_title_and_section_and_have_checks(name):
    lesson = load_lesson(name)
    for lang in LANGS:
        assert lesson.title_in(lang).strip() and lesson.summary[lang].strip()
    for i, plan in enumerate(lesson.plans):
        assert "title" in plan.extras, (name, i)
        assert set(plan.extras.get("explain", {})) == set(SECTIONS), (name, i)
    assert lesson.checks and all(c.when == "after" for c in lesson.checks)


@pytest.mark.parametrize("name", SHIPPED)
def test_builds_on_names_glossary_terms_or_lessons(name):
    glossary = load_glossary()
    known = set(glossary.ids) | set(SHIPPED)
    lesson = load_lesson(name)
    assert lesson.builds_on
    assert set(lesson.builds_on) <= known, set(lesson.builds_on) - known


def test_no_glossary_id_is_also_a_lesson_id():
    assert not set(load_glossary().ids) & set(SHIPPED)


@pytest.mark.parametrize("name", SHIPPED)
def test_cli_trace_and_export_list_exit_0(capsys, name):
    assert main(["trace", "--lesson", name]) == 0
    out = capsys.readouterr().out
    assert "finish reason" in out
    assert main(["export", "--lesson", name, "--list"]) == 0
    out = capsys.readouterr().out
    assert f"frames of {name!r}" in out


# ---------------------------------------------------------------------------- the course's numbers

def reference_teaching_run(prompt_ids, max_new_tokens, eos=6):
    """Greedy decoding of the teaching model in float64, written here from the course's
    description (one causal head of width 4, residuals, a tanh feed-forward layer, an output
    head with a bias; no norm, no positions) and read straight from params/teaching.json, a
    full recompute of the whole prefix per token: the outputs and the last distribution, an
    expectation the engine under test had no part in."""
    from explorer.core.models.teaching import default_params_path
    tensors = json.loads(default_params_path().read_text(encoding="utf-8"))["tensors"]
    layer = {name: np.array(value, dtype=np.float64) for name, value in tensors["layers"][0].items()}
    embed, w_out, b_out = (np.array(tensors[name], dtype=np.float64) for name in ("embed", "w_out", "b_out"))
    ids = list(prompt_ids)
    for _ in range(max_new_tokens):
        x = embed[ids]                                                         # [n, 4]
        q, k, v = x @ layer["wq"], x @ layer["wk"], x @ layer["wv"]            # [n, 4] each
        scores = q @ k.T / np.sqrt(q.shape[1])                                 # [n, n]
        scores[np.triu_indices(len(ids), 1)] = -np.inf                         # no look at later tokens
        weights = np.exp(scores - scores.max(axis=1, keepdims=True))
        weights /= weights.sum(axis=1, keepdims=True)
        x = x + (weights @ v) @ layer["wo"]
        x = x + np.tanh(x @ layer["w1"] + layer["b1"]) @ layer["w2"] + layer["b2"]
        logits = x[-1] @ w_out + b_out                                         # [7]
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        ids.append(int(np.argmax(probs)))
        if ids[-1] == eos:
            break
    return tuple(ids[len(prompt_ids):]), probs


def test_the_float64_reference_reproduces_the_fitted_course_run():
    """The reference is the model the course describes: on 我爱 it picks 学习, ！, EOS with the
    stated target probabilities of params/teaching.json (0.47 for 学习)."""
    outputs, _probs = reference_teaching_run((1, 2), 8)
    assert outputs == (3, 5, 6)
    assert reference_teaching_run((1, 2), 1)[1][3] == pytest.approx(0.47, abs=1e-3)

def test_prefill_decode_positions_and_cache_lengths(sessions):
    session = sessions["prefill-decode"]
    run = session.run
    assert run.prompt_ids == (1, 1, 3, 4) and len(run.output_ids) == 3
    assert [s.phase for s in run.steps] == ["prefill", "decode", "decode"]
    assert [s.positions for s in run.steps] == [(0, 1, 2, 3), (4,), (5,)]
    assert [s.input_ids for s in run.steps] == [(1, 1, 3, 4), run.output_ids[:1], run.output_ids[1:2]]
    assert [s.cache_len_after for s in run.steps] == [4, 5, 6]
    assert [s.logits_position for s in run.steps] == [3, 4, 5]      # y0, y1, y2 chosen by these
    assert run.output_ids == reference_teaching_run((1, 1, 3, 4), 3)[0] and run.finish_reason == "length"
    assert not any(s.forced for s in run.steps)                      # the model's own picks
    shown = [(f.kind, f.step, f.visible_count, f.cache_len) for f in session.frames]
    assert shown[:7] == [("input", None, 4, 0), ("prefill", 0, 4, 4), ("pick", 0, 5, 4), ("decode", 1, 5, 5),
                         ("pick", 1, 6, 5), ("decode", 2, 6, 6), ("pick", 2, 7, 6)]
    assert session.frames[-1].view == ("attention_full",)


def test_selected_not_processed_ends_with_5_visible_and_4_cached(sessions):
    session = sessions["selected-not-processed"]
    session.go(0)
    run = session.run
    assert run.prompt_ids == (1, 2, 3) and run.output_ids == (4, 5)
    assert run.finish_reason == "length" and run.incomplete
    shown = [(f.kind, f.visible_count, f.cache_len) for f in session.frames]
    assert shown == [("input", 3, 0), ("prefill", 3, 3), ("pick", 4, 3), ("decode", 4, 4), ("pick", 5, 4),
                     ("stop", 5, 4), ("pick", 4, 3), ("stop", 5, 4)]    # then F15's table model: 4, EOS
    assert [s.cache_len_after for s in run.steps] == [3, 4]
    assert run.steps[1].input_ids == (4,)


SAMPLING = {  # scenario -> (final probabilities of A, B, C (…), tolerance); id 0 is the context token
    "t05": ([0, 0.8668, 0.1173, 0.0159], 5e-5),
    "base": ([0, 0.665241, 0.244728, 0.090031], 1e-6),
    "t2": ([0, 0.506480, 0.307196, 0.186324], 1e-6),
    "t0": ([0, 1, 0, 0], 0),
    "topk2": ([0, 0.731059, 0.268941, 0], 1e-6),
    "topp08": ([0, 0.731059, 0.268941, 0], 1e-6),
    "course-p08": ([0, 0.6875, 0.3125, 0, 0], 1e-9),                   # 0.55, 0.25 renormalised
    "course-p09": ([0, 0.55 / 0.95, 0.25 / 0.95, 0.15 / 0.95, 0], 1e-9),
    "order-hf": ([0, 0.5065, 0.3072, 0.1863], 5e-5),
    "order-llama": ([0, 0.6225, 0.3775, 0], 5e-5),
    "tie-greedy": ([0, 0.422319, 0.422319, 0.155362], 1e-6),
    "tie-topk1": ([0, 0.5, 0.5, 0], 1e-12),
}


def test_sampling_final_probabilities_at_every_pick_frame(sessions):
    lesson, session = load_lesson("sampling"), sessions["sampling"]
    seen = set()
    for i, scenario, frame in frames_by_scenario(lesson, session):
        assert frame.kind == "pick" and frame.step == 0
        session.go(i)
        expected, tol = SAMPLING[scenario]
        np.testing.assert_allclose(session.step.distribution.probs, expected, atol=tol, rtol=0)
        seen.add(scenario)
    assert seen == set(SAMPLING)


def test_sampling_course_boundaries_ties_and_the_shared_u(sessions):
    lesson, session = load_lesson("sampling"), sessions["sampling"]

    def dist(scenario):
        return frame_on(lesson, session, scenario, "pick", 0).step.distribution

    base = dist("base")
    np.testing.assert_allclose(np.cumsum(np.sort(base.probs)[::-1])[:2], [0.665241, 0.909969], atol=1e-6)
    np.testing.assert_allclose(dist("course-p08").stages[0].probs, [0, 0.55, 0.25, 0.15, 0.05], atol=1e-12)
    assert int((dist("course-p08").probs > 0).sum()) == 2                 # top-p 0.8 keeps 2
    assert int((dist("course-p09").probs > 0).sum()) == 3                 # top-p 0.9 keeps 3
    assert int((dist("order-hf").probs > 0).sum()) == 3
    assert int((dist("order-llama").probs > 0).sum()) == 2
    assert dist("t0").greedy and dist("t0").selected_id == 1
    assert dist("tie-greedy").selected_id == 1                            # the lower id of the tie
    assert int((dist("tie-topk1").probs > 0).sum()) == 2                  # top-k = 1 keeps both tied ids
    draws = {dist(s).u for s in SAMPLING if s not in ("t0", "tie-greedy")}
    assert len(draws) == 1                                                 # one seed, one u everywhere
    assert (dist("base").selected_id, dist("t2").selected_id) == (1, 2)    # same u, T changes the pick


BEAM_PATHS = {"AE": (0.306, "kept"), "AF": (0.294, "pruned"), "BD": (0.396, "kept"), "BF": (0.004, "pruned")}


def test_beam_greedy_AE_and_width_2_finds_BD(sessions):
    lesson, session = load_lesson("beam"), sessions["beam"]
    frame_on(lesson, session, "base", "stop")
    vocab = session.model.vocab
    greedy = session.run
    assert "".join(vocab.display_piece(t) for t in greedy.output_ids) == "AE"
    assert greedy.prompt_ids == (6,)
    joint = np.prod([s.distribution.probs[s.selected_id] for s in greedy.steps])
    assert joint == pytest.approx(0.306, abs=1e-12)
    assert session.beam is None

    frame_on(lesson, session, "beam", "stop")
    tree = session.beam
    assert tree is not None and tree.num_beams == 2 and tree.max_new_tokens == 2
    paths = {"".join(vocab.display_piece(t) for t in tree.path(n.node_id)): n
             for n in tree.nodes if n.depth == 2}
    assert {p: (round(n.prob, 12), n.status) for p, n in paths.items()} == BEAM_PATHS
    first = {vocab.display_piece(n.token_id): (n.prob, n.status) for n in tree.nodes if n.depth == 1}
    assert first == {"A": (pytest.approx(0.6), "kept"), "B": (pytest.approx(0.4), "kept")}
    assert ["".join(vocab.display_piece(t) for t in b.ids) for b in tree.beams] == ["BD", "AE"]
    assert tree.beams[0].prob == pytest.approx(0.396)
    assert tree.greedy.prob == pytest.approx(0.306)

    after_b = frame_on(lesson, session, "after-b", "pick", 1).step.distribution
    assert after_b.probs[vocab.pieces.index("D")] == pytest.approx(0.99)


STOPS = {  # scenario -> (finish reason, incomplete, shown output text)
    "base": ("eos", False, "要点是缓存。END"),
    "stop-string": ("stop_string", False, "要点是缓存。"),
    "length": ("length", True, "要点是缓存"),
    "cancelled": ("cancelled", True, "要点是缓存"),            # Cancel after three new tokens
    "tool": ("tool_call", False, "<tool>read_filenotes.txt</tool>"),
    "after-tool": ("eos", False, "笔记讲缓存。"),
}


def test_stop_reasons_each_scenario_stops_its_own_way(sessions):
    lesson, session = load_lesson("stop-reasons"), sessions["stop-reasons"]
    for scenario, (reason, incomplete, text) in STOPS.items():
        run = frame_on(lesson, session, scenario, "stop").run
        assert (run.finish_reason, run.incomplete, run.output_text) == (reason, incomplete, text), scenario
    run = frame_on(lesson, session, "stop-string", "stop").run
    assert run.stop_match.text == "END" and run.stop_match.char_index == 6
    assert [session.model.vocab.display_piece(t) for t in run.output_ids[-2:]] == ["EN", "D"]  # across 2 tokens
    assert len(frame_on(lesson, session, "length", "stop").run.output_ids) == 3
    assert frame_on(lesson, session, "base", "stop").run.config.max_new_tokens == 100


def test_stop_reasons_count_the_visible_sequence_the_characters_and_what_a_cancel_billed(sessions):
    lesson, session = load_lesson("stop-reasons"), sessions["stop-reasons"]
    frame_on(lesson, session, "base", "pick", 6)
    assert "six tokens" in texts_of(session, session.cursor)["en"][1]["what"]   # 要点 是 缓存 。 EN D
    frame_on(lesson, session, "base", "stop")
    en, zh = (texts_of(session, session.cursor)[lang][1]["what"] for lang in ("en", "zh"))
    # 2 prompt tokens + 6 text tokens + the selected end token; "要点是缓存。END" is 9 characters
    assert "The visible sequence has 9 tokens" in en and "9 characters" in en and "cache 8" in en
    assert "可见序列有9个Token" in zh and "共9个字符" in zh
    frame_on(lesson, session, "cancelled", "stop")
    en, zh = (texts_of(session, session.cursor)[lang] for lang in ("en", "zh"))
    assert "2 prompt + 3 output = 5 tokens" in en[1]["what"] and "cancelled, incomplete" in en[0]
    assert "（cancelled，不完整）" in zh[0]                      # full-width punctuation in Chinese
    frame_on(lesson, session, "stop-string", "stop")
    assert "下标6（从0数起）" in texts_of(session, session.cursor)["zh"][1]["what"]   # 要点是缓存。 is 0..5


def test_f15_greedy_picks_4_at_0_6_then_stops_on_eos(sessions):
    lesson, session = load_lesson("selected-not-processed"), sessions["selected-not-processed"]
    pick = frame_on(lesson, session, "f15", "pick", 0)
    step = pick.run.steps[0]
    assert step.selected_id == 4 and not step.forced and abs(step.distribution.probs[4] - 0.6) < 1e-12
    assert [round(float(step.distribution.probs[i]), 12) for i in (4, 5, 6)] == [0.6, 0.3, 0.1]
    assert (pick.frame.visible_count, pick.frame.cache_len) == (4, 3)
    stop = frame_on(lesson, session, "f15", "stop")
    assert stop.run.output_ids == (4, 6) and stop.run.finish_reason == "eos"
    assert (stop.frame.visible_count, stop.frame.cache_len) == (5, 4)


def test_sampling_frame_explains_the_float64_boundary_of_the_reverse_top_p_test(sessions):
    assert 0.55 + 0.25 == 0.8 and 1 - 0.8 == 0.19999999999999996 and 0.05 + 0.15 == 0.2   # float64 facts
    lesson, session = load_lesson("sampling"), sessions["sampling"]
    frame_on(lesson, session, "course-p08", "pick", 0)
    en = texts_of(session, session.cursor)["en"][1]
    assert "0.55 + 0.25 is exactly 0.8" in en["how"] and "0.19999999999999996" in en["misconception"]


CJK_ASCII_PUNCT = re.compile(r"[\u4e00-\u9fff][,;:!?]|[,;:!?] ?[\u4e00-\u9fff]|\([\u4e00-\u9fff]")


@pytest.mark.parametrize("name", [n for n in SHIPPED if n not in REAL_MODEL_LESSONS])
def test_chinese_texts_use_full_width_punctuation_and_one_word_for_sampling(sessions, name):
    session, lesson = sessions[name], load_lesson(name)
    texts = [lesson.title["zh"], lesson.summary["zh"]] + [t for c in lesson.checks for t in (c.question["zh"],
                                                                                           c.answer["zh"])]
    for i in range(len(session.frames)):
        title, explain = texts_of(session, i)["zh"]
        texts += [title, *explain.values()]
    for text in texts:
        assert not CJK_ASCII_PUNCT.search(text), (name, text)
        assert "采样" not in text, (name, text)                  # 抽样, as the course's opening says


def test_output_projection_scores_and_the_padding_pitfall(sessions):
    lesson, session = load_lesson("output-projection"), sessions["output-projection"]
    step = frame_on(lesson, session, "base", "pick", 0).step
    assert step.trace.last_logits[0] == -np.inf                         # the context token "…"
    assert step.trace.last_logits[1:].tolist() == [0, 1, 2, 3, -1, -2]
    assert int(np.argmax(step.trace.last_logits[1:])) == 3               # the fourth of the six
    assert session.model.vocab.display_piece(step.selected_id) == "丁"

    valid = frame_on(lesson, session, "valid", "pick", 0).step
    assert valid.logits_position == 1 and valid.selected_id == 3         # 学习
    assert valid.distribution.probs[3] == pytest.approx(0.47, abs=1e-4)
    assert valid.distribution.probs[4] == pytest.approx(0.26, abs=1e-4)  # 你, the runner-up
    padded = frame_on(lesson, session, "padded", "pick", 0).step
    assert padded.logits_position == 2 and padded.selected_id == 6       # <eos>, read from the pad
    # the <pad> row's distribution is the model's own answer for the prefix 我 爱 <pad>
    outputs, probs = reference_teaching_run((1, 2, 0), 1)
    assert padded.selected_id == outputs[0]
    np.testing.assert_allclose(padded.distribution.probs, probs, atol=1e-9)
    # the right answer is still there: position 1 of the padded row equals the unpadded last row
    np.testing.assert_allclose(padded.trace.logits[1], valid.trace.last_logits, atol=1e-12)


def test_byte_tokens_text_appears_only_when_a_character_is_complete(sessions):
    lesson, session = load_lesson("tokens-not-characters"), sessions["tokens-not-characters"]
    vocab = session.model.vocab
    run = frame_on(lesson, session, "base", "stop").run
    assert [vocab.display_piece(t) for t in run.output_ids] == ["<0xE4>", "<0xBD><0xA0>", "好", "<eos>"]
    texts = []
    for step in range(3):
        frame = frame_on(lesson, session, "base", "pick", step).frame
        texts.append(vocab.decode(frame.visible_ids[len(run.prompt_ids):]))
        title = frame_title(frame, session.run, vocab, "en")
        assert f"“{texts[-1]}”" in title
    assert texts == ["", "你", "你好"]
    assert run.output_text == "你好" and run.finish_reason == "eos"
    whole = frame_on(lesson, session, "whole", "pick", 0)
    assert whole.step.forced and vocab.decode(whole.frame.visible_ids[1:]) == "你"


# ---------------------------------------------------------------------------- malformed lessons

GOOD = RESOURCES / "lessons" / "selected-not-processed.toml"


def _edit(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


BAD = {  # name -> (edit of a good lesson, what the message must say)
    "syntax": (("max_new_tokens = 2\n", "max_new_tokens = = 2\n"), ["not valid TOML", "(column 18)"]),
    "unknown-key": (("max_new_tokens = 2\n", "max_new_tokens = 2\ntemprature = 1.0\n"),
                    ["settings.temprature: unknown key"]),
    "unknown-frame-key": (('show = "prefill"\n', 'show = "prefill"\npanel = ["kv"]\n'),
                          ["frames[1].panel: unknown key"]),
    "empty-translation": ((', zh = "第1步 · Prefill [1, 2, 3]：算3个位置，缓存长3"', ', zh = " "'),
                          ['frames[1].title: missing "zh" text']),
    "text-not-a-string": ((', zh = "缓存{cache} = 提示长度{n}。" }', ", zh = 3 }"),
                          ['frames[1].explain.check: missing "zh" text']),
    "no-such-step": (('show = "decode"\nstep = 1\n', 'show = "decode"\nstep = 7\n'),
                     ["frames[3].step: decode of step 7 does not exist", "steps 0..1"]),
    "unknown-scenario": (('show = "decode"\nstep = 1\n', 'show = "decode"\nstep = 1\nscenario = "nope"\n'),
                         ["frames[3].scenario: 'nope' is not a scenario"]),
    "unknown-placeholder": (("Cache {cache} = prompt length {n}.", "Cache {cache} = prompt length {size}."),
                            ["frames[1].explain.check.en: unknown placeholder", "'size'"]),
    "placeholder-of-another-kind": (('en = "The prompt is {ids} ({pieces})', 'en = "The prompt is {piece}'),
                                    ["frames[0].explain.what.en: unknown placeholder", "'piece'"]),
    "attention-beyond-the-model": (('show = "decode"\nstep = 1\n',
                                    'show = "decode"\nstep = 1\nattention = { layer = 1, head = 0 }\n'),
                                   ["frames[3].attention: layer 1, head 0: expected layer < 1 and head < 1 for this model"]),
    "attention-not-a-number": (('show = "decode"\nstep = 1\n',
                                'show = "decode"\nstep = 1\nattention = { layer = "top", head = 0 }\n'),
                               ["frames[3].attention.layer: expected an integer >= 0"]),
    "attention-without-head": (('show = "decode"\nstep = 1\n', 'show = "decode"\nstep = 1\nattention = { layer = 0 }\n'),
                               ["frames[3].attention.head: missing"]),
    "attention-on-input": (('show = "input"\n', 'show = "input"\nattention = { layer = 0, head = 0 }\n'),
                           ["frames[0].attention: an input frame has no attention to show"]),
    "cancel-after-zero": (('name = "f15"\n', 'name = "f15"\ncancel_after = 0\n'),
                          ["scenarios[0].cancel_after: 0: expected a number of steps >= 1"]),
    "attended-without-a-choice": (("Cache {cache} = prompt length {n}.", "Cache {cache} = prompt length {attended}."),
                                  ["frames[1].explain.check.en: unknown placeholder", "'attended'"]),
}


@pytest.mark.parametrize("case", list(BAD))
def test_malformed_lessons_name_the_file_and_the_key(tmp_path, case):
    (old, new), parts = BAD[case]
    path = tmp_path / f"bad-{case}.toml"
    good = GOOD.read_text(encoding="utf-8").replace('"../tables/', f'"{GOOD.parents[1] / "tables"}/')
    path.write_text(_edit(good, old, new), encoding="utf-8")
    with pytest.raises(LessonError) as info:
        load_lesson(path)
    message = str(info.value)
    assert re.match(rf"bad-{case}\.toml:\d+: ", message), message
    for part in parts:
        assert part in message, message


def test_speculative_decoding_of_a_beam_is_refused(tmp_path):
    text = GOOD.read_text(encoding="utf-8").replace('"../tables/', f'"{GOOD.parents[1] / "tables"}/')
    text = _edit(_edit(text, 'name = "f15"\n', 'name = "f15"\nspeculative = 2\n'), 'mode = "greedy"\n', 'mode = "beam"\n')
    path = tmp_path / "beam.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(LessonError, match=r'^beam\.toml:\d+: scenarios\[0\]\.speculative: 2: .*one sequence.*"beam"'):
        load_lesson(path)


def test_a_top_level_key_after_a_header_is_caught(tmp_path):
    """The TOML pitfall: `order` written after [title] belongs to the title table."""
    text = GOOD.read_text(encoding="utf-8")
    text = _edit(text, "order = 3\n", "")
    text = _edit(text, 'zh = "选出不等于已处理"\n', 'zh = "选出不等于已处理"\norder = 3\n')
    path = tmp_path / "late.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(LessonError, match=r"^late\.toml:\d+: title\.order: unknown key"):
        load_lesson(path)


# ---------------------------------------------------------------------------- the glossary

REQUIRED_TERMS = ["prefill", "decode", "eos", "greedy", "kv-cache", "logits", "softmax", "temperature", "top-k",
                  "top-p", "min-p", "beam-search", "token", "causal-mask", "attention", "repetition-penalty",
                  "stop-string", "tool-call", "teacher-forcing"]


def test_glossary_has_the_course_terms_in_both_languages():
    glossary = load_glossary()
    assert glossary.path == glossary_path()
    assert set(REQUIRED_TERMS) <= set(glossary.ids)
    for term in glossary.terms:
        for lang in LANGS:
            assert term.term[lang].strip() and term.definition[lang].strip()
            assert 1 <= len(re.findall(r"[.。!?！？]", term.definition[lang])) <= 3, (term.id, lang)


def _found(text, lang):
    return [(text[s:e], term_id) for s, e, term_id in load_glossary().find(text, lang)]


def test_find_marks_terms_longest_first_without_overlap():
    assert _found("Prefill fills the KV cache; then each Decode step feeds one token.", "en") == [
        ("Prefill", "prefill"), ("KV cache", "kv-cache"), ("Decode step", "decode"), ("token", "token")]
    # 预填充 (Prefill) contains 填充 (padding): the longer word wins
    assert _found("预填充之后，KV缓存里有提示；右侧填充的位置不能读。", "zh") == [
        ("预填充", "prefill"), ("KV缓存", "kv-cache"), ("右侧填充", "padding")]
    # 结束Token is EOS, not the term Token
    assert _found("模型选出结束Token后停止；一个Token一个Token生成。", "zh") == [
        ("结束Token", "eos"), ("Token", "token"), ("Token", "token")]


def test_find_is_case_insensitive_and_whole_word_for_latin():
    assert _found("TOP-K and Top-p; Greedy.", "en") == [("TOP-K", "top-k"), ("Top-p", "top-p"),
                                                      ("Greedy", "greedy")]
    assert _found("tokenizer, detokenize, softmaxed, logitsx", "en") == []
    assert _found("用logits做softmax", "zh") == [("logits", "logits"), ("softmax", "softmax")]
    assert _found("", "en") == []
    with pytest.raises(ValueError, match="lang"):
        load_glossary().find("x", "fr")


GLOSSARY_HEAD = 'format = "token-explorer/glossary"\nversion = 1\n'
TERM = ('[[terms]]\nid = "kv-cache"\nterm = { en = "KV cache", zh = "KV缓存" }\n'
        'definition = { en = "Keys and values.", zh = "K和V。" }\n')


@pytest.mark.parametrize("body, parts", [
    (TERM.replace(', zh = "K和V。"', ""), ['terms[0].definition: missing "zh" text']),
    (TERM + 'colour = "red"\n', ["terms[0].colour: unknown key"]),
    (TERM.replace('"kv-cache"', '"KV Cache"'), ["terms[0].id: 'KV Cache'"]),
    (TERM + TERM, ["terms[1].id: 'kv-cache' is already terms[0]"]),
    (TERM + TERM.replace('"kv-cache"', '"cache"').replace('en = "KV cache"', 'en = "kv CACHE"'),
     ["terms[1].term.en: 'kv CACHE' already marks 'kv-cache'"]),
    (TERM + 'aliases = { en = "KV caches" }\n', ["terms[0].aliases.en: expected a list"]),
    (TERM.replace("definition", "definitions"), ["terms[0].definitions: unknown key"]),
    ("[[terms]\n", ["not valid TOML"]),
])
def test_malformed_glossary_names_the_file_and_the_key(tmp_path, body, parts):
    path = tmp_path / "terms.toml"
    path.write_text(GLOSSARY_HEAD + body, encoding="utf-8")
    with pytest.raises(GlossaryError) as info:
        load_glossary(path)
    message = str(info.value)
    assert re.match(r"terms\.toml:\d+: ", message) and isinstance(info.value, LessonError)
    for part in parts:
        assert part in message, message


def test_export_list_titles_use_each_frames_own_run(capsys):
    assert main(["export", "--lesson", "beam", "--list"]) == 0
    assert "B's own next step: D (p = 0.9900), F 0.01" in capsys.readouterr().out


@pytest.mark.parametrize("line, message", [
    ("typical_p = -0.5", "settings: typical_p = -0.5: expected a number from 0 (excluded) to 1"),
    ("xtc_probability = 1.5", "settings: xtc_probability = 1.5: expected a number from 0 to 1"),
    ("min_new_tokens = 1.5", "settings: min_new_tokens = 1.5: expected an integer from 0 to 4096"),
    ('logit_bias = { 3 = 500 }', "settings: logit_bias[3] = 500: expected a number from -100 to 100"),
    ('logit_bias = { x = 1 }', "settings.logit_bias: x:1: 'x' is not one token of the vocabulary"),
    ('logit_bias = { "学" = 500 }', "settings: logit_bias[学] = 500: expected a number from -100 to 100"),
    ("presence_penalty = \"high\"", "settings: presence_penalty = 'high': expected a number from -2 to 2"),
])
def test_api_settings_out_of_range_are_named_on_their_line(tmp_path, line, message):
    good = GOOD.read_text(encoding="utf-8").replace('"../tables/', f'"{GOOD.parents[1] / "tables"}/')
    text = _edit(good, "max_new_tokens = 2\n", f"max_new_tokens = 2\n{line}\n")
    path = tmp_path / "api.toml"
    path.write_text(text, encoding="utf-8")
    where = text.splitlines().index(line) + 1
    with pytest.raises(LessonError, match=re.escape(f"api.toml:{where}: {message}")):
        load_lesson(path)


def test_api_settings_in_a_lesson_reach_the_run(tmp_path):
    good = GOOD.read_text(encoding="utf-8").replace('"../tables/', f'"{GOOD.parents[1] / "tables"}/')
    path = tmp_path / "bias.toml"
    path.write_text(_edit(good, "max_new_tokens = 2\n", "max_new_tokens = 2\nlogit_bias = { 4 = -100 }\n"),
                    encoding="utf-8")
    dist = load_lesson(path).build_session().run.steps[0].distribution      # the lesson forces id 4 here
    assert dist.stages[1].name == "logit_bias" and dist.probs[4] < 1e-40 and dist.forced
    model = load_lesson(path).build_session().model
    piece = model.vocab.pieces[5]
    path.write_text(_edit(good, "max_new_tokens = 2\n", f'max_new_tokens = 2\nlogit_bias = {{ "{piece}" = -7.5 }}\n'),
                    encoding="utf-8")
    assert load_lesson(path).build_session().config.logit_bias == ((5, -7.5),)     # a piece, by its id


def test_the_api_parameters_lesson_shows_what_its_texts_say(sessions):
    """Its numbers from the peers' formulas: OpenAI's presence and frequency, the repetition
    penalty's division, a -100 bias, Hugging Face's typical-p, on logits [2, 1.5, 1, 0]."""
    session = sessions["api-parameters"]
    runs = {s.name: r for s, (r, _) in zip(session.scenarios, session.scenario_results(), strict=True)}
    the, cat, sat = 1, 2, 3
    assert runs["base"].output_ids == (the,) * 6
    assert runs["presence"].output_ids == (the, cat, the, the, the, the)
    assert runs["frequency"].output_ids == (the, cat, the, sat, cat, the)
    assert runs["repetition"].output_ids == (the, cat, the, the, the, the)
    assert runs["ban"].output_ids == (cat,) * 6
    presence = [s for s in runs["presence"].steps[1].distribution.stages if s.name == "presence_penalty"][0]
    np.testing.assert_allclose(presence.logits[1:], [2 - 0.8, 1.5, 1.0, 0.0])
    repetition = runs["repetition"].steps[2].distribution.stages[2]          # after " the cat"
    np.testing.assert_allclose(repetition.logits[1:], [2 / 1.5, 1.5 / 1.5, 1.0, 0.0])
    p = np.array([0.3, 0.2, 0.2, 0.2, 0.1])
    entropy = -(p * np.log(p)).sum()
    assert round(entropy, 2) == 1.56 and np.argsort(np.abs(-np.log(p) - entropy))[:3].tolist() == [1, 2, 3]
    typical = runs["typical"].steps[0].distribution
    assert list(typical.removed_by[1:]) == ["typical_p", None, None, None, "typical_p"]
