"""The course's teaching model: the greedy run of 我爱, the one-off rule, the fit."""

import json

import numpy as np
import pytest

from explorer.core.decode.generate import generate
from explorer.core.models.layers import softmax
from explorer.core.decode.sampling import SamplingConfig
from explorer.core.models.teaching import (FitTargets, default_params_path, fit, load_teaching_model,
                                    write_teaching_params)


@pytest.fixture(scope="module")
def model():
    return load_teaching_model()


def test_shape_of_the_teaching_model(model):
    c = model.config
    assert (len(model.vocab), c.d_model, c.n_layers, c.n_heads) == (7, 4, 1, 1)
    assert (c.norm, c.positions, c.ffn) == ("none", "none", "tanh")
    assert model.vocab.encode("我爱") == [1, 2]
    assert [model.vocab.pieces[i] for i in (3, 5)] == ["学习", "！"]
    assert model.vocab.eos_id == 6


def test_greedy_run_of_wo_ai_selects_xuexi_exclamation_eos(model):
    run = generate(model, [1, 2], SamplingConfig(max_new_tokens=10))
    assert list(run.output_ids) == [3, 5, 6]
    assert [s.cache_len_after for s in run.steps] == [2, 3, 4]
    assert [s.cache_len_before for s in run.steps] == [0, 2, 3]
    assert [s.phase for s in run.steps] == ["prefill", "decode", "decode"]
    assert [list(s.input_ids) for s in run.steps] == [[1, 2], [3], [5]]
    assert [list(s.positions) for s in run.steps] == [[0, 1], [2], [3]]
    assert run.finish_reason == "eos"
    assert all(s.recompute_max_abs_diff < 1e-9 for s in run.steps)
    # the last selected token (EOS) is visible but was never processed
    assert len(run.visible_ids) == 5 and run.cache_len == 4
    assert run.output_text == "学习！"


def test_selected_is_not_processed_course_example(model):
    # F15: prompt [1,2,3], the given outputs are 4 then 5, max_new_tokens = 2.
    run = generate(model, [1, 2, 3], SamplingConfig(max_new_tokens=2), overrides={0: 4, 1: 5})
    assert list(run.output_ids) == [4, 5]
    assert len(run.visible_ids) == 5 and run.cache_len == 4
    assert [s.cache_len_after for s in run.steps] == [3, 4]
    assert run.finish_reason == "length" and run.incomplete
    assert [s.forced for s in run.steps] == [True, True]


def test_length_limit_on_the_model_own_choices(model):
    run = generate(model, [1, 2], SamplingConfig(max_new_tokens=2))
    assert list(run.output_ids) == [3, 5]
    assert run.finish_reason == "length"
    assert len(run.visible_ids) == 4 and run.cache_len == 3


def test_distributions_are_good_to_teach_with(model):
    for prefix in FitTargets().prefixes:
        p = np.sort(softmax(model.full_forward(prefix).last_logits))[::-1]
        assert np.all(np.diff(p) < -1e-3), "no ties"
        assert p[1] > 0.15, "the runner-up is visible"
        # top-p boundaries move: p = 0.5, 0.7, 0.9 keep different numbers of candidates
        kept = [int(np.searchsorted(np.cumsum(p), t - 1e-9) + 1) for t in (0.5, 0.7, 0.9)]
        assert len(set(kept)) >= 2


def test_sampling_at_temperature_one_sometimes_picks_another_token(model):
    firsts = {generate(model, [1, 2], SamplingConfig(mode="sample", seed=s, max_new_tokens=1),
                       check_recompute=False).output_ids[0] for s in range(40)}
    assert 3 in firsts and len(firsts) > 1


def test_fit_rebuilds_the_shipped_file_byte_for_byte(tmp_path):
    out = tmp_path / "teaching.json"
    write_teaching_params(out)
    assert out.read_bytes() == default_params_path().read_bytes()


def test_shipped_file_records_how_it_was_fitted():
    doc = json.loads(default_params_path().read_text(encoding="utf-8"))
    assert doc["fit"]["seed"] == FitTargets().seed
    assert doc["fit"]["prefixes"] == [[1, 2], [1, 2, 3], [1, 2, 3, 5]]
    assert doc["vocabulary"]["pieces"][1:4] == ["我", "爱", "学习"]


def test_fitted_probabilities_match_the_stated_targets():
    model = fit()
    for prefix, want in zip(FitTargets().prefixes, FitTargets().probs):
        assert np.allclose(softmax(model.full_forward(prefix).last_logits), want, atol=0.01)
