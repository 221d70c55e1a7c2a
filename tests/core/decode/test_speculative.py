"""Speculative decoding: the prompt-lookup drafter, one-pass verification, greedy identity
with plain decoding, the sampling rule's distribution, and the cache rolled back."""

from __future__ import annotations

import functools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from explorer.core.errors import SettingError
from explorer.core.decode.generate import cache_from_traces, generate
from explorer.core.models.layers import softmax
from explorer.core.decode.sampling import SamplingConfig
from explorer.core.decode.speculative import (acceptance_rate, accepted_counts, passes_saved, prompt_lookup,
                                       prompt_lookup_draft, speculative_generate, verify_steps)
from explorer.core.models.teaching import load_teaching_model
from explorer.lessons import all_lessons
from explorer.lessons.models import installed_name

TEACHING = load_teaching_model()


# ---------------------------------------------------------------------------- the drafter

def test_prompt_lookup_copies_what_followed_the_earliest_occurrence_of_the_last_ngram():
    #        0  1  2  3  4  5  6  7  8
    ctx = [7, 8, 9, 1, 7, 8, 2, 7, 8]
    assert prompt_lookup_draft(ctx, 3, ngram=2) == (9, 1, 7)     # (7, 8) first at 0: then 9 1 7
    assert prompt_lookup_draft(ctx, 1, ngram=2) == (9,)
    assert prompt_lookup_draft([5, 6, 7, 6], 4, ngram=2) == (7, 6)  # no (7, 6) before: 1-gram 6 at 1
    assert prompt_lookup_draft([1, 2, 3, 4], 3, ngram=3) == ()      # nothing repeats: no draft
    assert prompt_lookup_draft([4, 4, 4], 5, ngram=2) == (4,)       # (4, 4) at 0: what follows it
    assert prompt_lookup_draft([3], 2) == ()


def test_bad_settings_are_named():
    with pytest.raises(SettingError, match="k = 0"):
        speculative_generate(TEACHING, [1, 2], k=0)
    with pytest.raises(SettingError, match="ngram = 0"):
        prompt_lookup(0)


# ---------------------------------------------------------------------------- greedy identity

def _same_as_plain(model, prompt, config, k, ngram=2, check=False):
    spec = speculative_generate(model, prompt, config, k=k, drafter=prompt_lookup(ngram), check_recompute=check)
    plain = generate(model, prompt, config, check_recompute=False)
    assert spec.output_ids == plain.output_ids
    assert (spec.finish_reason, spec.output_text) == (plain.finish_reason, plain.output_text)
    assert spec.cache_len == plain.cache_len == len(spec.visible_ids) - 1
    return spec


def _greedy_lesson_scenarios():
    for lesson in all_lessons():
        for name, spec in lesson.scenarios:
            if installed_name(spec.model) is not None:
                continue
            s = lesson._scenario(name, spec)
            greedy = s.config.mode == "greedy" or (s.config.mode == "sample" and s.config.temperature <= 0)
            if greedy and not s.overrides and s.cancel_after is None:
                yield f"{lesson.id}/{name}", s


GREEDY_SCENARIOS = list(_greedy_lesson_scenarios())


def test_every_greedy_lesson_prompt_is_found():
    assert len(GREEDY_SCENARIOS) >= 10


@pytest.mark.parametrize("k", [1, 3])
def test_greedy_verification_gives_plain_greedy_on_every_lesson_prompt(k):
    for where, s in GREEDY_SCENARIOS:
        try:
            _same_as_plain(s.model, s.prompt_ids, s.config, k)
        except AssertionError as exc:
            raise AssertionError(f"{where}: {exc}") from None


@settings(max_examples=60, deadline=None)
@given(prompt=st.lists(st.integers(0, 6), min_size=1, max_size=14), k=st.integers(1, 6),
       ngram=st.integers(1, 3), new=st.integers(1, 14))
def test_greedy_verification_gives_plain_greedy_on_random_prompts(prompt, k, ngram, new):
    lengths = []
    spec = speculative_generate(TEACHING, prompt, SamplingConfig(max_new_tokens=new), k=k,
                                drafter=prompt_lookup(ngram), check_recompute=False,
                                on_step=lambda p, cache: lengths.append((len(cache), tuple(cache.ids))))
    plain = generate(TEACHING, prompt, SamplingConfig(max_new_tokens=new), check_recompute=False)
    assert spec.output_ids == plain.output_ids and spec.finish_reason == plain.finish_reason
    produced = np.cumsum([1] + [len(p.new_ids) for p in verify_steps(spec)])
    for (cached, ids), count in zip(lengths, produced):     # one-off rule after every pass
        assert cached == len(prompt) + count - 1 and ids == spec.visible_ids[:cached]


