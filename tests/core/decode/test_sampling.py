"""Sampling: the course's numbers, properties on random logits, draw frequencies, bad values, CLI."""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.cli import flags as cli_flags
from explorer.cli.main import main as cli_main
from explorer.core.errors import SettingError
from explorer.core.limits import MAX_SEED
from explorer.core.decode.sampling import (
    ORDER_PRESETS,
    STAGE_NAMES,
    SamplingConfig,
    apply_min_p,
    apply_repetition_penalty,
    apply_temperature,
    apply_top_k,
    apply_top_p,
    distribution,
    forced,
    parse_order,
    uniform_draw,
)

COURSE = [2.0, 1.0, 0.0]
FOUR = [0.55, 0.25, 0.15, 0.05]
SAMPLE = SamplingConfig(mode="sample")


def kept_count(dist) -> int:
    return int(np.count_nonzero(dist.probs > 0))


# ---------------------------------------------------------------------------- course numbers

@pytest.mark.parametrize("t, expected", [
    (0.5, [0.8668, 0.1173, 0.0159]),
    (1.0, [0.6652, 0.2447, 0.0900]),
    (2.0, [0.5065, 0.3072, 0.1863]),
])
def test_temperature_course_numbers(t, expected):
    np.testing.assert_allclose(distribution(COURSE, SAMPLE.with_(temperature=t)).probs, expected, atol=1e-4)


def test_top_k_course_numbers():
    np.testing.assert_allclose(distribution(COURSE, SAMPLE.with_(top_k=2)).probs,
                               [0.731059, 0.268941, 0.0], atol=1e-6)


@pytest.mark.parametrize("p, kept", [(0.8, 2), (0.9, 3)])
def test_top_p_course_numbers(p, kept):
    dist = distribution(np.log(FOUR), SAMPLE.with_(top_p=p))
    assert kept_count(dist) == kept
    assert list(dist.removed_by[kept:]) == ["top_p"] * (4 - kept)


def test_order_changes_the_result():
    config = SAMPLE.with_(temperature=2.0, top_p=0.85)
    hf = distribution(COURSE, config.with_(order="hf"))
    llama = distribution(COURSE, config.with_(order="llama.cpp"))
    np.testing.assert_allclose(hf.probs, [0.5065, 0.3072, 0.1863], atol=1e-4)
    np.testing.assert_allclose(llama.probs, [0.6225, 0.3775, 0.0], atol=1e-4)
    assert [s.name for s in llama.stages] == ["raw", "repetition_penalty", "top_k", "top_p",
                                              "min_p", "temperature"]


def test_parse_order():
    assert parse_order("hf") == ORDER_PRESETS["hf"]
    assert parse_order("llama.cpp")[-1] == "temperature"
    assert parse_order(" top-k , temperature") == ("top_k", "temperature")
    assert SamplingConfig(order="llama.cpp").order == ORDER_PRESETS["llama.cpp"]
    with pytest.raises(SettingError, match="'top_q'.*top_k"):
        parse_order("top_k,top_q")
    with pytest.raises(SettingError, match="twice"):
        parse_order("top_k,top_k")


# ---------------------------------------------------------------------------- processors

def test_processors_on_plain_vectors():
    logits, removed = apply_top_k(np.array([2.0, 1.0, 1.0, 0.0]), 2)      # boundary tie kept
    assert list(removed) == [False, False, False, True] and logits[3] == -np.inf
    logits, removed = apply_temperature(np.array([1.0, 3.0, 3.0, 0.0]), 0)  # greedy, lowest id
    assert list(logits) == [-np.inf, 3.0, -np.inf, -np.inf] and removed.sum() == 3
    logits, removed = apply_repetition_penalty(np.array([1.0, -1.0, 0.0, 2.0]), [0, 1, 2, 0], 2.0)
    assert list(logits) == [0.5, -2.0, 0.0, 2.0] and not removed.any()
    assert list(apply_top_p(np.log(FOUR), 0.8)[1]) == [False, False, True, True]
    assert list(apply_min_p(np.log(FOUR), 0.3)[1]) == [False, False, True, True]   # 0.15 < 0.165
    for off in (apply_top_k(COURSE, 0), apply_top_k(COURSE, 3), apply_top_p(COURSE, 1.0),
                apply_min_p(COURSE, 0.0), apply_temperature(COURSE, 1.0)):
        assert list(off[0]) == COURSE and not off[1].any()


