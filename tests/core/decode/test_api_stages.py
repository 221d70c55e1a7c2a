"""The API stages against their peers' definitions: OpenAI's penalty formula and logit bias,
Hugging Face's TypicalLogitsWarper and min_tokens_to_keep, llama.cpp's top-n-sigma and XTC,
min_new_tokens; hand-computed cases, independent numpy references, properties on random logits."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from explorer.core.errors import SettingError
from explorer.core.decode.sampling import (
    ALL_STAGE_NAMES,
    API_STAGE_NAMES,
    ORDER_PRESETS,
    STAGE_NAMES,
    SamplingConfig,
    distribution,
    uniform_draw,
    xtc_draw,
)

SAMPLE = SamplingConfig(mode="sample")
FOUR = [0.5, 0.3, 0.15, 0.05]


def kept(dist) -> list[int]:
    return [int(i) for i in np.flatnonzero(dist.probs > 0)]


def stage(dist, name):
    return next(s for s in dist.stages if s.name == name)


# ---------------------------------------------------------------------------- OpenAI

def test_presence_and_frequency_follow_openai():
    """OpenAI: mu[j] - c[j] * alpha_frequency - (c[j] > 0) * alpha_presence, c counted over
    the output only. Prompt [0], output [1, 1, 3]."""
    logits = [1.0, 2.0, 0.5, -1.0]
    config = SAMPLE.with_(frequency_penalty=0.5, presence_penalty=0.25)
    dist = distribution(logits, config, seen_ids=[0, 1, 1, 3], step=3)
    # id 0: only in the prompt, 1.0; id 1: 2 - 2*0.5 - 0.25; id 2: unseen; id 3: -1 - 0.5 - 0.25
    np.testing.assert_allclose(dist.stages[-1].logits, [1.0, 0.75, 0.5, -1.75])
    assert [s.name for s in dist.stages][:4] == ["raw", "repetition_penalty", "frequency_penalty", "presence_penalty"]
    np.testing.assert_allclose(stage(dist, "frequency_penalty").logits, [1.0, 1.0, 0.5, -1.5])


def test_explicit_output_ids_count_instead_of_the_step():
    dist = distribution([1.0, 2.0, 0.5], SAMPLE.with_(presence_penalty=1.0), seen_ids=[2], output_ids=[2, 2])
    np.testing.assert_allclose(dist.stages[-1].logits, [1.0, 2.0, -0.5])


def test_repetition_penalty_divides_where_presence_subtracts():
    """theta divides a positive logit and multiplies a negative one; presence subtracts the same amount."""
    logits, seen = [4.0, -2.0, 1.0], [0, 1]
    rep = distribution(logits, SAMPLE.with_(repetition_penalty=2.0), seen_ids=seen, output_ids=seen)
    pres = distribution(logits, SAMPLE.with_(presence_penalty=1.0), seen_ids=seen, output_ids=seen)
    np.testing.assert_allclose(rep.stages[-1].logits, [2.0, -4.0, 1.0])
    np.testing.assert_allclose(pres.stages[-1].logits, [3.0, -3.0, 1.0])


def test_logit_bias_adds_and_bans():
    dist = distribution([1.0, 2.0, 0.5, -1.0], SAMPLE.with_(logit_bias={2: -100.0, 0: 5.0}))
    np.testing.assert_allclose(stage(dist, "logit_bias").logits, [6.0, 2.0, -99.5, -1.0])
    assert dist.probs[2] < 1e-40 and stage(dist, "logit_bias").note == "0:+5, 2:-100"
    assert SamplingConfig(logit_bias={"3": 1}).logit_bias == ((3, 1.0),)     # a TOML key


# ---------------------------------------------------------------------------- typical-p

def hf_typical(logits, mass, min_keep=1):
    """Hugging Face's TypicalLogitsWarper, written from its code in plain numpy."""
    scores = np.asarray(logits, dtype=np.float64)
    normalized = scores - np.log(np.exp(scores - scores.max()).sum()) - scores.max()
    p = np.exp(normalized)
    ent = -np.nansum(normalized * p)
    shifted = np.abs(-normalized - ent)
    order = np.argsort(shifted, kind="stable")
    cumulative = np.cumsum(p[order])
    last = min(int((cumulative < mass).sum()), len(order) - 1)
    remove = shifted[order] > shifted[order][last]
    remove[:min_keep] = False
    return sorted(int(i) for i in order[~remove])


