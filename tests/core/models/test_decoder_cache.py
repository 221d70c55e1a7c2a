"""Cached Prefill + Decode must equal a full recomputation, for any configuration."""

from dataclasses import replace

import numpy as np
from hypothesis import given, settings, strategies as st

from explorer.core.models.attention import attention_weights
from explorer.core.models.decoder import DecoderConfig, DecoderModel, fused_layer, random_params
from explorer.core.tokens.vocab import Vocabulary


@st.composite
def configs(draw):
    kv_heads = draw(st.integers(1, 3))
    heads = kv_heads * draw(st.integers(1, 3))
    head_dim = draw(st.sampled_from([2, 4, 6]))
    return DecoderConfig(
        vocab_size=draw(st.integers(2, 20)),
        d_model=draw(st.integers(2, 12)),
        n_layers=draw(st.integers(1, 3)),
        n_heads=heads, n_kv_heads=kv_heads, head_dim=head_dim,
        d_ff=draw(st.integers(1, 16)),
        ffn=draw(st.sampled_from(["tanh", "gelu", "swiglu"])),
        norm=draw(st.sampled_from(["none", "layer", "rms"])),
        positions=draw(st.sampled_from(["none", "learned", "rope"])),
        max_positions=24,
        output_bias=draw(st.booleans()),
        tied_output=draw(st.booleans()))


def make_model(config, seed, dtype=np.float64):
    params = random_params(config, np.random.default_rng(seed), dtype=dtype)
    vocab = Vocabulary(tuple(f"t{i}" for i in range(config.vocab_size)))
    return DecoderModel(config, params, vocab, dtype=dtype)