def test_inactive_stages_are_still_listed():
    dist = distribution(COURSE, SAMPLE)
    assert [s.name for s in dist.stages] == ["raw", *STAGE_NAMES]
    assert [s.active for s in dist.stages] == [True] + [False] * 5
    active = distribution(COURSE, SAMPLE.with_(temperature=0.5, top_k=2, top_p=0.9, min_p=0.1,
                                               repetition_penalty=1.5), seen_ids=[0])
    assert all(s.active for s in active.stages)


def test_stage_records_are_consistent():
    dist = distribution([3.0, 1.0, 2.0, 0.0, -np.inf], SAMPLE.with_(top_k=2))
    raw, top_k = dist.stages[0], dist.stages[3]
    assert list(raw.removed) == [False, False, False, False, True]
    assert list(top_k.kept) == [True, False, True, False, False]
    assert list(top_k.removed) == [False, True, False, True, False]
    assert list(dist.removed_by) == [None, "top_k", None, "top_k", "raw"]
    assert list(dist.ruler_ids) == [0, 2]
    assert dist.ruler_lo[0] == 0.0 and dist.ruler_hi[-1] == pytest.approx(1.0)
    assert list(dist.top(3)) == [0, 2, 1]          # the removed ids follow, lower id first
    assert list(dist.top(2, stage=0)) == [0, 2]
    with pytest.raises(ValueError):
        top_k.logits[0] = 1.0                       # records are read-only


def test_forced_keeps_the_distribution():
    dist = distribution(COURSE, SAMPLE)
    what_if = forced(dist, 2)
    assert what_if.selected_id == 2 and what_if.forced and what_if.u == dist.u
    with pytest.raises(SettingError, match="forced token 3"):
        forced(dist, 3)


# ---------------------------------------------------------------------------- properties

logit_values = st.one_of(st.integers(-5, 5).map(float), st.floats(-30, 30, allow_nan=False))
logit_vectors = st.lists(logit_values, min_size=1, max_size=60)
orders = st.one_of(st.sampled_from(list(ORDER_PRESETS)), st.permutations(STAGE_NAMES).map(tuple))
configs = st.builds(
    SamplingConfig, mode=st.just("sample"),
    temperature=st.one_of(st.floats(0.05, 5), st.sampled_from([1.0, 0.0, -1.0])),
    top_k=st.integers(0, 70),
    top_p=st.one_of(st.floats(0.01, 1.0), st.just(1.0)),
    min_p=st.one_of(st.floats(0.0, 1.0), st.just(0.0)),
    repetition_penalty=st.floats(0.5, 3.0),
    seed=st.integers(0, MAX_SEED), order=orders)


@st.composite
def cases(draw):
    logits = draw(logit_vectors)
    seen = draw(st.lists(st.integers(0, len(logits) - 1), max_size=8))
    return logits, draw(configs), seen, draw(st.integers(0, 10_000))


@settings(max_examples=300, deadline=None)
@given(cases())
def test_any_settings_give_a_valid_choice(case):
    logits, config, seen, step = case
    dist = distribution(logits, config, seen_ids=seen, step=step)
    assert math.isclose(dist.probs.sum(), 1.0, rel_tol=0, abs_tol=1e-9)
    assert dist.stages[-1].kept.any()
    assert dist.removed_by[dist.selected_id] is None
    assert dist.probs[dist.selected_id] > 0
    assert np.all(dist.probs[~dist.stages[-1].kept] == 0)
    for stage in dist.stages:                      # removed by one stage, never alive again
        assert not (stage.removed & stage.kept).any()
    if not dist.greedy:
        i = list(dist.ruler_ids).index(dist.selected_id)
        assert dist.ruler_lo[i] <= dist.u < dist.ruler_hi[i] or i == len(dist.ruler_ids) - 1


@settings(max_examples=200, deadline=None)
@given(logit_vectors, st.sampled_from(["greedy", "beam", "sample-cold"]))
def test_greedy_is_the_argmax_lowest_id_first(logits, mode):
    config = SAMPLE.with_(temperature=-0.5) if mode == "sample-cold" else SamplingConfig(mode=mode)
    dist = distribution(logits, config)
    best = max(logits)
    assert dist.selected_id == logits.index(best)
    assert dist.greedy and dist.u is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-10, 10), min_size=2, max_size=40), st.floats(0.25, 4.0))
def test_temperature_only_rescales(logits, t):
    dist = distribution(logits, SAMPLE.with_(temperature=t))
    assert dist.stages[-1].kept.all()
    log_probs = np.log(dist.probs)
    expected = (np.array(logits) - logits[0]) / t
    np.testing.assert_allclose(log_probs - log_probs[0], expected, atol=1e-9)