@pytest.mark.parametrize("mass, expected", [(0.2, [1]), (0.5, [0, 1]), (0.9, [0, 1, 2]), (0.99, [0, 1, 2, 3])])
def test_typical_p_hand_computed(mass, expected):
    """H = -sum p ln p = 1.1421 for [0.5, 0.3, 0.15, 0.05]; |-ln p - H| = 0.449, 0.062, 0.755, 1.854:
    the most typical token is id 1 (p 0.3), not the most likely one."""
    dist = distribution(np.log(FOUR), SAMPLE.with_(typical_p=mass))
    assert kept(dist) == expected == hf_typical(np.log(FOUR), mass)


def hf_typical_scores(logits):
    scores = np.asarray(logits, dtype=np.float64)
    normalized = scores - np.log(np.exp(scores - scores.max()).sum()) - scores.max()
    return np.abs(-normalized + np.nansum(normalized * np.exp(normalized))), np.exp(normalized)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-8, 8), min_size=2, max_size=40), st.floats(0.05, 0.95), st.integers(1, 5))
def test_typical_p_matches_hugging_face(logits, mass, min_keep):
    shifted, p = hf_typical_scores(logits)
    gaps = np.diff(np.sort(shifted))
    assume(gaps.min() > 1e-9)                        # a near-tie's order is round-off: the hand cases cover ties
    order = np.argsort(shifted)
    assume(np.abs(np.cumsum(p[order]) - mass).min() > 1e-8)    # within our 1e-9 tolerance of the mass
    dist = distribution(logits, SAMPLE.with_(typical_p=mass, min_keep=min_keep))
    assert kept(dist) == hf_typical(logits, mass, min_keep)


def test_typical_p_min_keep_adds_the_most_typical_without_their_ties():
    """[0, 0, 1]: p = 0.21, 0.21, 0.58, H = 0.975; |-ln p - H| = 0.576, 0.576, 0.424: id 2 reaches
    0.5 alone; min_keep 2 adds the next most typical, id 0 (the lower id of the tie), not id 1."""
    dist = distribution([0.0, 0.0, 1.0], SAMPLE.with_(typical_p=0.5, min_keep=2))
    assert kept(dist) == [0, 2] == hf_typical([0.0, 0.0, 1.0], 0.5, 2)


# ---------------------------------------------------------------------------- top-n-sigma

@pytest.mark.parametrize("n, expected", [(1.0, [0, 1]), (2.0, [0, 1, 2]), (3.0, [0, 1, 2, 3])])
def test_top_n_sigma_hand_computed(n, expected):
    """Finite logits 3, 2, 1, 0: mean 1.5, population std sqrt(1.25) = 1.118; keep >= 3 - n * 1.118."""
    dist = distribution([3.0, 2.0, 1.0, 0.0, -np.inf], SAMPLE.with_(top_n_sigma=n))
    assert kept(dist) == expected


def test_top_n_sigma_ignores_temperature():
    logits = [3.0, 2.2, 1.0, 0.3, -0.5]
    for order in ORDER_PRESETS:
        dist = distribution(logits, SAMPLE.with_(top_n_sigma=1.0, temperature=0.4, order=order))
        assert kept(dist) == [0, 1]


# ---------------------------------------------------------------------------- XTC

def test_xtc_removes_the_top_choices_but_the_least_likely():
    """p >= 0.15: ids 0, 1, 2; all but the least likely of them (2) go."""
    dist = distribution(np.log([0.4, 0.3, 0.2, 0.1]), SAMPLE.with_(xtc_probability=1.0, xtc_threshold=0.15))
    assert kept(dist) == [2, 3]
    one_above = distribution(np.log([0.4, 0.3, 0.2, 0.1]), SAMPLE.with_(xtc_probability=1.0, xtc_threshold=0.35))
    assert kept(one_above) == [0, 1, 2, 3] and stage(one_above, "xtc").active
    too_few = distribution(np.log([0.4, 0.3, 0.2, 0.1]),
                           SAMPLE.with_(xtc_probability=1.0, xtc_threshold=0.15, min_keep=3))
    assert kept(too_few) == [0, 1, 2, 3]                     # llama.cpp: leave it when fewer than min_keep remain