@settings(max_examples=60, deadline=None)
@given(config=configs(), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_cached_decode_equals_full_recompute(config, seed, data):
    model = make_model(config, seed)
    ids = data.draw(st.lists(st.integers(0, config.vocab_size - 1), min_size=2, max_size=20))
    split = data.draw(st.integers(1, len(ids) - 1))
    trace, cache = model.prefill(ids[:split])
    full = model.full_forward(ids[:split])
    assert np.array_equal(trace.logits, full.logits)
    for j in range(split, len(ids)):
        trace, cache = model.decode(ids[j], cache)
        assert len(cache) == j + 1
        reference = model.full_forward(ids[:j + 1])
        assert np.max(np.abs(trace.logits[-1] - reference.logits[-1])) < 1e-9
        # the decode row of the attention is the last row of the full matrix
        for lt, lr in zip(trace.layers, reference.layers):
            for head in range(config.n_heads):
                assert np.allclose(attention_weights(lt, head)[-1], attention_weights(lr, head)[-1], atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(config=configs(), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_the_recompute_checks_logits_are_the_full_forwards_last_rows(config, seed, data):
    """The check's reference keeps no trace and runs the head on the rows it compares."""
    model = make_model(config, seed)
    ids = data.draw(st.lists(st.integers(0, config.vocab_size - 1), min_size=1, max_size=20))
    last = data.draw(st.integers(1, len(ids)))
    got = model.reference_logits(ids, last)
    want = model.full_forward(ids).logits[-last:]
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_trace_shapes_for_grouped_heads():
    config = DecoderConfig(vocab_size=11, d_model=8, n_layers=2, n_heads=4, n_kv_heads=2,
                           head_dim=2, d_ff=6, positions="rope", norm="rms", ffn="swiglu")
    model = make_model(config, 1)
    trace, cache = model.prefill([1, 2, 3])
    layer = trace.layers[1]
    assert layer.q.shape == (4, 3, 2) and layer.k.shape == (2, 3, 2)
    assert layer.keys.shape == (2, 3, 2) and layer.mask.shape == (3, 3)
    assert {attention_weights(layer, head).shape for head in range(4)} == {(3, 3)}
    assert trace.logits.shape == (3, 11)
    trace, cache = model.decode(4, cache)
    assert trace.layers[0].keys.shape == (2, 4, 2)
    assert {attention_weights(trace.layers[0], head).shape for head in range(4)} == {(1, 4)}
    assert trace.key_ids.tolist() == [1, 2, 3, 4] and trace.positions.tolist() == [3]
    assert cache.ids.tolist() == [1, 2, 3, 4] and cache.positions.tolist() == [0, 1, 2, 3]
    assert cache.keys(1).shape == (2, 4, 2)


def test_a_position_adds_to_the_cache_the_bytes_the_trace_reports():
    """kv_bytes_per_position = layers x (K, V) x K/V heads x head size x item size, and the
    cache's own arrays grow by exactly that per position."""
    config = DecoderConfig(vocab_size=11, d_model=8, n_layers=3, n_heads=4, n_kv_heads=2,
                           head_dim=2, d_ff=6, positions="rope", norm="rms", ffn="swiglu")
    for dtype, item in ((np.float64, 8), (np.float32, 4)):
        model = make_model(config, 1, dtype=dtype)
        trace, cache = model.prefill([1, 2, 3])
        assert trace.kv_bytes_per_position == 3 * 2 * 2 * 2 * item
        held = sum(cache.keys(i).nbytes + cache.values(i).nbytes for i in range(cache.n_layers))
        assert held == len(cache) * trace.kv_bytes_per_position


def test_masked_future_cells_are_zero_weight_in_prefill():
    model = make_model(DecoderConfig(), 3)
    trace, _ = model.prefill([1, 2, 3])
    w = attention_weights(trace.layers[0], 0)
    assert w[0, 1] == 0 and w[0, 2] == 0 and w[1, 2] == 0
    assert not trace.layers[0].mask[0, 1]


def test_float32_model_stays_float32():
    config = DecoderConfig(vocab_size=9, d_model=8, n_heads=2, n_kv_heads=1, head_dim=4,
                           positions="rope", norm="rms", ffn="swiglu", output_bias=False)
    model = make_model(config, 2, dtype=np.float32)
    trace, cache = model.prefill([1, 2])
    trace, cache = model.decode(3, cache)
    assert trace.logits.dtype == np.float32
    assert trace.layers[0].hidden.dtype == np.float32
    assert cache.keys(0).dtype == np.float32


def test_cache_grows_past_its_first_capacity_and_copies_independently():
    model = make_model(DecoderConfig(vocab_size=5, max_positions=64), 4)
    first, cache = model.prefill([1] * 20)
    fork = cache.copy()
    second, _ = model.decode(2, cache)
    assert len(cache) == 21 and len(fork) == 20
    assert fork.ids.tolist() == [1] * 20
    # the cache holds exactly the keys and values each forward added, in order
    for layer, (a, b) in enumerate(zip(first.layers, second.layers)):
        assert np.array_equal(cache.keys(layer), np.concatenate([a.k, b.k], axis=1))   # [g, 21, e]
        assert np.array_equal(cache.values(layer), np.concatenate([a.v, b.v], axis=1))
        assert np.array_equal(fork.keys(layer), a.k) and np.array_equal(fork.values(layer), a.v)


@settings(max_examples=30, deadline=None)
@given(config=configs(), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_fused_qkv_and_gate_up_equal_the_separate_products(config, seed, data):
    plain = make_model(config, seed)
    params = replace(plain.params, layers=tuple(fused_layer(lp) for lp in plain.params.layers))
    fused = DecoderModel(config, params, plain.vocab)
    assert all(lp.wqkv is not None for lp in params.layers)
    assert all((lp.w13 is not None) == (config.ffn == "swiglu") for lp in params.layers)
    ids = data.draw(st.lists(st.integers(0, config.vocab_size - 1), min_size=2, max_size=12))
    trace, cache = fused.prefill(ids[:1])
    for j in range(1, len(ids)):
        trace, cache = fused.decode(ids[j], cache)
    reference = plain.full_forward(ids)
    assert np.max(np.abs(trace.logits[-1] - reference.logits[-1])) < 1e-9
    for lt, lr in zip(trace.layers, reference.layers):
        for name in ("q", "k", "v", "attn_out", "ffn_out", "hidden"):
            assert np.allclose(getattr(lt, name)[..., -1:, :], getattr(lr, name)[..., -1:, :], atol=1e-12)


def test_a_fused_matrix_is_dropped_when_its_blocks_are_replaced():
    config = DecoderConfig(d_model=6, n_heads=2, head_dim=3, d_ff=5, ffn="swiglu")
    lp = fused_layer(random_params(config, np.random.default_rng(0)).layers[0])
    assert lp.wqkv.shape == (6, 12) and lp.w13.shape == (6, 10)
    assert np.shares_memory(lp.wq, lp.wqkv) and np.shares_memory(lp.w3, lp.w13)
    assert replace(lp, wo=lp.wo * 2).wqkv is lp.wqkv              # other fields keep it
    stale = replace(lp, wk=lp.wk + 1.0, w1=lp.w1.copy())
    assert stale.wqkv is None and stale.w13 is None              # wq, wk, wv, w1, w3 are the truth