@settings(max_examples=100, deadline=None)
@given(cases())
def test_same_seed_repeats_exactly(case):
    logits, config, seen, step = case
    a = distribution(logits, config, seen_ids=seen, step=step)
    b = distribution(logits, config, seen_ids=seen, step=step)
    assert (a.selected_id, a.u) == (b.selected_id, b.u)
    assert np.array_equal(a.probs, b.probs)


@settings(max_examples=100, deadline=None)
@given(logit_vectors, configs, configs, st.integers(0, 10_000))
def test_u_depends_on_seed_and_step_only(logits, first, second, step):
    second = second.with_(seed=first.seed, temperature=abs(second.temperature) + 0.1)
    first = first.with_(temperature=abs(first.temperature) + 0.1)
    u = distribution(logits, first, step=step).u
    assert u == distribution(logits, second, step=step).u == uniform_draw(first.seed, step)
    assert 0 <= u < 1
    assert distribution(logits, first, step=step + 1).u == uniform_draw(first.seed, step + 1)


def slow_top_p(probs, p):
    """Reference: sort with sorted(), add one at a time, stop once the total reaches p."""
    ranked = sorted(range(len(probs)), key=lambda i: (-probs[i], i))
    total, kept = 0.0, []
    for i in ranked:
        kept.append(i)
        total += probs[i]
        if total >= p - 1e-9:
            break
    return sorted(kept)


@settings(max_examples=300, deadline=None)
@given(logit_vectors, st.floats(0.01, 0.999))
def test_top_p_keeps_the_smallest_prefix(logits, p):
    dist = distribution(logits, SAMPLE.with_(top_p=p))
    before = dist.stages[3].probs                  # hf order: top_p follows top_k
    assert list(np.flatnonzero(dist.stages[4].kept)) == slow_top_p(list(before), p)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_large_vocabulary_matches_a_full_sort(seed):
    """The shortcuts for 49k ids (sampled partition, threshold prefix) change no result."""
    rng = np.random.default_rng(seed)
    logits = np.round(rng.normal(0, 2.5, 49_152), 1)          # many exact ties
    config = SAMPLE.with_(temperature=0.8, top_k=300, top_p=0.9, seed=seed)
    dist = distribution(logits, config, step=seed)
    scaled = logits / 0.8
    kth = np.sort(scaled)[-300]
    assert np.array_equal(dist.stages[3].kept, scaled >= kth)
    before = dist.stages[3].probs
    ranked = np.lexsort((np.arange(before.size), -before))    # prob descending, lower id first
    size = int(np.searchsorted(np.cumsum(before[ranked]), 0.9 - 1e-9)) + 1
    assert set(np.flatnonzero(dist.stages[4].kept)) == set(ranked[:size])
    i = list(dist.ruler_ids).index(dist.selected_id)
    assert dist.ruler_lo[i] <= dist.u < dist.ruler_hi[i]
    no_top_k = distribution(logits, config.with_(top_k=0), step=seed)
    before = no_top_k.stages[3].probs
    ranked = np.lexsort((np.arange(before.size), -before))
    size = int(np.searchsorted(np.cumsum(before[ranked]), 0.9 - 1e-9)) + 1
    assert set(np.flatnonzero(no_top_k.stages[4].kept)) == set(ranked[:size])


# ---------------------------------------------------------------------------- frequencies

def test_draw_frequencies_match_the_probabilities():
    probs = np.array([0.6652, 0.2447, 0.0900])
    config = SAMPLE.with_(seed=7)
    logits = np.log(probs)
    draws = 20_000
    counts = np.bincount([distribution(logits, config, step=s).selected_id for s in range(draws)],
                         minlength=3)
    expected = draws * probs / probs.sum()
    chi_square = float(((counts - expected) ** 2 / expected).sum())
    assert chi_square < 13.816                      # df = 2, alpha = 0.001


# ---------------------------------------------------------------------------- bad values