def test_a_repetitive_prompt_takes_fewer_passes_with_the_same_output():
    spec = _same_as_plain(TEACHING, [1, 1, 3, 4], SamplingConfig(max_new_tokens=12), k=3, check=True)
    assert spec.output_ids == (3, 5) * 6
    assert len(spec.steps) < len(spec.output_ids) and passes_saved(spec) == len(spec.output_ids) - len(spec.steps)
    assert accepted_counts(spec) == (0, 0, 0, 2, 3, 0) and acceptance_rate(spec) == 5 / 10   # 10 drafted      # kept and rejected drafts
    assert spec.max_recompute_diff < 1e-12                                   # every row of every pass
    verify = next(p for p in verify_steps(spec) if p.accepted == 3)
    assert verify.trace.logits.shape == (4, 7) and verify.new_ids == verify.draft + (verify.selected_id,)
    mask = verify.trace.layers[0].mask                                       # [4, t]: causal inside the draft
    n = verify.cache_len_before
    assert mask[:, n:].tolist() == np.tril(np.ones((4, 4), bool)).tolist() and mask[:, :n].all()


def test_cache_after_a_rejected_draft_equals_plain_decoding_at_that_length():
    config = SamplingConfig(max_new_tokens=12)
    snapshots = []

    def keep(p, cache):
        snapshots.append((p, cache.ids, [(cache.keys(0).copy(), cache.values(0).copy())]))

    spec = speculative_generate(TEACHING, [1, 1, 3, 4], config, k=3, on_step=keep)
    plain = generate(TEACHING, [1, 1, 3, 4], config, check_recompute=False)
    rolled = [(p, ids, kv) for p, ids, kv in snapshots if getattr(p, "rejected", ())]
    assert rolled
    for p, ids, [(keys, values)] in rolled:
        assert p.cache_len_written > p.cache_len_after == len(ids)
        steps = p.cache_len_after - len(spec.prompt_ids) + 1       # plain steps that wrote as much
        reference = cache_from_traces(TEACHING, [s.trace for s in plain.steps[:steps]])
        assert len(reference) == len(ids) and reference.ids.tolist() == ids.tolist()
        np.testing.assert_allclose(keys, reference.keys(0), atol=1e-12)
        np.testing.assert_allclose(values, reference.values(0), atol=1e-12)
        # the pass's own record of the rejected K/V stays what that pass computed
        written = p.trace.layers[0].k.shape[1]
        assert written == len(p.input_ids) == p.cache_len_written - p.cache_len_before


def test_greedy_identity_on_smollm2(smollm2):
    prompts = ["January, February, March, April, May, June, July, August, September, October, November, "
               "December. January, February,",
               "x = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\ny = [1, 2, 3, 4,"]
    config = SamplingConfig(max_new_tokens=10)
    runs = [_same_as_plain(smollm2, smollm2.vocab.encode(text), config, k=4, check=i == 0)
            for i, text in enumerate(prompts)]
    assert runs[0].max_recompute_diff < 1e-3                 # float32 logits of magnitude ~20
    assert all(passes_saved(r) > 0 for r in runs)             # the repetition lets drafts through


# ---------------------------------------------------------------------------- sampling

def _exact_sequence_probs(model, prompt, new: int) -> dict[tuple, float]:
    """P(output) of every output of at most `new` tokens under the model (temperature 1),
    from full forward passes: the reference the sampled counts are tested against."""
    probs = {}

    def walk(seq, p):
        if seq and (seq[-1] in model.vocab.end_ids or len(seq) == new):
            probs[seq] = p
            return
        row = softmax(model.full_forward(list(prompt) + list(seq)).logits[-1])
        for token, q in enumerate(row):
            walk(seq + (token,), p * q)

    walk((), 1.0)
    return probs


