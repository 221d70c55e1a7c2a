"""Matrices kept in GGUF blocks: exact unpacking, products against float64 references,
views of stacked matrices, and launches from two threads at once."""

import threading

import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q
from gguf import quants
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.core.models.decoder import LayerParams
from explorer.core.gguf.reader import dequantize
from explorer.core.gguf.blocks import BlockMatrix, nibble_order
from explorer.core.gguf.quant_types import TYPES

KINDS = (Q.Q4_0, Q.Q4_1, Q.Q5_1, Q.Q8_0)     # the `gguf` package quantises these
# the others, built from random bytes: a Q4_K_M file's (Gemma 3's), and the rest of Q2_K's,
# Q3_K_S/M/L's and Q5_K_M's
K_QUANTS = (Q.Q5_0, Q.Q4_K, Q.Q6_K, Q.Q2_K, Q.Q3_K, Q.Q5_K)
# where each block keeps its float16 scales (and minimums): byte offsets in the block
F16_AT = {Q.Q5_0: (0,), Q.Q4_K: (0, 2), Q.Q6_K: (208,), Q.Q4_0: (0,), Q.Q4_1: (0, 2), Q.Q8_0: (0,),
          Q.Q5_1: (0, 2), Q.Q2_K: (80, 82), Q.Q3_K: (108,), Q.Q5_K: (0, 2)}




def quantised(rng, rows, cols, kind, scale=1.0):
    """(BlockMatrix, its float32 values as llama.cpp's own dequantiser reads them)."""
    raw = quants.quantize((rng.standard_normal((rows, cols)) * scale).astype(np.float32), kind)
    return BlockMatrix.from_gguf(raw, kind, (rows, cols)), quants.dequantize(raw, kind).astype(np.float32)


def random_blocks(rng, rows, cols, kind, bad_scale=None):
    """Raw bytes of random blocks of `kind` (every bit pattern of the integers and 6-bit
    scales) with finite float16 scales, or `bad_scale` in the first block's first one;
    with the values the `gguf` package's dequantiser reads from them."""
    block, size = quants.GGML_QUANT_SIZES[kind]
    raw = rng.integers(0, 256, (rows * cols // block, size), dtype=np.uint8)      # [blocks, bytes]
    for at in F16_AT[kind]:
        scales = (rng.standard_normal(len(raw)) * 0.05).astype("<f2")
        raw[:, at:at + 2] = scales.view(np.uint8).reshape(-1, 2)
    if bad_scale is not None:
        raw[0, F16_AT[kind][0]:F16_AT[kind][0] + 2] = np.array([bad_scale], "<f2").view(np.uint8)
    raw = raw.reshape(-1)
    return raw, quants.dequantize(raw, kind).reshape(rows, cols).astype(np.float32)


def check_product(rng, m: BlockMatrix, w: np.ndarray, n: int) -> None:
    """n random rows times m.T against a float64 product over m's unpacked weights w."""
    x = rng.standard_normal((n, w.shape[1])).astype(np.float32)
    got = x @ m.T
    want = x.astype(np.float64) @ w.T.astype(np.float64)
    assert got.dtype == np.float32 and got.shape == (n, w.shape[0])
    # float32 sums of 32-512 terms: a few units in the last place of the largest term
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * (np.abs(x) @ np.abs(w).T).max())


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_unpacking_equals_llama_cpps_dequantiser_bit_for_bit(kind):
    rng = np.random.default_rng(int(kind))
    m, want = quantised(rng, 37, 96, kind, scale=3.0)      # 37 rows: a short last group of 4
    assert m.shape == (37, 96) and m.bits == (8 if kind in (Q.Q8_0, Q.Q5_1) else 4)
    np.testing.assert_array_equal(m.dense(), want)
    raw = quants.quantize(want, kind)                        # our own reader agrees too
    np.testing.assert_array_equal(dequantize(raw.reshape(-1), int(kind)).reshape(want.shape), want)
    np.testing.assert_array_equal(m[[0, 36, 5, 5]], want[[0, 36, 5, 5]])   # the embedding lookup


@pytest.mark.parametrize("kind", K_QUANTS, ids=lambda k: k.name)
def test_k_quant_unpacking_equals_the_gguf_packages_dequantiser_bit_for_bit(kind):
    rng = np.random.default_rng(100 + int(kind))
    raw, want = random_blocks(rng, 13, 512, kind)
    m = BlockMatrix.from_gguf(raw, kind, (13, 512))
    assert m.shape == (13, 512) and m.bits == (4 if kind == Q.Q4_K else 8)
    assert m.group == (16 if kind in (Q.Q2_K, Q.Q3_K, Q.Q6_K) else 32)
    np.testing.assert_array_equal(m.dense(), want)
    np.testing.assert_array_equal(dequantize(raw, int(kind)).reshape(want.shape), want)
    np.testing.assert_array_equal(m[[12, 0, 3]], want[[12, 0, 3]])
    one = np.zeros((1, 512), np.float32)
    one[0, 300] = 1                                         # a decode step's loop: column 300
    np.testing.assert_array_equal((one @ m.T)[0], want[:, 300])


@pytest.mark.parametrize("kind", K_QUANTS, ids=lambda k: k.name)
def test_a_nan_scale_shows_as_nan_in_its_block_not_as_zero(kind):
    raw, want = random_blocks(np.random.default_rng(7), 2, 256, kind, bad_scale=np.nan)
    m = BlockMatrix.from_gguf(raw, kind, (2, 256))
    block = TYPES[kind.name].block                          # what the bad scale covers
    got = m.dense()        # (unpacked through the products: a nan weight spreads along its row)
    assert np.isnan(want[0, :block]).all() and np.isnan(got[0, :block]).all()
    assert np.isfinite(want[1]).all() and np.isfinite(got[1]).all()
    out = np.ones((2, 256), np.float32) @ m.T
    assert np.isnan(out[:, 0]).all() and np.isfinite(out[:, 1]).all()


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(K_QUANTS), rows=st.integers(1, 11), supers=st.integers(1, 2),
       n=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_k_quant_products_equal_a_float64_product_over_the_unpacked_weights(kind, rows, supers, n, seed):
    rng = np.random.default_rng(seed)
    raw, w = random_blocks(rng, rows, 256 * supers, kind)
    check_product(rng, BlockMatrix.from_gguf(raw, kind, (rows, 256 * supers)), w, n)


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(KINDS), rows=st.integers(1, 41), blocks=st.integers(1, 4),
       n=st.integers(1, 7), seed=st.integers(0, 2**16))
