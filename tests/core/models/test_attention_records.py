"""Attention records on demand: a trace keeps q and the keys, and `core.attention` gives
back any head's weights exactly as the forward computed them, in float arithmetic and in
llama.cpp's (its products and softmax, whose weights are taken from its own softmax here)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from explorer.core.gguf import ggml_arithmetic
from explorer.core.models import layers as L
from explorer.core.models.arithmetic import FLOAT_ATTENTION
from explorer.core.models.attention import attention_scores, attention_weights
from explorer.core.models.decoder import DecoderConfig, DecoderModel, fused_layer, random_params
from explorer.core.decode.generate import generate
from explorer.core.gguf.llama import arithmetic_named, with_arithmetic
from explorer.core.decode.sampling import SamplingConfig
from explorer.core.models.teaching import load_teaching_model
from explorer.core.tokens.vocab import Vocabulary
from explorer.export.handouts import run_json

LLAMA = DecoderConfig(vocab_size=13, d_model=16, n_layers=2, n_heads=6, n_kv_heads=2, head_dim=4,
                      d_ff=12, ffn="swiglu", norm="rms", positions="rope", output_bias=False,
                      tied_output=True)
GEMMA = DecoderConfig(vocab_size=13, d_model=16, n_layers=2, n_heads=4, n_kv_heads=1, head_dim=4,
                      d_ff=12, ffn="geglu", norm="rms", positions="rope", output_bias=False,
                      tied_output=True, embed_scale=4.0, rope_pairs="halves", windows=(3, 0),
                      local_rope_base=10.0)


def random_model(config: DecoderConfig, seed: int = 0, arithmetic: str = "float") -> DecoderModel:
    """float32 with fused Q|K|V products, as a GGUF file's model runs."""
    params = random_params(config, np.random.default_rng(seed), dtype=np.float32)
    params = replace(params, layers=tuple(fused_layer(lp) for lp in params.layers))
    return DecoderModel(config, params, Vocabulary(tuple(f"t{i}" for i in range(config.vocab_size))),
                        dtype=np.float32, arithmetic=arithmetic_named(arithmetic))


MODELS = {"teaching": lambda: (load_teaching_model(), [1, 2, 3]),
          "llama": lambda: (random_model(LLAMA), [1, 5, 7, 2, 9, 4]),
          "gemma": lambda: (random_model(GEMMA, 1), [3, 1, 4, 1, 5, 9]),
          # a Prefill longer than L.FEW_QUERIES computes its K/V heads one at a time
          "llama, long prompt": lambda: (random_model(LLAMA), [(7 * i) % 13 for i in range(L.FEW_QUERIES + 4)])}


def forward_weights(monkeypatch, run):
    """The traces of the forward passes in `run()`, and every [m, n, t] group of weights
    (the query heads of one K/V head) they computed, in order."""
    seen = []

    def spy(q, k, mask, *arithmetic):         # the forward's AttentionArithmetic, if it gives one
        weights = group_weights(q, k, mask, *arithmetic)
        seen.extend(weights.copy())            # [b, m, n, t]: b K/V heads computed together
        return weights

    group_weights = L.group_weights
    monkeypatch.setattr(L, "group_weights", spy)
    traces = run()
    monkeypatch.setattr(L, "group_weights", group_weights)
    return traces, seen


def forward_softmaxes(monkeypatch, run):
    """The traces of the forward passes in `run()` (in llama.cpp's arithmetic), and what
    llama.cpp's softmax received and gave in them: per K/V head, in order, the [m, n, t]
    scores (masked cells -inf) and weights of its query heads."""
    scores, weights = [], []

    def spy(x):                                # [b, m, n, t]: b K/V heads computed together
        scores.extend(x.copy())
        out = softmax_ggml(x)
        weights.extend(out.copy())
        return out

    softmax_ggml = ggml_arithmetic.softmax_ggml
    monkeypatch.setattr(ggml_arithmetic, "softmax_ggml", spy)
    traces = run()
    monkeypatch.setattr(ggml_arithmetic, "softmax_ggml", softmax_ggml)
    return traces, list(scores), list(weights)   # copies: the traces keep the spy, which a recompute calls


def prefill_and_decode(model, ids, steps: int = 2):
    """A function running a Prefill of all but the last `steps` ids, then a Decode step
    for each of those; it returns their traces."""
    def run():
        trace, cache = model.prefill(ids[:-steps])
        traces = [trace]
        for token in ids[-steps:]:
            trace, cache = model.decode(token, cache)
            traces.append(trace)
        return traces
    return run


def assert_every_head(traces, used, config, recompute=attention_weights):
    """`recompute(lt, head)` of every head of every layer of `traces` equals, bit for bit,
    the forward's `used` [m, n, t] blocks (one per K/V head, in the order computed)."""
    per_group = config.n_heads // config.n_kv_heads
    groups = iter(used)
    for trace in traces:
        for lt in trace.layers:
            for group in range(config.n_kv_heads):
                block = next(groups)                                 # [m, n, t]
                for i in range(per_group):
                    np.testing.assert_array_equal(recompute(lt, group * per_group + i), block[i])
    assert next(groups, None) is None


def masked_scores(lt, head):  # -> [n, t] the scores as the softmax reads them: -inf where masked
    return np.where(lt.mask, attention_scores(lt, head), -np.inf)


