"""Rerunning with an earlier Run reuses its forward passes and gives the same Run."""

import numpy as np
from hypothesis import given, settings, strategies as st

from explorer.core.models.decoder import DecoderConfig, DecoderModel, random_params
from explorer.core.decode.generate import generate
from explorer.core.decode.sampling import SamplingConfig
from explorer.core.models.teaching import load_teaching_model
from explorer.core.tokens.vocab import Vocabulary

TEACHING = load_teaching_model()
GQA_CONFIG = DecoderConfig(vocab_size=9, d_model=8, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=2,
                           positions="rope", norm="rms", ffn="swiglu", output_bias=False)
GQA = DecoderModel(GQA_CONFIG, random_params(GQA_CONFIG, np.random.default_rng(5), scale=2.0),
                   Vocabulary(tuple(f"t{i}" for i in range(9))))

configs = st.builds(SamplingConfig, mode=st.just("sample"),
                    temperature=st.floats(0, 3), top_k=st.integers(0, 8), top_p=st.floats(0.05, 1),
                    seed=st.integers(0, 50), max_new_tokens=st.integers(1, 8))


class Counting:
    """Counts forward passes of a wrapped model."""

    def __init__(self, model):
        self.model, self.calls = model, 0
        self.vocab, self.name = model.vocab, model.name

    def new_cache(self):
        return self.model.new_cache()

    def prefill(self, ids):
        self.calls += 1
        return self.model.prefill(ids)

    def decode(self, token_id, cache):
        self.calls += 1
        return self.model.decode(token_id, cache)

    def full_forward(self, ids):
        return self.model.full_forward(ids)

    def reference_logits(self, ids, last):
        return self.model.reference_logits(ids, last)


def same_run(a, b):
    assert a.output_ids == b.output_ids and a.finish_reason == b.finish_reason
    for x, y in zip(a.steps, b.steps):
        assert (x.input_ids, x.positions, x.cache_len_before, x.cache_len_after) == \
               (y.input_ids, y.positions, y.cache_len_before, y.cache_len_after)
        assert np.array_equal(x.trace.logits, y.trace.logits)
        assert np.array_equal(x.distribution.probs, y.distribution.probs)
        assert x.recompute_max_abs_diff == y.recompute_max_abs_diff


@settings(max_examples=60, deadline=None)
@given(first=configs, second=configs, model=st.sampled_from([TEACHING, GQA]),
       prompt=st.lists(st.integers(1, 5), min_size=1, max_size=4))
def test_rerun_with_reuse_equals_a_fresh_run(first, second, model, prompt):
    earlier = generate(model, prompt, first)
    fresh = generate(model, prompt, second)
    reused = generate(model, prompt, second, reuse=earlier)
    same_run(fresh, reused)


def test_a_temperature_change_recomputes_no_forward_it_can_reuse():
    model = Counting(TEACHING)
    earlier = generate(model, [1, 2], SamplingConfig(max_new_tokens=8))
    model.calls = 0
    generate(model, [1, 2], SamplingConfig(temperature=0.5, max_new_tokens=8), reuse=earlier)
    assert model.calls == 0                       # greedy picks the same tokens: nothing to recompute
    forced = generate(model, [1, 2], SamplingConfig(max_new_tokens=8), overrides={1: 4}, reuse=earlier)
    assert forced.output_ids[:2] == (3, 4)
    assert model.calls == len(forced.steps) - 2   # prefill and decode 1 were reused


def test_a_reused_step_keeps_its_recompute_check_and_a_new_unchecked_one_has_none():
    """A free run on a real model skips the check; the steps it takes over from a checked run
    (the same tokens, the same forward pass) still cite the difference that was measured."""
    earlier = generate(TEACHING, [1, 2], SamplingConfig(max_new_tokens=8))
    assert all(s.recompute_max_abs_diff is not None for s in earlier.steps)
    forced = generate(TEACHING, [1, 2], SamplingConfig(max_new_tokens=8), overrides={1: 4}, reuse=earlier,
                      check_recompute=False)
    assert [s.recompute_max_abs_diff for s in forced.steps[:2]] == [s.recompute_max_abs_diff
                                                                     for s in earlier.steps[:2]]
    assert all(s.recompute_max_abs_diff is None for s in forced.steps[2:])