def test_xtc_draw_is_its_own_and_decides():
    """The draw comes from a generator keyed by (seed, step, 1); u from (seed, step)."""
    for seed, step in ((0, 0), (7, 3), (12345, 11)):
        reference = float(np.random.default_rng(np.random.SeedSequence([seed, step, 1])).random())
        assert xtc_draw(seed, step) == reference
        assert uniform_draw(seed, step) == float(np.random.default_rng(np.random.SeedSequence([seed, step])).random())
        for probability in (0.2, 0.5, 0.9):
            config = SAMPLE.with_(seed=seed, xtc_probability=probability, xtc_threshold=0.15)
            dist = distribution(np.log([0.4, 0.3, 0.2, 0.1]), config, step=step)
            assert kept(dist) == ([2, 3] if reference < probability else [0, 1, 2, 3])
            assert dist.u == uniform_draw(seed, step)


# ---------------------------------------------------------------------------- min_keep, min_new_tokens

@pytest.mark.parametrize("changes, alone, with_keep", [
    (dict(top_p=0.1), [0], [0, 1, 2]),
    (dict(top_k=1), [0], [0, 1, 2]),
    (dict(min_p=0.9), [0], [0, 1, 2]),
    (dict(typical_p=0.2), [1], [0, 1, 2]),       # the three most typical: 1, 0, 2
    (dict(top_n_sigma=0.01), [0], [0, 1, 2]),
])
def test_min_keep_holds_in_every_truncation(changes, alone, with_keep):
    base = SAMPLE.with_(**changes)
    assert kept(distribution(np.log(FOUR), base)) == alone
    dist = distribution(np.log(FOUR), base.with_(min_keep=3))
    assert kept(dist) == with_keep
    assert "keep≥3" in dist.stages[-1].note or any("keep≥3" in s.note for s in dist.stages)


def test_min_new_tokens_holds_the_end_token_back():
    logits, config = [0.0, 1.0, 0.0, 5.0], SAMPLE.with_(min_new_tokens=2)
    early = distribution(logits, config, seen_ids=[0, 1], step=1, end_ids={3})
    assert early.probs[3] == 0 and early.removed_by[3] == "min_new_tokens"
    assert stage(early, "min_new_tokens").note == "1/2 out"
    late = distribution(logits, config, seen_ids=[0, 1, 2], step=2, end_ids={3})
    assert late.probs[3] > 0.9
    unknown = distribution(logits, config, step=0)
    assert unknown.probs[3] > 0.9 and "no end token" in stage(unknown, "min_new_tokens").note


def test_min_new_tokens_never_empties_the_candidates():
    dist = distribution([0.0, -np.inf], SAMPLE.with_(min_new_tokens=5), end_ids={0})
    assert kept(dist) == [0]


# ---------------------------------------------------------------------------- orders

def test_presets_place_each_stage_as_the_library_does():
    for chain in ORDER_PRESETS.values():
        assert sorted(chain) == sorted(ALL_STAGE_NAMES)
    llama = ORDER_PRESETS["llama.cpp"]
    # common_params_sampling's default chain: penalties, DRY, top-n-sigma, top-k, typical, top-p, min-p, XTC, temperature
    chain = ["repetition_penalty", "top_n_sigma", "top_k", "typical_p", "top_p", "min_p", "xtc", "temperature"]
    assert [s for s in llama if s in chain] == chain
    assert llama.index("presence_penalty") < llama.index("top_n_sigma") and llama[0] == "logit_bias"
    hf = ORDER_PRESETS["hf"]
    warpers = ["temperature", "top_k", "top_p", "min_p", "typical_p"]     # _get_logits_processor's order
    assert [s for s in hf if s in warpers] == warpers
    assert hf.index("logit_bias") < hf.index("repetition_penalty") < hf.index("min_new_tokens") < hf.index("temperature")


