"""Attention records on demand: a trace keeps q and the keys, and `core.attention` gives
back any head's weights exactly as the forward computed them."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from explorer.core import layers as L
from explorer.core.attention import attention_scores, attention_weights
from explorer.core.decoder import DecoderConfig, DecoderModel, fused_layer, random_params
from explorer.core.teaching import load_teaching_model
from explorer.core.vocab import Vocabulary

LLAMA = DecoderConfig(vocab_size=13, d_model=16, n_layers=2, n_heads=6, n_kv_heads=2, head_dim=4,
                      d_ff=12, ffn="swiglu", norm="rms", positions="rope", output_bias=False,
                      tied_output=True)
GEMMA = DecoderConfig(vocab_size=13, d_model=16, n_layers=2, n_heads=4, n_kv_heads=1, head_dim=4,
                      d_ff=12, ffn="geglu", norm="rms", positions="rope", output_bias=False,
                      tied_output=True, embed_scale=4.0, rope_pairs="halves", windows=(3, 0),
                      local_rope_base=10.0)


def random_model(config: DecoderConfig, seed: int = 0) -> DecoderModel:
    """float32 with fused Q|K|V products, as a GGUF file's model runs."""
    params = random_params(config, np.random.default_rng(seed), dtype=np.float32)
    params = replace(params, layers=tuple(fused_layer(lp) for lp in params.layers))
    return DecoderModel(config, params, Vocabulary(tuple(f"t{i}" for i in range(config.vocab_size))),
                        dtype=np.float32)


MODELS = {"teaching": lambda: (load_teaching_model(), [1, 2, 3]),
          "llama": lambda: (random_model(LLAMA), [1, 5, 7, 2, 9, 4]),
          "gemma": lambda: (random_model(GEMMA, 1), [3, 1, 4, 1, 5, 9]),
          # a Prefill longer than L.FEW_QUERIES computes its K/V heads one at a time
          "llama, long prompt": lambda: (random_model(LLAMA), [(7 * i) % 13 for i in range(L.FEW_QUERIES + 4)])}


def forward_weights(monkeypatch, run) -> list[np.ndarray]:
    """Every [m, n, t] group of weights (the query heads of one K/V head) the forward
    passes in `run()` computed, in order."""
    seen = []

    def spy(q, k, mask, *product):            # product: the forward's `dot`, if it gives one
        weights = group_weights(q, k, mask, *product)
        seen.extend(weights.copy())            # [b, m, n, t]: b K/V heads computed together
        return weights

    group_weights = L.group_weights
    monkeypatch.setattr(L, "group_weights", spy)
    traces = run()
    monkeypatch.setattr(L, "group_weights", group_weights)
    return traces, seen


@pytest.mark.parametrize("name", list(MODELS))
def test_a_heads_weights_are_the_forwards_bit_for_bit(monkeypatch, name):
    """Prefill and two Decode steps; every layer's every head recomputed from its trace
    equals the weights the forward multiplied the values by."""
    model, ids = MODELS[name]()

    def run():
        trace, cache = model.prefill(ids[:-2])
        traces = [trace]
        for token in ids[-2:]:
            trace, cache = model.decode(token, cache)
            traces.append(trace)
        return traces

    traces, seen = forward_weights(monkeypatch, run)
    c = model.config
    per_group = c.n_heads // c.n_kv_heads
    groups = iter(seen)
    for trace in traces:
        for lt in trace.layers:
            for group in range(c.n_kv_heads):
                used = next(groups)                                  # [m, n, t]
                for i in range(per_group):
                    np.testing.assert_array_equal(attention_weights(lt, group * per_group + i), used[i])
    assert next(groups, None) is None


@pytest.mark.parametrize("name", list(MODELS))
def test_weights_are_a_masked_softmax_of_the_scaled_scores(name):
    """Against a plain numpy reference: q.k / sqrt(e), the mask (causal, and the window of
    a local layer), a softmax; masked cells exactly 0."""
    model, ids = MODELS[name]()
    trace = model.full_forward(ids)
    e = model.config.head_dim
    per_group = model.config.n_heads // model.config.n_kv_heads
    for lt in trace.layers:
        for head in range(model.config.n_heads):
            s = lt.q[head] @ lt.keys[head // per_group].T / np.sqrt(e)      # [n, t]
            w = np.exp(np.where(lt.mask, s, -np.inf) - s.max(axis=1, keepdims=True))
            w /= w.sum(axis=1, keepdims=True)
            tol = 1e-12 if lt.q.dtype == np.float64 else 1e-5
            np.testing.assert_allclose(attention_scores(lt, head), s, rtol=0, atol=tol * 10)
            weights = attention_weights(lt, head)
            np.testing.assert_allclose(weights, w, rtol=0, atol=tol)
            assert (weights[~lt.mask] == 0).all()
    local = trace.layers[0]
    if local.window:                          # Gemma's local layer: query 5 reads 3..5 only
        assert local.mask[5].tolist() == [False, False, False, True, True, True]


def test_the_weights_rebuild_the_layers_attention_output():
    """Each head's weights times its K/V head's values, through the output projection, is
    the attention output the layer added to its residual stream."""
    model, ids = MODELS["llama"]()
    trace, _ = model.prefill(ids)
    per_group = LLAMA.n_heads // LLAMA.n_kv_heads
    for lt, lp in zip(trace.layers, model.params.layers):
        values = lt.v                                                      # [g, n, e]: a Prefill's keys are all new
        heads = np.stack([attention_weights(lt, h) @ values[h // per_group] for h in range(LLAMA.n_heads)])
        np.testing.assert_allclose(L.merge_heads(heads) @ lp.wo, lt.attn_out, rtol=0, atol=1e-5)


def test_a_head_outside_the_layer_is_refused():
    model, ids = MODELS["llama"]()
    lt = model.full_forward(ids).layers[0]
    with pytest.raises(IndexError, match="head 6: this layer has query heads 0..5"):
        attention_weights(lt, 6)


def test_kept_rows_keeps_the_last_positions_logits_and_stream_and_every_query():
    """A real model keeps the last position's logits and residual stream; its queries and
    keys stay whole, so every head's weights are still there for every position."""
    whole, ids = MODELS["llama"]()
    last = DecoderModel(replace(LLAMA, kept_rows=1), whole.params, whole.vocab, dtype=np.float32)
    a, b = whole.full_forward(ids), last.full_forward(ids)
    n, d = len(ids), LLAMA.d_model
    assert b.logits.shape == (1, LLAMA.vocab_size) and b.final_hidden.shape == b.embeddings.shape == (1, d)
    np.testing.assert_allclose(b.logits, a.logits[-1:], rtol=0, atol=1e-5)   # one row through the head
    for la, lb in zip(a.layers, b.layers):
        assert lb.x_in.shape == lb.attn_out.shape == lb.ffn_out.shape == lb.hidden.shape == (1, d)
        np.testing.assert_array_equal(lb.hidden, la.hidden[-1:])
        assert lb.q.shape == (LLAMA.n_heads, n, LLAMA.head_dim)
        np.testing.assert_array_equal(attention_weights(lb, 5), attention_weights(la, 5))