def test_products_equal_a_float64_product_over_the_unpacked_weights(kind, rows, blocks, n, seed):
    rng = np.random.default_rng(seed)
    check_product(rng, *quantised(rng, rows, 32 * blocks, kind), n)


@pytest.mark.parametrize("kind", KINDS + (Q.Q6_K, Q.Q2_K, Q.Q5_K), ids=lambda k: k.name)
def test_a_matrix_of_more_groups_than_runs_multiplies_every_row(kind):
    """More groups of four weight rows than `block_kernels.PARTS` runs: each run unpacks
    several groups into its one buffer (here 131 groups, the last one short, in 64 runs)."""
    from explorer.core.gguf.kernels import GROUP, PARTS
    rows = GROUP * (2 * PARTS + 2) + 3
    rng = np.random.default_rng(7)
    if kind in K_QUANTS:
        raw, w = random_blocks(rng, rows, 256, kind)
        m = BlockMatrix.from_gguf(raw, kind, (rows, 256))
    else:
        m, w = quantised(rng, rows, 64, kind)
    for n in (2, 5):
        check_product(rng, m, w, n)


def test_the_loops_threads_spin_briefly_then_sleep_while_they_wait():
    """numba's OpenMP threads spin only briefly, then sleep while they wait, unless the user
    chose otherwise: two long-spinning threads on two busy cores stalled a Decode step for
    up to a second. The policy must reach libgomp, which reads it when numba's first
    parallel loop starts."""
    import os
    import subprocess
    import sys
    child = ("import ctypes, numba, numpy as np\n"
             "from explorer.core.gguf import kernels as k\n"
             "one = np.ones((1, 1), np.float32)\n"
             "k.matvec_4bit(np.zeros(32, np.float32), np.zeros((1, 16), np.uint8), one, one, np.zeros(1, np.float32))\n"
             "print(numba.threading_layer(), flush=True)\n"
             "if numba.threading_layer() == 'omp':\n"
             "    ctypes.CDLL('libgomp.so.1').omp_display_env(1)\n")   # its settings, to stderr
    # libgomp names an unset policy PASSIVE too: its spin count (300,000 then) tells them apart
    for chosen, expected in ((None, "GOMP_SPINCOUNT = '1000'"), ("ACTIVE", "OMP_WAIT_POLICY = 'ACTIVE'")):
        env = {key: value for key, value in os.environ.items() if key not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
        if chosen:
            env["OMP_WAIT_POLICY"] = chosen
        proc = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        if proc.stdout.split()[0] == "omp":       # numba's other thread pools do not spin
            assert expected in proc.stderr


def test_a_row_gives_the_same_result_alone_or_with_others():
    """A decode step multiplies one row; the full recompute multiplies all of them. Rows
    go through the loops in pairs, so a row alone sums in another order: equal up to
    float32 rounding."""
    rng = np.random.default_rng(3)
    m, _ = quantised(rng, 64, 128, Q.Q4_1)
    x = rng.standard_normal((6, 128)).astype(np.float32)
    together = x @ m.T
    for i in range(6):
        np.testing.assert_allclose(x[i:i + 1] @ m.T, together[i:i + 1], rtol=0,
                                   atol=1e-6 * np.abs(together).max())


def test_a_nan_in_the_input_shows_in_the_output():
    m, _ = quantised(np.random.default_rng(1), 8, 64, Q.Q4_0)
    x = np.ones((2, 64), np.float32)
    x[1, 10] = np.nan
    out = x @ m.T
    assert np.isfinite(out[0]).all() and np.isnan(out[1]).all()


def test_nibble_order_puts_low_nibble_elements_first():
    x = np.arange(64, dtype=np.float32)[None]
    assert nibble_order(x)[0].tolist() == (list(range(16)) + list(range(32, 48))
                                           + list(range(16, 32)) + list(range(48, 64)))


def test_wrong_shapes_are_refused_by_name():
    m, _ = quantised(np.random.default_rng(2), 8, 64, Q.Q8_0)
    with pytest.raises(ValueError, match=r"cannot multiply \(1, 32\) by a \[64, 8\] matrix"):
        np.ones((1, 32), np.float32) @ m.T


def test_stacked_rows_multiply_as_their_parts_and_a_layer_keeps_them_fused():
    rng = np.random.default_rng(5)
    raws = [quants.quantize(rng.standard_normal((r, 64)).astype(np.float32), Q.Q4_1) for r in (16, 8, 8)]
    parts = [BlockMatrix.from_gguf(raw, Q.Q4_1, (len(raw), 64)) for raw in raws]
    whole = BlockMatrix.from_gguf_rows([(raw, Q.Q4_1, (len(raw), 64)) for raw in raws])
    views = [whole.row_block(0, 16), whole.row_block(16, 24), whole.row_block(24, 32)]
    x = rng.standard_normal((3, 64)).astype(np.float32)
    np.testing.assert_allclose(x @ whole.T, np.concatenate([x @ p.T for p in parts], axis=1), rtol=1e-6, atol=1e-5)
    wo, w1, w2 = (quantised(rng, *shape, Q.Q8_0)[0].T for shape in ((64, 32), (32, 64), (64, 32)))
    layer = LayerParams(wq=views[0].T, wk=views[1].T, wv=views[2].T, wo=wo, w1=w1, w2=w2, wqkv=whole.T)
    assert layer.wqkv is not None                     # the views are recognised as its blocks
    other = LayerParams(wq=parts[0].T, wk=views[1].T, wv=views[2].T, wo=wo, w1=w1, w2=w2, wqkv=whole.T)
    assert other.wqkv is None                         # a replaced block: the parts are the truth


@pytest.mark.parametrize("kinds", [(Q.Q8_0, Q.Q5_0, Q.Q8_0), (Q.Q4_K, Q.Q4_K), (Q.Q6_K, Q.Q6_K), (Q.Q4_0, Q.Q4_0),
                                   (Q.Q5_K, Q.Q5_K), (Q.Q3_K, Q.Q3_K), (Q.Q2_K, Q.Q2_K, Q.Q2_K), (Q.Q5_1, Q.Q5_1)],
                         ids=lambda kinds: "+".join(k.name for k in kinds))
def test_tensors_read_into_one_stack_are_their_parts_one_after_another(kinds):
    """A layer's Q, K and V are copied from the file straight into one matrix; Gemma 3
    stores some layers' V as Q8_0 and their Q and K as Q5_0, both 8-bit rows."""
    rng = np.random.default_rng(11)
    tensors = [(random_blocks(rng, rows, 512, kind)[0], kind, (rows, 512)) for kind, rows in zip(kinds, (5, 3, 8))]
    whole = BlockMatrix.from_gguf_rows(tensors)
    parts = [BlockMatrix.from_gguf(*tensor) for tensor in tensors]
    assert whole.kind == parts[0].kind and whole.shape == (sum(p.shape[0] for p in parts), 512)
    for field in ("q", "scale", "offset"):
        if getattr(whole, field) is None:
            assert all(getattr(p, field) is None for p in parts)
        else:
            np.testing.assert_array_equal(getattr(whole, field), np.concatenate([getattr(p, field) for p in parts]))
    for got, *want in zip(whole.k_parts or (), *(p.k_parts or () for p in parts)):
        np.testing.assert_array_equal(got, np.concatenate(want))
    np.testing.assert_array_equal(whole.dense(), np.concatenate([p.dense() for p in parts]))


def test_tensors_of_other_kinds_or_widths_are_not_stacked():
    rng = np.random.default_rng(12)
    q4_k, q6_k, q3_k = (random_blocks(rng, 4, 256, kind)[0] for kind in (Q.Q4_K, Q.Q6_K, Q.Q3_K))
    with pytest.raises(ValueError, match="cannot stack"):
        BlockMatrix.from_gguf_rows([(q4_k, Q.Q4_K, (4, 256)), (q6_k, Q.Q6_K, (4, 256))])
    with pytest.raises(ValueError, match="cannot stack"):     # rows alike, llama.cpp's products not
        BlockMatrix.from_gguf_rows([(q3_k, Q.Q3_K, (4, 256)), (q6_k, Q.Q6_K, (4, 256))])
    wide = random_blocks(rng, 2, 512, Q.Q4_K)[0]
    with pytest.raises(ValueError, match="cannot stack"):
        BlockMatrix.from_gguf_rows([(q4_k, Q.Q4_K, (4, 256)), (wide, Q.Q4_K, (2, 512))])


def test_bfloat16_is_read_as_the_gguf_package_reads_it():
    rng = np.random.default_rng(13)
    x = np.concatenate([rng.standard_normal(200) * 10.0 ** rng.integers(-30, 30, 200),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40]]).astype(np.float32)
    raw = quants.quantize(x, Q.BF16).reshape(-1).view(np.uint8)
    want = quants.dequantize(raw, Q.BF16).astype(np.float32).reshape(-1)
    got = dequantize(raw, int(Q.BF16))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))    # bits: -0.0, nan