@pytest.mark.parametrize("name", list(MODELS))
def test_a_heads_weights_are_the_forwards_bit_for_bit(monkeypatch, name):
    """Prefill and two Decode steps; every layer's every head recomputed from its trace
    equals the weights the forward multiplied the values by."""
    model, ids = MODELS[name]()
    traces, seen = forward_weights(monkeypatch, prefill_and_decode(model, ids))
    assert_every_head(traces, seen, model.config)


LLAMA_CPP_MODELS = {
    "llama": lambda: (random_model(LLAMA, arithmetic="llama.cpp"), [1, 5, 7, 2, 9, 4]),
    "gemma": lambda: (random_model(GEMMA, 1, "llama.cpp"), [3, 1, 4, 1, 5, 9]),
    "llama, long prompt": lambda: (random_model(LLAMA, arithmetic="llama.cpp"),
                                   [(7 * i) % 13 for i in range(L.FEW_QUERIES + 4)]),
    # 513 new tokens: llama.cpp multiplies 512 and then the last one alone, whose products
    # it sums in another order (which shows from a head size of 16 up)
    "gemma, 513 tokens": lambda: (random_model(replace(GEMMA, head_dim=64), 1, "llama.cpp"),
                                  [(5 * i) % 13 for i in range(515)])}


@pytest.mark.parametrize("name", list(LLAMA_CPP_MODELS))
def test_in_llama_cpps_arithmetic_a_heads_weights_and_scores_are_its_softmaxs(monkeypatch, name):
    """In llama.cpp's arithmetic a head recomputed from its trace gives the weights
    llama.cpp's softmax gave in the forward, every bit, and the scores it read: Prefill
    (many queries, all K/V heads together or one at a time), Decode (one query),
    sliding-window layers."""
    model, ids = LLAMA_CPP_MODELS[name]()
    traces, scores, weights = forward_softmaxes(monkeypatch, prefill_and_decode(model, ids))
    assert_every_head(traces, weights, model.config)
    assert_every_head(traces, scores, model.config, masked_scores)


def narrow_window(model, window: int):
    """Gemma with its local layers reading only the latest `window` positions (its own
    weights): a short prompt then meets the sliding window."""
    c = model.config
    return replace(model, config=replace(c, windows=tuple(window if w else 0 for w in c.windows)))


TEXT = "我爱北京天安门。The quick brown fox jumps over the lazy dog, and then it sleeps."


@pytest.mark.parametrize("name", ["gemma3", "smollm2"])
def test_in_llama_cpps_arithmetic_a_real_models_heads_are_the_forwards(request, monkeypatch, name):
    """Gemma 3 (its queries scaled by 1/16 before float16; local layers with a window of 8
    here, so that 21 positions meet it) and SmolLM2 (3 K/V heads, one at a time in a
    Prefill of 20) in llama.cpp's arithmetic: a Prefill and a Decode step; every head's
    weights and scores are the forward's own. The float functions would give others."""
    model = with_arithmetic(request.getfixturevalue(name), "llama.cpp")
    if name == "gemma3":
        model = narrow_window(model, 8)
    ids = model.vocab.encode(TEXT)[:21]
    assert len(ids) == 21
    traces, scores, weights = forward_softmaxes(monkeypatch, prefill_and_decode(model, ids, steps=1))
    assert_every_head(traces, weights, model.config)
    assert_every_head(traces, scores, model.config, masked_scores)
    decode = traces[-1].layers[0]
    assert decode.mask.sum() == (8 if name == "gemma3" else 21)
    as_float = replace(decode, arithmetic=FLOAT_ATTENTION)
    assert not np.array_equal(attention_weights(as_float, 0), attention_weights(decode, 0))


def test_a_handout_in_llama_cpps_arithmetic_prints_the_weights_its_softmax_gave(monkeypatch, gemma3):
    """`export --arithmetic llama.cpp --intermediates`: the JSON handout's scores and
    weights of every head, Prefill of 我爱 and the Decode step after it, are the ones
    llama.cpp's softmax read and gave in the run (Gemma: one softmax per layer)."""
    model = with_arithmetic(gemma3, "llama.cpp")
    run, scores, weights = forward_softmaxes(monkeypatch, lambda: generate(
        model, [2, 237169, 238587], SamplingConfig(temperature=0, max_new_tokens=2), check_recompute=False))
    layers = [layer for step in run_json(run, model.vocab, intermediates=True)["steps"]
              for layer in step["forward"]["layers"]]
    assert len(layers) == len(weights) == len(scores) == 2 * 18
    for layer, used, read in zip(layers, weights, scores):
        np.testing.assert_array_equal(np.array(layer["weights"], np.float32), used)         # [h, n, t]
        printed = np.array(layer["scores"], np.float32)
        mask = np.array(layer["mask"])
        np.testing.assert_array_equal(np.where(mask, printed, -np.inf), read)


@pytest.mark.parametrize("name", ["gemma3", "smollm2"])
def test_in_float_arithmetic_a_real_models_heads_are_the_forwards(request, monkeypatch, name):
    """The default arithmetic: the same check on the real models, against the weights the
    forward's own attention computed."""
    model = request.getfixturevalue(name)
    if name == "gemma3":
        model = narrow_window(model, 8)
    ids = model.vocab.encode(TEXT)[:21]
    traces, seen = forward_weights(monkeypatch, prefill_and_decode(model, ids, steps=1))
    assert {lt.arithmetic for trace in traces for lt in trace.layers} == {FLOAT_ATTENTION}
    assert_every_head(traces, seen, model.config)


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