def test_the_classic_orders_are_unchanged():
    assert [s for s in ORDER_PRESETS["hf"] if s in STAGE_NAMES] == \
        ["repetition_penalty", "temperature", "top_k", "top_p", "min_p"]
    assert [s for s in ORDER_PRESETS["llama.cpp"] if s in STAGE_NAMES] == \
        ["repetition_penalty", "top_k", "top_p", "min_p", "temperature"]


def test_order_matters_typical_against_top_p():
    """On [0.5, 0.3, 0.15, 0.05]. llama.cpp, typical first: typical 0.2 keeps the most typical
    token, {1}. Hugging Face, top-p first: top-p 0.6 keeps {0, 1} (0.5, then 0.8), renormalised
    [0.625, 0.375]: H = 0.6616, |-ln p - H| = 0.19 and 0.32, so typical 0.2 keeps {0}."""
    config = SAMPLE.with_(typical_p=0.2, top_p=0.6)
    llama = distribution(np.log(FOUR), config.with_(order="llama.cpp"))    # typical, then top-p
    hf = distribution(np.log(FOUR), config.with_(order="hf"))              # top-p, then typical
    assert kept(llama) == [1] and kept(hf) == [0]


def test_an_order_written_before_the_api_stages_reads_as_its_preset():
    """A lesson file saved with a preset's five course stages still takes a typical-p."""
    for chain in ORDER_PRESETS.values():
        old = tuple(s for s in chain if s in STAGE_NAMES)
        assert SamplingConfig(order=old).order == chain
        assert SamplingConfig(order=old, typical_p=0.5).shown_order == \
            tuple(s for s in chain if s in STAGE_NAMES or s == "typical_p")


def test_an_order_leaving_out_a_stage_that_is_on_is_refused():
    with pytest.raises(SettingError, match=r"order: leaves out typical_p, which is on \(typical_p = 0.5\)"):
        SamplingConfig(typical_p=0.5, order="top_k,temperature")
    with pytest.raises(SettingError, match=r"leaves out top_p, xtc, which are on \(top_p = 0.9, xtc_probability"):
        SamplingConfig(top_p=0.9, xtc_probability=0.5, order="temperature")
    assert SamplingConfig(typical_p=0.5, order="typical_p").order == ("typical_p",)


# ---------------------------------------------------------------------------- bad values

@pytest.mark.parametrize("changes, message", [
    (dict(typical_p=-0.1), r"typical_p = -0.1: expected a number from 0 \(excluded\) to 1"),
    (dict(xtc_probability=1.5), r"xtc_probability = 1.5: expected a number from 0 to 1"),
    (dict(presence_penalty=3), r"presence_penalty = 3: expected a number from -2 to 2"),
    (dict(frequency_penalty=float("nan")), r"frequency_penalty = nan"),
    (dict(top_n_sigma=-1.0), r"top_n_sigma = -1.0: expected a finite number >= 0"),
    (dict(min_keep=-1), r"min_keep = -1: expected an integer from 0"),
    (dict(min_new_tokens=1.5), r"min_new_tokens = 1.5: expected an integer"),
    (dict(logit_bias={3: 200}), r"logit_bias\[3\] = 200: expected a number from -100 to 100"),
    (dict(logit_bias={"x": 1}), r"logit_bias: token 'x': expected a token id"),
    (dict(logit_bias=[(1, 0.5), (1, 2.0)]), r"token 1 is given twice"),
])
def test_bad_values_name_the_field_and_range(changes, message):
    with pytest.raises(SettingError, match=message):
        SamplingConfig(**changes)


def test_a_bias_outside_the_vocabulary_is_refused():
    with pytest.raises(SettingError, match=r"logit_bias: token 7 is outside the vocabulary: expected an id from 0 to 3"):
        distribution(FOUR, SAMPLE.with_(logit_bias={7: 1.0}))


# ---------------------------------------------------------------------------- properties