def _chi_square_ok(counts: dict, probs: dict, n: int) -> tuple[float, float]:
    """(statistic, critical value at p = 0.001) with cells of expected count < 5 pooled."""
    big = [s for s in probs if probs[s] * n >= 5]
    observed = [counts.get(s, 0) for s in big] + [n - sum(counts.get(s, 0) for s in big)]
    expected = [probs[s] * n for s in big] + [n * (1 - sum(probs[s] for s in big))]
    stat = sum((o - e) ** 2 / e for o, e in zip(observed, expected) if e > 0)
    df = len(observed) - 1
    z = 3.0902                                       # the normal quantile of 0.999 (Wilson–Hilferty)
    critical = df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3
    return stat, critical


PROMPT, NEW, SAMPLES = (1, 2, 3, 5, 1, 2), 3, 2500      # 我爱学习！我爱: the drafter proposes 学习！我爱…


@functools.cache
def _sampled_runs():
    config = SamplingConfig(mode="sample", temperature=1.0, max_new_tokens=NEW)
    return [speculative_generate(TEACHING, PROMPT, config.with_(seed=seed), k=3, check_recompute=False)
            for seed in range(SAMPLES)]


def _counts(outputs) -> dict:
    counts = {}
    for out in outputs:
        counts[out] = counts.get(out, 0) + 1
    return counts


def test_sampled_speculative_output_has_the_models_distribution():
    runs = _sampled_runs()
    accepted = sum(sum(accepted_counts(r)) for r in runs)
    rejected = sum(len(p.rejected) for r in runs for p in verify_steps(r))
    assert accepted > 300 and rejected > 300                # the drafter is not trivial here
    stat, critical = _chi_square_ok(_counts(r.output_ids for r in runs),
                                    _exact_sequence_probs(TEACHING, PROMPT, NEW), SAMPLES)
    assert stat < critical


def test_the_test_sees_a_wrong_rule():
    """Always keeping the first draft (what greedy-minded code might do) fails the same test."""
    def kept_draft(run):
        draft = run.steps[1].draft if len(run.steps) > 1 else ()
        return (run.output_ids[:1] + draft)[:NEW] if draft else run.output_ids

    stat, critical = _chi_square_ok(_counts(kept_draft(r) for r in _sampled_runs()),
                                    _exact_sequence_probs(TEACHING, PROMPT, NEW), SAMPLES)
    assert stat > critical


def test_sampling_is_seeded():
    config = SamplingConfig(mode="sample", temperature=1.0, max_new_tokens=10, seed=7)
    a = speculative_generate(TEACHING, [1, 2, 3, 5, 1, 2], config, k=3, check_recompute=False)
    b = speculative_generate(TEACHING, [1, 2, 3, 5, 1, 2], config, k=3, check_recompute=False)
    assert a.output_ids == b.output_ids and accepted_counts(a) == accepted_counts(b)


# ---------------------------------------------------------------------------- explorer trace --speculative

def _cli(capsys, *argv):
    from explorer.cli.main import main
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_trace_speculative_prints_the_accepted_counts_per_pass(capsys):
    code, out, _ = _cli(capsys, "trace", "--prompt-ids", "1,1,3,4", "--speculative", "3", "--max-new-tokens", "12")
    assert code == 0
    assert "accepted per verify pass: [0, 0, 0, 2, 3, 0]" in out
    assert "forward passes: 7 instead of 12 (one per output token): 5 saved" in out
    row = next(line for line in out.splitlines() if line.startswith("Verify 1 "))
    assert "0 of 2" in row and "7 → 5" in row            # two drafted tokens rejected, cache rolled back
    code, out, _ = _cli(capsys, "trace", "--prompt-ids", "1,1,3,4", "--speculative", "3", "--max-new-tokens", "12",
                        "--lang", "zh")
    assert "每次验证接受的草稿数：[0, 0, 0, 2, 3, 0]" in out and "3个中3个" in out


def test_trace_speculative_json_has_the_passes(capsys):
    code, out, _ = _cli(capsys, "trace", "--prompt-ids", "1,1,3,4", "--speculative", "3", "--max-new-tokens", "12",
                        "--json")
    data = json.loads(out)
    plain = generate(TEACHING, [1, 1, 3, 4], SamplingConfig(max_new_tokens=12), check_recompute=False)
    assert data["output_ids"] == list(plain.output_ids)
    assert data["accepted_counts"] == [0, 0, 0, 2, 3, 0] == [p["accepted"] for p in data["steps"][1:]]
    assert data["forward_passes"] == 7 and data["plain_forward_passes"] == 12
    first = data["steps"][1]
    assert (first["draft"], first["rejected"], first["cache_len_written"], first["cache_len_after"]) == \
           ([4, 3], [4, 3], 7, 5)