@pytest.mark.parametrize("field, value, shown", [
    ("top_p", 0.0, "top_p = 0.0"), ("top_p", 1.5, "top_p = 1.5"),
    ("top_k", -1, "top_k = -1"), ("top_k", 2.5, "top_k = 2.5"),
    ("min_p", -0.1, "min_p = -0.1"), ("min_p", 1.1, "min_p = 1.1"),
    ("repetition_penalty", 0.0, "repetition_penalty = 0.0"),
    ("repetition_penalty", -1.0, "repetition_penalty = -1.0"),
    ("temperature", float("nan"), "temperature = nan"),
    ("num_beams", 0, "num_beams = 0"), ("max_new_tokens", 0, "max_new_tokens = 0"),
    ("seed", -1, "seed = -1"), ("mode", "random", "mode = 'random'"),
])
def test_bad_settings_name_the_value(field, value, shown):
    with pytest.raises(SettingError, match="^" + shown.replace(".", r"\.") + ": expected"):
        SamplingConfig(**{field: value})


@pytest.mark.parametrize("logits, shown", [
    ([1.0, 2.0, 0.0, float("nan")], "NaN at id 3"),
    ([-np.inf, -np.inf], "all -inf"),
    ([], "shape"),
])
def test_bad_logits(logits, shown):
    with pytest.raises(SettingError, match=shown):
        distribution(logits, SAMPLE)


def test_negative_temperature_is_greedy_not_an_error():
    dist = distribution(COURSE, SAMPLE.with_(temperature=-1.0))
    assert dist.greedy and dist.selected_id == 0 and dist.u is None
    assert list(dist.removed_by) == [None, "temperature", "temperature"]


def test_seen_ids_outside_the_vocabulary():
    with pytest.raises(SettingError, match="seen id 3"):
        distribution(COURSE, SAMPLE.with_(repetition_penalty=1.2), seen_ids=[3])


# ---------------------------------------------------------------------------- CLI

def run_sample(argv):
    return cli_main(["sample", *argv])


