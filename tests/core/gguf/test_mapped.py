"""Matrices read in place from the mapped file when asked (`blocks.MappedMatrix`: Q8_0,
Q5_0, Q4_K, Q6_K): the same values and products as the rewritten rows, stacks of tensors
without a copy, and a loaded model whose matrices are views of the file."""

import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q

from explorer.core.gguf import int8_products
from explorer.core.gguf.blocks import _LAUNCH, MAPPED_TYPES, BlockMatrix, MappedMatrix, stored_matrix, stored_rows
from explorer.core.models.decoder import LayerParams
from test_quantized import check_product, random_blocks

MAPPED = (Q.Q8_0, Q.Q5_0, Q.Q4_K, Q.Q6_K)


def test_the_mapped_types_are_the_ones_with_loops_of_their_own():
    from explorer.core.gguf.mapped_kernels import LOOPS
    assert set(MAPPED_TYPES) == set(LOOPS) == {k.name for k in MAPPED}


@pytest.mark.parametrize("kind", MAPPED, ids=lambda k: k.name)
def test_a_mapped_matrix_holds_the_files_bytes_and_reads_its_values_bit_for_bit(kind):
    rng = np.random.default_rng(int(kind))
    cols = 512 if kind in (Q.Q4_K, Q.Q6_K) else 96
    raw, want = random_blocks(rng, 37, cols, kind)         # 37 rows: a short last group of 4
    m, rewritten = stored_matrix(raw, kind, (37, cols), in_place=True), BlockMatrix.from_gguf(raw, kind, (37, cols))
    assert isinstance(m, MappedMatrix) and m.shape == (37, cols) and m.kind == rewritten.kind
    assert np.shares_memory(m.parts[0], raw) and m.nbytes == raw.nbytes     # not copied
    np.testing.assert_array_equal(m.dense(), want)
    np.testing.assert_array_equal(m[[0, 36, 5, 5]], want[[0, 36, 5, 5]])   # the embedding lookup
    x = rng.standard_normal((5, cols)).astype(np.float32)
    np.testing.assert_array_equal(x @ m.T, x @ rewritten.T)   # a Prefill: the same sums, bit for bit
    check_product(rng, m, want, 1)                            # a Decode step: its own order
    check_product(rng, m, want, 3)
    for column in (50, cols - 1):                            # a decode step's loop: one column
        one = np.zeros((1, cols), np.float32)
        one[0, column] = 1
        np.testing.assert_array_equal((one @ m.T)[0], want[:, column])


@pytest.mark.parametrize("kind", MAPPED, ids=lambda k: k.name)
def test_llama_cpps_products_read_the_rows_rewritten_once(kind):
    rng = np.random.default_rng(3)
    raw, _ = random_blocks(rng, 12, 256, kind)
    m, rewritten = stored_matrix(raw, kind, (12, 256), in_place=True), BlockMatrix.from_gguf(raw, kind, (12, 256))
    x = rng.standard_normal((4, 256)).astype(np.float32)
    np.testing.assert_array_equal(int8_products.times_rows(m, x, _LAUNCH), int8_products.times_rows(rewritten, x, _LAUNCH))
    assert m.q is m.q                                          # made once


@pytest.mark.parametrize("kind", MAPPED, ids=lambda k: k.name)
def test_a_nan_scale_shows_as_nan_in_its_block(kind):
    raw, _ = random_blocks(np.random.default_rng(7), 2, 512, kind, bad_scale=np.nan)
    m = stored_matrix(raw, kind, (2, 512), in_place=True)
    block = 256 if kind in (Q.Q4_K, Q.Q6_K) else 32
    assert np.isnan(m.dense()[0, :block]).all() and np.isfinite(m.dense()[0, block:]).all()
    for n in (1, 2):
        out = np.ones((n, 512), np.float32) @ m.T
        assert np.isnan(out[:, 0]).all() and np.isfinite(out[:, 1]).all()