def test_two_threads_multiplying_at_once_get_what_one_gets_alone():
    """The window computes on a worker thread while the UI thread may run a product."""
    rng = np.random.default_rng(9)
    m, _ = quantised(rng, 512, 256, Q.Q4_1)
    xs = [rng.standard_normal((k % 3 + 1, 256)).astype(np.float32) for k in range(40)]
    alone = [x @ m.T for x in xs]
    results = {}

    def work(name, order):
        results[name] = [(k, xs[k] @ m.T) for k in order]

    threads = [threading.Thread(target=work, args=(t, list(range(40))[::step]))
               for t, step in (("a", 1), ("b", -1))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name in "ab":
        assert len(results[name]) == 40
        for k, out in results[name]:
            np.testing.assert_array_equal(out, alone[k])


def test_once_the_loops_run_blas_keeps_to_one_thread():
    """Two thread pools on two cores take turns spinning: a 200-token Prefill took 2.4x
    as long while OpenBLAS's threads woke between the loops (block_kernels)."""
    from threadpoolctl import threadpool_info
    m, _ = quantised(np.random.default_rng(4), 4, 32, Q.Q8_0)
    np.ones((2, 32), np.float32) @ m.T
    blas = [pool for pool in threadpool_info() if pool["user_api"] == "blas"]
    assert blas and all(pool["num_threads"] == 1 for pool in blas)


def test_loops_that_numba_cannot_cache_are_compiled_anyway():
    """With the install and home folders read-only numba has nowhere to cache and refuses
    (`RuntimeError: cannot cache function`); a function defined from a string has no
    folder either, so it takes the same path."""
    from explorer.core.gguf.kernels import _compiled
    space = {}
    exec("def plus_one(x):\n    return x + 1\n", space)
    assert _compiled()(space["plus_one"])(41) == 42