def test_trace_speculative_refuses_what_it_cannot_do(capsys):
    assert _cli(capsys, "trace", "--speculative", "0")[0] != 0
    code, _, err = _cli(capsys, "trace", "--speculative", "2", "--force", "0:3")
    assert code != 0 and "--force" in err and "Traceback" not in err
    code, _, err = _cli(capsys, "trace", "--speculative", "2", "--mode", "beam")
    assert code != 0 and "beam" in err
    code, out, err = _cli(capsys, "trace", "--ngram", "2")     # an n-gram length with nothing to look up
    assert code == 2 and "--ngram 2" in err and "--speculative" in err and out == ""


# ---------------------------------------------------------------------------- the lesson and its timeline

def test_the_speculative_lesson_plays_the_course_numbers():
    from explorer.lessons import load_lesson
    session = load_lesson("speculative").build_session()
    run = session.scenario_results()[0][0]
    plain = generate(TEACHING, [1, 1, 3, 4], SamplingConfig(max_new_tokens=12), check_recompute=False)
    assert run.output_ids == plain.output_ids == (3, 5) * 6
    assert len(run.steps) == 7 and [s.accepted for s in run.steps[1:]] == [0, 0, 0, 2, 3, 0]
    first = run.steps[1]
    assert (first.draft, first.rejected, first.cache_len_written, first.cache_len_after) == ((4, 3), (4, 3), 7, 5)
    assert first.trace.layers[0].mask.shape == (3, 7) and first.logits_position == 4
    assert run.max_recompute_diff < 1e-12


def test_the_timeline_marks_verify_passes_and_kept_and_rejected_tokens(qtbot):
    from explorer.lessons import load_lesson
    from explorer.ui.panels.timeline import TimelinePanel
    from teacher import chips_in_view
    session = load_lesson("speculative").build_session()
    panel = TimelinePanel(session)
    qtbot.addWidget(panel)
    panel.resize(1200, 400)
    panel.show()
    qtbot.waitExposed(panel)
    assert chips_in_view(panel.strip)[:3] == ["Prefill", "Verify 1", "Verify 2"]
    session.last()

    def row(r):
        return [panel.table.item(r, c).text() for c in range(panel.table.columnCount())]

    assert row(1)[0] == "Verify 1" and "学习 你 学习" in row(1)[1] and "4, 5, 6" in row(1)[2]
    assert "(rolled back from 7)" in row(1)[3]
    assert "✓ – ✗ 你 学习 → ！ (5)" in row(1)[5]
    assert "✓ 学习 ！ ✗ – → 学习 (3)" in row(4)[5] and "rolled back" not in row(4)[3]
    session.set_lang("zh")
    assert "（从7回退）" in row(1)[3] and "✓ – ✗ 你 学习 → ！（5）" in row(1)[5]


def test_a_plain_scenario_beside_a_speculative_one_decodes_plainly():
    from explorer.session import Session
    from explorer.session.session import Scenario
    config = SamplingConfig(max_new_tokens=12)
    speculative = Scenario(TEACHING, (1, 1, 3, 4), config, name="fast", speculative=3)
    plain = Scenario(TEACHING, (1, 1, 3, 4), config.with_(max_new_tokens=11), name="plain")
    session = Session(TEACHING, (1, 1, 3, 4), scenarios=(speculative, plain), check_recompute=False)
    (fast_run, _), (plain_run, _) = session.scenario_results()
    assert len(fast_run.steps) == 7 and len(plain_run.steps) == 11
    reference = generate(TEACHING, (1, 1, 3, 4), config.with_(max_new_tokens=11), check_recompute=False)
    assert [s.input_ids for s in plain_run.steps] == [s.input_ids for s in reference.steps]
    session.force(2, 4)                                   # a what-if on the fast scenario decodes it plainly
    assert all(s.phase != "verify" for s in session.scenario_results()[0][0].steps)


def test_a_what_if_in_the_speculative_lesson_keeps_every_text_filled():
    from explorer.lessons import load_lesson
    from explorer.session.narration import frame_explanation, frame_title
    session = load_lesson("speculative").build_session()
    session.force(1, 4)                                   # decoded plainly from here: no verify pass
    for i in range(len(session.frames)):
        session.go(i)
        for lang in ("en", "zh"):
            assert frame_title(session.frame, session.run, session.model.vocab, lang)
            assert frame_explanation(session.frame, session.run, session.model.vocab, lang)