def test_tensors_of_one_type_stack_without_a_copy_and_a_layer_keeps_them_fused():
    rng = np.random.default_rng(5)
    tensors = [(random_blocks(rng, rows, 64, Q.Q8_0)[0], Q.Q8_0, (rows, 64)) for rows in (16, 8, 8)]
    whole, parts = stored_rows(tensors, in_place=True), [stored_matrix(*t, in_place=True) for t in tensors]
    assert isinstance(whole, MappedMatrix) and len(whole.parts) == 3 and whole.shape == (32, 64)
    assert all(np.shares_memory(p, raw) for p, (raw, _, _) in zip(whole.parts, tensors))
    np.testing.assert_array_equal(whole.dense(), np.concatenate([p.dense() for p in parts]))
    np.testing.assert_array_equal(whole[[31, 0, 20]], np.concatenate([p.dense() for p in parts])[[31, 0, 20]])
    for n in (1, 3):
        x = rng.standard_normal((n, 64)).astype(np.float32)
        np.testing.assert_array_equal(x @ whole.T, np.concatenate([x @ p.T for p in parts], axis=1))
    views = [whole.row_block(0, 16), whole.row_block(16, 24), whole.row_block(24, 32)]
    assert all(len(v.parts) == 1 for v in views) and whole.row_block(10, 20).shape == (10, 64)
    np.testing.assert_array_equal(whole.row_block(10, 20).dense(), whole.dense()[10:20])
    np.testing.assert_array_equal(whole.rewritten.q, np.concatenate([p.q for p in parts]))
    wo, w1, w2 = (stored_matrix(random_blocks(rng, *shape, Q.Q8_0)[0], Q.Q8_0, shape, in_place=True).T
                  for shape in ((64, 32), (32, 64), (64, 32)))
    layer = LayerParams(wq=views[0].T, wk=views[1].T, wv=views[2].T, wo=wo, w1=w1, w2=w2, wqkv=whole.T)
    assert layer.wqkv is not None                     # the views are recognised as its blocks
    elsewhere = stored_matrix(tensors[0][0].copy(), Q.Q8_0, (16, 64), in_place=True)   # the same values, other bytes
    other = LayerParams(wq=elsewhere.T, wk=views[1].T, wv=views[2].T, wo=wo, w1=w1, w2=w2, wqkv=whole.T)
    assert other.wqkv is None                         # a replaced block: the parts are the truth


def test_tensors_of_other_types_are_rewritten_when_stacked():
    rng = np.random.default_rng(6)
    tensors = [(random_blocks(rng, 4, 64, kind)[0], kind, (4, 64)) for kind in (Q.Q8_0, Q.Q5_0)]
    whole = stored_rows(tensors, in_place=True)
    assert type(whole) is BlockMatrix and type(stored_rows(tensors[:1])) is BlockMatrix   # (not asked: rewritten)
    np.testing.assert_array_equal(whole.dense(), np.concatenate([stored_matrix(*t, in_place=True).dense() for t in tensors]))


def test_gemma3_read_in_place_computes_what_its_rewritten_rows_compute(gemma3):
    """The real Gemma 3 270M (Q8_0, Q5_0, Q4_K and Q6_K tensors) loaded with `in_place`:
    every matrix a view of the file; its Prefill and Decode logits equal the rewritten
    model's within float32 rounding (each product is, row by row: the tests above)."""
    from explorer.catalog import registry as model_registry
    from explorer.core.gguf.llama import _matrices, load_llama
    mapped = load_llama(model_registry.installed_path("gemma3-270m"), in_place=True)
    matrices = _matrices(mapped.params)
    assert all(isinstance(m, MappedMatrix) for m in matrices)
    assert {m.qtype.name for m in matrices} == {"Q8_0", "Q5_0", "Q4_K", "Q6_K"}
    # 285 MB of the file's blocks instead of 370 MB of rewritten rows (most of it the Q8_0 embedding)
    assert sum(m.nbytes for m in matrices) < 0.8 * sum(m.nbytes for m in _matrices(gemma3.params))
    ids = gemma3.vocab.encode("我爱学习，因为")
    want, _ = gemma3.prefill(ids)
    got, cache = mapped.prefill(ids[:-2])
    close = dict(rtol=0, atol=1e-5 * np.abs(want.logits).max())
    np.testing.assert_allclose(mapped.prefill(ids)[0].logits, want.logits, **close)
    for t in ids[-2:]:
        got, cache = mapped.decode(t, cache)
    np.testing.assert_allclose(got.logits, want.logits, **close)
    assert int(np.argmax(got.logits)) == int(np.argmax(want.logits))