logit_vectors = st.lists(st.one_of(st.integers(-5, 5).map(float), st.floats(-30, 30)), min_size=1, max_size=50)
api_settings = st.fixed_dictionaries({
    "presence_penalty": st.one_of(st.just(0.0), st.floats(-2, 2)),
    "frequency_penalty": st.one_of(st.just(0.0), st.floats(-2, 2)),
    "typical_p": st.one_of(st.just(1.0), st.floats(0.01, 1.0)),
    "min_keep": st.integers(0, 8),
    "xtc_probability": st.one_of(st.just(0.0), st.floats(0, 1)),
    "xtc_threshold": st.floats(0, 0.6),
    "top_n_sigma": st.one_of(st.just(0.0), st.floats(0, 4)),
    "min_new_tokens": st.integers(0, 4),
    "top_k": st.integers(0, 60), "top_p": st.floats(0.01, 1.0), "min_p": st.floats(0, 1),
    "temperature": st.floats(0.1, 3.0), "seed": st.integers(0, 1000),
    "order": st.one_of(st.sampled_from(list(ORDER_PRESETS)), st.permutations(ALL_STAGE_NAMES).map(tuple)),
})


@st.composite
def api_cases(draw):
    logits = draw(logit_vectors)
    ids = st.integers(0, len(logits) - 1)
    output = draw(st.lists(ids, max_size=6))
    bias = draw(st.dictionaries(ids, st.floats(-100, 100), max_size=3))
    config = SAMPLE.with_(logit_bias=bias, **draw(api_settings))
    return logits, config, output, draw(st.sets(ids, max_size=2))


@settings(max_examples=300, deadline=None)
@given(api_cases())
def test_every_stage_on_gives_a_valid_choice(case):
    logits, config, output, ends = case
    dist = distribution(logits, config, seen_ids=output, step=len(output), end_ids=ends)
    assert math.isclose(dist.probs.sum(), 1.0, rel_tol=0, abs_tol=1e-9)
    assert dist.probs[dist.selected_id] > 0 and dist.removed_by[dist.selected_id] is None
    truncations = {"top_k", "top_p", "min_p", "typical_p", "top_n_sigma", "xtc"}
    for before, after in zip(dist.stages, dist.stages[1:]):      # min_keep holds
        if after.name in truncations and after.name != "top_k":
            assert after.ids.size >= min(config.min_keep, before.ids.size)
    assert [s.name for s in dist.stages if s.name in STAGE_NAMES] == [n for n in config.order if n in STAGE_NAMES]


@settings(max_examples=200, deadline=None)
@given(logit_vectors, st.sampled_from(list(ORDER_PRESETS)), st.floats(0.2, 3), st.integers(0, 10))
def test_off_is_the_identity(logits, order, temperature, step):
    """The API stages at their neutral values leave no row and change nothing: the stages are
    those of the course's order on its own."""
    base = SAMPLE.with_(temperature=temperature, top_k=3, top_p=0.9, order=order)
    neutral = base.with_(presence_penalty=0.0, frequency_penalty=0.0, logit_bias={}, typical_p=1.0,
                         min_keep=1, xtc_probability=0.0, top_n_sigma=0.0, min_new_tokens=0)
    course = tuple(s for s in ORDER_PRESETS[order] if s in STAGE_NAMES)
    a = distribution(logits, neutral, seen_ids=[0, 0], step=step, end_ids={0})
    b = distribution(logits, base.with_(order=course), seen_ids=[0, 0], step=step)
    assert [s.name for s in a.stages] == [s.name for s in b.stages] == ["raw", *course]
    assert np.array_equal(a.probs, b.probs) and a.selected_id == b.selected_id and a.u == b.u
    assert not set(API_STAGE_NAMES) & {s.name for s in a.stages}


@settings(max_examples=200, deadline=None)
@given(logit_vectors, st.integers(1, 30), st.integers(0, 40))
def test_the_favourites_of_a_truncated_stage_are_those_of_its_whole_vector(logits, k, n):
    """top(n): probability descending, lower id first, over all V ids (removed ones are 0)."""
    dist = distribution(logits, SAMPLE.with_(top_k=k, typical_p=0.9))
    for stage in dist.stages:
        probs = stage.probs
        expected = sorted(range(probs.size), key=lambda i: (-probs[i], i))[:n]
        assert list(stage.top(n)) == expected
