"""Building blocks against hand-computed values from the course."""

import numpy as np

from explorer.core.models import layers as L


def test_softmax_of_course_logits():
    assert np.allclose(L.softmax(np.array([2.0, 1.0, 0.0])), [0.6652, 0.2447, 0.0900], atol=1e-4)


def test_softmax_all_masked_row_gives_zeros_not_nan():
    out = L.softmax(np.array([[-np.inf, -np.inf], [0.0, -np.inf]]))
    assert out.tolist() == [[0.0, 0.0], [1.0, 0.0]]


def test_softmax_into_its_own_input_equals_the_plain_one_and_leaves_other_inputs_alone():
    x = np.array([[3.0, -1.0, -np.inf], [-np.inf, -np.inf, -np.inf]], dtype=np.float32)
    plain = L.softmax(x)
    assert x[0].tolist() == [3.0, -1.0, -np.inf]                  # the plain call copies
    same = L.softmax(x, out=x)
    assert same is x and plain.dtype == np.float32
    np.testing.assert_array_equal(same, plain)


def test_causal_mask_lets_a_query_see_itself_and_the_past():
    mask = L.causal_mask([2, 3], [0, 1, 2, 3])
    assert mask.tolist() == [[True, True, True, False], [True, True, True, True]]


def test_a_sliding_window_mask_keeps_only_the_latest_positions():
    # window 3: query 5 reads 3, 4, 5 (llama.cpp masks a key when query - key >= window)
    mask = L.causal_mask([4, 5], [0, 1, 2, 3, 4, 5], window=3)
    assert mask.tolist() == [[False, False, True, True, True, False],
                             [False, False, False, True, True, True]]
    assert (L.causal_mask([5], range(6), window=0) == L.causal_mask([5], range(6))).all()


def test_attention_masked_weights_are_exactly_zero_and_rows_sum_to_one():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(2, 3, 4)), rng.normal(size=(1, 3, 4)), rng.normal(size=(1, 3, 4))
    mask = L.causal_mask([0, 1, 2], [0, 1, 2])
    weights, out = L.group_weights(q[None], k, mask)[0], L.attention(q, k, v, mask)   # [2, 3, 3], [2, 3, 4]
    assert weights[:, 0, 1:].tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert np.allclose(weights.sum(-1), 1)
    # the first query can only read the first value
    assert np.allclose(out[:, 0], v[0, 0])


def test_rope_rotates_adjacent_pairs_and_keeps_norms():
    x = np.array([[1.0, 0.0, 0.0, 1.0]])               # [1 position, 1 head of e=4]
    out = L.rope(x, L.rope_tables([1], 4, base=10000.0))
    # pair 0 turns by 1 radian, pair 1 by 1/100 radian
    assert np.allclose(out[0, :2], [np.cos(1), np.sin(1)])
    assert np.allclose(out[0, 2:], [-np.sin(0.01), np.cos(0.01)])
    assert np.isclose(np.linalg.norm(out), np.linalg.norm(x))


def test_rope_turns_every_head_of_every_position_alike():
    rng = np.random.default_rng(2)
    n, heads, e = 3, 4, 6
    x = rng.normal(size=(n, heads * e)).astype(np.float32)            # [n, heads*e]
    tables = L.rope_tables([5, 6, 9], e, base=100.0, dtype=np.float32)  # [n, e/2]
    out = L.rope(x, tables)
    assert out.dtype == np.float32 and out.shape == x.shape
    angles = np.array([5, 6, 9])[:, None] * 100.0 ** (-np.arange(0, e, 2) / e)   # [n, e/2]
    for head in range(heads):
        a, b = x[:, head * e:(head + 1) * e:2], x[:, head * e + 1:(head + 1) * e:2]
        expected_even = a * np.cos(angles) - b * np.sin(angles)
        expected_odd = a * np.sin(angles) + b * np.cos(angles)
        assert np.allclose(out[:, head * e:(head + 1) * e:2], expected_even, atol=1e-5)
        assert np.allclose(out[:, head * e + 1:(head + 1) * e:2], expected_odd, atol=1e-5)
    # a strided slice (Q and K of a fused product) turns like its contiguous copy
    wide = np.concatenate([x, rng.normal(size=(n, 5)).astype(np.float32)], axis=1)
    assert np.array_equal(L.rope(wide[:, :heads * e], tables), out)


def test_norms():
    x = np.array([[1.0, 2.0, 3.0, 4.0]])
    ln = L.layer_norm(x, np.ones(4), np.zeros(4), eps=0.0)
    assert np.allclose(ln.mean(), 0) and np.allclose(ln.std(), 1)
    rms = L.rms_norm(x, np.ones(4), eps=0.0)
    assert np.allclose(np.sqrt((rms ** 2).mean()), 1)


def test_grouped_attention_equals_a_per_head_reference():
    rng = np.random.default_rng(1)
    h, g, n, t, e = 6, 2, 3, 5, 4
    q, k, v = rng.normal(size=(h, n, e)), rng.normal(size=(g, t, e)), rng.normal(size=(g, t, e))
    mask = L.causal_mask([2, 3, 4], list(range(t)))
    out = L.attention(q, k, v, mask)
    for head in range(h):
        kv = head // (h // g)                                  # query head -> its K/V head
        s = q[head] @ k[kv].T / np.sqrt(e)
        w = np.exp(np.where(mask, s, -np.inf) - s.max(axis=1, keepdims=True))
        w /= w.sum(axis=1, keepdims=True)
        group = L.grouped_queries(q, slice(kv, kv + 1), g)   # [1, h/g, n, e] the heads reading kv
        i = head % (h // g)
        assert np.allclose(L.group_scores(group, k[kv:kv + 1])[0, i], s)
        assert np.allclose(L.group_weights(group, k[kv:kv + 1], mask)[0, i], w)
        assert np.allclose(out[head], w @ v[kv])


def test_rope_halves_turns_the_pairs_i_and_i_plus_half_as_rope_turns_adjacent_ones():
    """NeoX's layout (Gemma's): pair (x[i], x[i + e/2]) turns by the angle of pair i. Moving
    each second half next to its first half (interleaving) gives llama's layout, and `rope`
    on that is the same rotation."""
    rng = np.random.default_rng(4)
    n, heads, e = 3, 2, 8
    x = rng.normal(size=(n, heads * e)).astype(np.float32)             # [n, heads*e]
    tables = L.rope_tables([0, 7, 600], e, base=10000.0, dtype=np.float32)
    out = L.rope_halves(x, tables)
    assert out.dtype == np.float32 and out.shape == x.shape
    interleave = np.arange(heads * e).reshape(heads, 2, e // 2).transpose(0, 2, 1).reshape(-1)
    np.testing.assert_allclose(out[:, interleave], L.rope(x[:, interleave], tables), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(out[0], x[0])                        # position 0: no turn
    # a head's first dimension and its dimension e/2 turn by position * 1 radian
    a, b = x[1, 0], x[1, e // 2]
    np.testing.assert_allclose([out[1, 0], out[1, e // 2]],
                               [a * np.cos(7) - b * np.sin(7), a * np.sin(7) + b * np.cos(7)], atol=1e-5)