@pytest.mark.parametrize("argv, shown", [
    (["--logits", "2,1,0", "--top-p", "1.5"], "--top-p '1.5' is out of range; expected a number from 0 (excluded) to 1"),
    (["--logits", "2,1,0", "--top-k", "-1"], "--top-k '-1' is out of range"),
    (["--logits", "2,1,0", "--temperature", "nan"], "--temperature 'nan' is NaN; expected a finite number"),
    (["--logits", "2,x,0"], "--logits item 2 of 3: 'x' is not a number"),
    (["--logits", "2,nan,0"], "--logits item 2 of 3: 'nan' is NaN"),
    (["--probs", "0.5,0.4"], "sum to 0.9"),
    (["--probs", "1.2,-0.2"], "--probs item 1 of 2: '1.2' is out of range; expected a number from 0 to 1"),
    (["--probs", "0.2,-0.2"], "--probs item 2 of 2: '-0.2' is out of range"),
    (["--logits", "2,1,0", "--order", "hf,top_k"], "'hf'"),
    (["--logits", "2,1,0", "--seen", "7", "--repetition-penalty", "1.3"], "--seen item 1 of 1: id 7 is outside the 3 ids of --logits (expected 0..2)"),
])
def test_cli_bad_values_exit_2(capsys, argv, shown):
    assert run_sample(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "sample: error: " in err and shown in err
    assert "Traceback" not in err


def test_cli_tables(capsys):
    assert run_sample(["--probs", "0.55,0.25,0.15,0.05", "--top-p", "0.8"]) == 0
    out = capsys.readouterr().out
    assert "removed by top_p" in out and "u = " in out and "selected: id" in out
    assert "0.687500" in out                         # 0.55 / 0.8, six decimals
    assert run_sample(["--logits", "2,1,0", "--top-k", "2", "--lang", "zh"]) == 0
    out = capsys.readouterr().out
    assert "编号" in out and "概率" in out and "被top-k移除" in out


def test_cli_json(capsys):
    assert run_sample(["--logits", "2,1,0", "--top-k", "2", "--seed", "3", "--step", "5", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"stages", "probs", "u", "selected_id", "ruler", "order"} <= data.keys()
    assert {"name", "active", "logits", "probs", "kept"} <= data["stages"][0].keys()
    assert data["stages"][3]["name"] == "top_k" and data["stages"][3]["logits"][2] is None
    assert data["u"] == uniform_draw(3, 5)
    assert data["probs"] == pytest.approx([0.731059, 0.268941, 0.0], abs=1e-6)
    assert [r["id"] for r in data["ruler"]] == [0, 1]


def test_cli_flags_build_the_config():
    parser = argparse.ArgumentParser()
    cli_flags.add_sampling_flags(parser, default_mode="greedy")
    config = cli_flags.config_from_args(parser.parse_args(
        ["--top-k", "5", "--order", "llama.cpp", "--stop", "。", "--stop", "!", "--beam-width", "3"]))
    assert config == SamplingConfig(mode="greedy", top_k=5, order="llama.cpp",
                                    stop_strings=("。", "!"), num_beams=3)


def test_cli_command_has_no_traceback():
    done = subprocess.run([sys.executable, "-m", "explorer", "sample", "--logits", "2,1,0", "--min-p", "2"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip() == "token-explorer sample: error: --min-p '2' is out of range; expected a number from 0 to 1"


@pytest.mark.parametrize("family", ["flat", "very flat", "ties", "two levels", "peaked", "heavy tail"])
def test_inverse_cdf_on_a_49k_distribution_matches_a_full_ruler(family):
    # the pick is found without sorting the whole ruler; check it against the full one
    rng = np.random.default_rng(7)
    n = 49_152
    logits = {"flat": rng.normal(0.0, 0.05, n), "very flat": rng.normal(0.0, 1e-9, n),
              "ties": np.zeros(n), "two levels": np.where(rng.random(n) < 0.3, 0.0, -0.5),
              "peaked": rng.normal(0.0, 4.0, n), "heavy tail": -np.log(np.arange(1, n + 1)) * 0.7}[family]
    for step in range(20):
        dist = distribution(logits, SamplingConfig(mode="sample", seed=3), step=step)
        k = int(np.searchsorted(dist.ruler_hi, dist.u, side="right"))
        if abs(dist.ruler_hi[min(k, n - 1)] - dist.u) < 1e-12 or (k and abs(dist.ruler_hi[k - 1] - dist.u) < 1e-12):
            continue               # u on a boundary: the two sums may round differently
        assert dist.selected_id == dist.ruler_ids[k]


def test_sample_on_a_real_models_next_token(capsys, smollm2):
    from explorer.cli.main import main
    assert main(["sample", "--model", "smollm2", "--prompt", "The capital of France is",
                 "--temperature", "0.7", "--top-k", "5", "--top", "6", "--lang", "zh"]) == 0
    out = capsys.readouterr().out
    assert "' Paris'" in out and "Token片段" in out and out.count("\n7042 ") >= 1


def test_a_read_only_logits_vector_is_prepared_once_and_a_writeable_one_read_anew():
    """A slider drag reselects from a trace's (read-only) logits: the raw stage is shared
    by every Distribution made from it, and each still shows its own settings' numbers.
    A vector the caller may change is read again every time."""
    logits = np.array([1.0, 2.0, 3.0, 0.5])
    logits.flags.writeable = False
    cold = distribution(logits, SamplingConfig(mode="sample", temperature=1.0))
    warm = distribution(logits, SamplingConfig(mode="sample", temperature=2.0))
    assert warm.stages[0] is cold.stages[0]
    want = np.exp(logits / 2) / np.exp(logits / 2).sum()
    np.testing.assert_allclose(warm.probs, want, rtol=1e-12)
    assert warm.top(2, 0).tolist() == [2, 1] and warm.top(2).tolist() == [2, 1]

    mutable = np.array([1.0, 2.0, 3.0])
    assert distribution(mutable, SamplingConfig(mode="greedy")).selected_id == 2
    mutable[0] = 10.0
    assert distribution(mutable, SamplingConfig(mode="greedy")).selected_id == 0


def test_removers_of_some_ids_agree_with_removed_by():
    dist = distribution(np.array([3.0, 2.0, 1.0, 0.0, -1.0]),
                        SamplingConfig(mode="greedy", top_k=3, min_p=0.2))
    ids = np.array([4, 0, 2, 3])
    assert dist.removers(ids).tolist() == dist.removed_by[ids].tolist()
    assert dist.removers(ids).tolist()[0] == "top_k"


@pytest.mark.parametrize("mode", ["greedy", "beam"])
def test_a_mode_that_does_not_sample_shows_the_raw_distribution_whatever_the_temperature(mode):
    """Greedy and beam take the top logits as they are: the temperature stage changes nothing
    (it is shown as off), so the chart is the model's own softmax, not a tempered one."""
    logits = np.array([2.0, 1.0, 0.0])
    dist = distribution(logits, SamplingConfig(mode=mode, temperature=0.5))
    stage = next(s for s in dist.stages if s.name == "temperature")
    assert not stage.active and stage.note == "T=0.5"
    np.testing.assert_allclose(dist.probs, [0.665241, 0.244728, 0.090031], atol=1e-6)   # the course's T = 1 row
    assert dist.greedy and dist.selected_id == 0 and dist.u is None
