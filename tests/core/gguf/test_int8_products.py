"""llama.cpp's arithmetic: 8-bit activation rows and integer block products (core/int8_products).

The rounding of activations is checked against references written here from llama.cpp's C
code (ggml-cpu/arch/x86/quants.c quantize_row_q8_0 / q8_1, ggml-quants.c
quantize_row_q8_K_ref), element by element, not against the implementation under test.
The products are checked against float64 sums of the same rounded numbers.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from explorer.core.gguf.ggml_arithmetic import half_product, rope_ggml, rope_tables_ggml, softmax_ggml
from explorer.core.gguf.int8_products import quantize_rows
from explorer.core.gguf.blocks import BlockMatrix
from explorer.core.gguf.quant_types import TYPES

f32 = np.float32


def fp16(v) -> float:  # GGML_CPU_FP32_TO_FP16 then back: round to nearest even float16
    return float(np.float16(f32(v)))


def round_half_even(v) -> int:  # _mm256_round_ps(v, _MM_ROUND_NEAREST)
    return int(np.rint(f32(v)))


def llama_q8_0(row, with_sum=False):
    """quantize_row_q8_0 (and q8_1 with `with_sum`) of llama.cpp's x86 build, one block at a time."""
    qs, ds, ss = [], [], []
    for start in range(0, len(row), 32):
        block = [f32(v) for v in row[start:start + 32]]
        max_scalar = max(abs(v) for v in block)
        d = f32(max_scalar / f32(127))
        inverse = f32(f32(127) / max_scalar) if max_scalar != 0 else f32(0)
        q = [round_half_even(f32(v * inverse)) for v in block]
        qs += q
        ds.append(fp16(d))
        ss.append(fp16(f32(d * f32(sum(q)))) if with_sum else None)
    return qs, ds, ss


def nearest_int(v) -> int:  # ggml-quants.c: the 1.5 * 2^23 trick, ties to even
    bits = struct.unpack("<i", struct.pack("<f", f32(f32(v) + f32(12582912.0))))[0]
    return (bits & 0x007FFFFF) - 0x00400000


def llama_q8_K(row):
    """quantize_row_q8_K_ref: per block of 256, the element of largest |x| sets the scale."""
    qs, ds, bsums = [], [], []
    for start in range(0, len(row), 256):
        block = [f32(v) for v in row[start:start + 256]]
        peak, amax = f32(0), f32(0)
        for v in block:
            if abs(v) > amax:
                amax, peak = abs(v), v
        if amax == 0:
            qs += [0] * 256
            ds.append(0.0)
            bsums += [0] * 16
            continue
        iscale = f32(f32(-127) / peak)
        q = [min(127, nearest_int(f32(iscale * v))) for v in block]
        qs += q
        bsums += [sum(q[16 * j:16 * j + 16]) for j in range(16)]
        ds.append(float(f32(f32(1) / iscale)))
    return qs, ds, bsums


def rows_with_ties(rng, n, cols):  # [n, cols] float32: random scales, and blocks with exact halves
    x = (rng.standard_normal((n, cols)) * rng.choice([1e-3, 1.0, 300.0], size=(n, 1))).astype(f32)
    halves = np.arange(-64, 64, dtype=f32)[: 32] + f32(0.5)            # k + 1/2: ties for a step of 1
    x[0, :32] = halves
    x[0, 0] = 127                                                    # a block whose step is exactly 1
    if cols >= 256:
        x[-1, :256] = np.resize(halves, 256)
        x[-1, 7] = -127                                              # Q8_K's step: -127 / max = 1
    return x


@pytest.mark.parametrize("kind", ["q8_0", "q8_1"])
def test_32_element_rows_are_rounded_as_llama_cpp_rounds_them(kind):
    x = rows_with_ties(np.random.default_rng(1), 4, 512)
    q, d, s = quantize_rows(x, kind)
    for i, row in enumerate(x):
        ref_q, ref_d, ref_s = llama_q8_0(row, with_sum=kind == "q8_1")
        assert q[i].tolist() == ref_q
        assert d[i].tolist() == ref_d
        if kind == "q8_1":
            assert s[i].tolist() == ref_s
    assert {int(v) for v in q[0, 1:32]} & {-32, -30, 2, 4}            # halves went to the even side
    assert q[0, :32].tolist() == [127] + [round_half_even(v) for v in x[0, 1:32]]


def test_256_element_rows_are_rounded_as_llama_cpp_rounds_them():
    x = rows_with_ties(np.random.default_rng(2), 4, 768)
    x[1, 256:512] = 0                                                # an all-zero block
    q, d, s = quantize_rows(x, "q8_K")
    for i, row in enumerate(x):
        ref_q, ref_d, ref_bsums = llama_q8_K(row)
        assert q[i].tolist() == ref_q
        assert d[i, ::8].tolist() == ref_d                          # one scale per 256, repeated per 32
        sums_32 = np.add.reduceat(np.array(ref_bsums), np.arange(0, len(ref_bsums), 2))
        assert np.array_equal(s[i], d[i] * sums_32.astype(f32))


def random_matrix(rng, layout: str, rows: int, cols: int) -> BlockMatrix:
    """A BlockMatrix of each layout the model files give, with float16 scales."""
    def halfs(*shape, low=0.001, high=0.05):
        return rng.uniform(low, high, shape).astype(np.float16).astype(f32)
    if layout == "Q8_0":
        return BlockMatrix(rng.integers(-127, 128, (rows, cols), dtype=np.int8), halfs(rows, cols // 32), None,
                           TYPES["Q8_0"].layout)
    if layout == "Q6_K":
        d, sc = halfs(rows, cols // 256), rng.integers(-128, 128, (rows, cols // 16), dtype=np.int8)
        return BlockMatrix(rng.integers(-32, 32, (rows, cols), dtype=np.int8),
                           d.repeat(16, axis=1) * sc.astype(f32), None, TYPES["Q6_K"].layout, (d, sc))
    q = rng.integers(0, 256, (rows, cols // 2), dtype=np.uint8)
    scale = halfs(rows, cols // 32)
    if layout == "Q4_0":
        return BlockMatrix(q, scale, scale * f32(-8), TYPES["Q4_0"].layout)
    if layout == "Q4_1":
        return BlockMatrix(q, scale, halfs(rows, cols // 32, low=-0.5, high=0.5), TYPES["Q4_1"].layout)
    d, dmin = halfs(rows, cols // 256), halfs(rows, cols // 256)
    sc, m = (rng.integers(0, 64, (rows, cols // 32), dtype=np.uint8) for _ in range(2))
    return BlockMatrix(q, d.repeat(8, axis=1) * sc.astype(f32), -(dmin.repeat(8, axis=1) * m.astype(f32)),
                       TYPES["Q4_K"].layout, (d, dmin, sc, m))


@settings(max_examples=30, deadline=None)
@given(layout=st.sampled_from(["Q8_0", "Q6_K", "Q4_0", "Q4_1", "Q4_K"]), rows=st.integers(1, 9),
       n=st.integers(1, 9), superblocks=st.integers(1, 2), seed=st.integers(0, 2**32 - 1))
def test_an_integer_product_equals_float64_sums_of_the_same_rounded_numbers(layout, rows, n, superblocks, seed):
    """x @ m.T in llama.cpp's arithmetic = (x rounded to 8 bits) @ m.T summed in float64:
    the integer sums are exact, so only a few float32 roundings per block remain, whichever
    order the number of rows selects (Q4_K four at a time, Q6_K eight or more)."""
    rng = np.random.default_rng(seed)
    cols = 256 * superblocks
    m = random_matrix(rng, layout, rows, cols)
    x = (rng.standard_normal((n, cols)) * rng.uniform(0.01, 100)).astype(f32)
    q, d, s = quantize_rows(x, m.activations)
    rounded = q.astype(np.float64) * np.repeat(d, 32, axis=1)                 # [n, cols] what x became
    if m.offset is None:
        reference = rounded @ m.dense().astype(np.float64).T
    else:                              # nibble * scale times x, and each block's offset times its s
        nibbles = BlockMatrix(m.q, m.scale, np.zeros_like(m.offset), m.layout).dense().astype(np.float64)
        reference = rounded @ nibbles.T + s.astype(np.float64) @ m.offset.astype(np.float64).T
    got = m.T.times_int8(x)
    size = np.abs(rounded) @ np.abs(m.dense().astype(np.float64)).T + 1e-30      # sum of |terms|
    assert got.dtype == f32 and got.shape == (n, rows)
    assert np.all(np.abs(got - reference) <= 1e-5 * size), np.max(np.abs(got - reference) / size)


def test_a_nan_activation_shows_in_the_product():
    m = random_matrix(np.random.default_rng(3), "Q8_0", 2, 64)
    x = np.ones((1, 64), f32)
    x[0, 5] = np.nan
    assert np.isnan(m.T.times_int8(x)).all()


@pytest.mark.parametrize("queries", [1, 2])
def test_float16_products_equal_float64_sums(queries):
    """The attention's products (one query: ggml_vec_dot_f16's order; more: tinyBLAS's)
    are float32 sums of exact float16 products: within a few float32 roundings of float64."""
    rng = np.random.default_rng(queries)
    a = rng.standard_normal((2, 3, 300)).astype(np.float16).astype(f32)
    c = rng.standard_normal((2, 70, 300)).astype(np.float16).astype(f32)
    got = half_product(a, c, queries)
    reference = a.astype(np.float64) @ c.astype(np.float64).transpose(0, 2, 1)
    size = np.abs(a.astype(np.float64)) @ np.abs(c.astype(np.float64)).transpose(0, 2, 1)
    assert got.shape == (2, 3, 70) and np.all(np.abs(got - reference) <= 1e-6 * size)


def test_the_softmax_is_a_softmax_with_masked_cells_exactly_zero():
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((6, 37)) * 8).astype(f32)
    x[:, 30:] = -np.inf                                  # masked keys
    x[0, :29] = -200                                     # below exp's range: exactly 0
    wide = np.exp((x - x.max(axis=1, keepdims=True)).astype(np.float64))   # x - max in float32, as llama.cpp
    got = softmax_ggml(x.copy())
    assert np.all(got[:, 30:] == 0) and np.all(got[0, :29] == 0) and got[0, 29] == 1
    assert np.allclose(got, wide / wide.sum(axis=1, keepdims=True), rtol=1e-6, atol=1e-37)


def test_rotary_positions_turn_pairs_by_the_angle_of_their_position():
    """Position 0 leaves every number as it is; elsewhere each pair (x[i], x[i + e/2]) of
    a head turns by position * base^(-2i/e), to float32 precision."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 2 * 16)).astype(f32)       # 3 positions, 2 heads of 16
    tables = rope_tables_ggml(np.array([0, 5, 300]), 16, 10000.0)
    got = rope_ggml(x, tables, halves=True)
    assert np.array_equal(got[0], x[0])
    angle = np.array([5, 300])[:, None] * 10000.0 ** (-np.arange(8) * 2 / 16)     # [2, 8]
    pairs = x[1:].reshape(2, 2, 2, 8).astype(np.float64)                            # [n, head, half, i]
    c, s = np.cos(angle)[:, None], np.sin(angle)[:, None]
    turned = np.stack([pairs[:, :, 0] * c - pairs[:, :, 1] * s, pairs[:, :, 0] * s + pairs[:, :, 1] * c], 2)
    assert np.allclose(got[1:], turned.reshape(2, -1), atol=2e-4)


# Products of raw file blocks, each against a transcription of the loop llama.cpp's x86
# build runs for it (ggml-cpu/arch/x86/quants.c ggml_vec_dot_*, AVX2; ggml-cpu/tiled's
# AVX512-VNNI microtile from eight activation rows), one float32 step at a time from the
# C structs' bytes: equal to the bit.

def fma32(a, b, c) -> f32:
    """a * b + c rounded once to float32 (the FMA instruction), exactly: through fractions."""
    from fractions import Fraction
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    near = f32(float(exact))                     # at most one float32 step from the answer
    candidates = [np.nextafter(near, f32(-np.inf)), near, np.nextafter(near, f32(np.inf))]
    return min(candidates, key=lambda v: (abs(Fraction(float(v)) - exact), int(v.view(np.uint32)) & 1))


def hsum_float_8(lanes) -> f32:
    """x86 quants.c hsum_float_8: the upper four lanes onto the lower, then movehl, then movehdup."""
    a = [f32(lanes[k + 4] + lanes[k]) for k in range(4)]
    b = [f32(a[0] + a[2]), f32(a[1] + a[3])]
    return f32(b[0] + b[1])


def f16_at(block, at) -> f32:
    return f32(np.frombuffer(bytes(block[at:at + 2]), "<f2")[0])


def k_scale_min(scales, j):  # get_scale_min_k4
    if j < 4:
        return scales[j] & 63, scales[j + 4] & 63
    return (scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4), (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4)


def q3_k_scales(scales):  # the kmask shuffle of ggml_vec_dot_q3_K_q8_K, on four uint32
    aux = [int.from_bytes(bytes(scales[4 * k:4 * k + 4]), "little") for k in range(3)] + [0]
    kmask1, kmask2, tmp = 0x03030303, 0x0F0F0F0F, aux[2]
    aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4)
    aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4)
    aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4)
    aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4)
    return [int(v) - 32 for v in np.frombuffer(b"".join(a.to_bytes(4, "little") for a in aux), np.int8)]


def q5_1_quants(block):  # ggml_vec_dot_q5_1_q8_1_generic's x0, x1
    qh = int.from_bytes(bytes(block[4:8]), "little")
    qs = block[8:24]
    low = [(qs[j] & 0xF) | (((qh >> j) << 4) & 0x10) for j in range(16)]
    return low + [(qs[j] >> 4) | ((qh >> (j + 12)) & 0x10) for j in range(16)]


def q5_k_quants(block):  # 256 values 0..31: the generic dequantiser's loop over four chunks of 64
    qh, qs, out = block[16:48], block[48:176], []
    for j in range(4):
        u1, u2 = 1 << 2 * j, 2 << 2 * j
        out += [(qs[32 * j + l] & 0xF) + (16 if qh[l] & u1 else 0) for l in range(32)]
        out += [(qs[32 * j + l] >> 4) + (16 if qh[l] & u2 else 0) for l in range(32)]
    return out


def q3_k_quants(block):  # 256 values -4..3: the generic loop over two halves of 128
    hm, qs, out, m = block[0:32], block[32:96], [], 1
    for half in range(2):
        for shift in (0, 2, 4, 6):
            out += [((qs[32 * half + l] >> shift) & 3) - (0 if hm[l] & m else 4) for l in range(32)]
            m <<= 1
    return out


def lane_sums(q, y, scale_of):  # 8 int32 lanes of a block of 256: lane l, elements 4l..4l+3 of each run
    return [sum(scale_of(32 * c + 4 * l) * sum(q[32 * c + 4 * l + e] * y[32 * c + 4 * l + e] for e in range(4))
                for c in range(8)) for l in range(8)]


def reference_q5_1(wrow, xrow):
    qy, dy, sy = llama_q8_0(xrow, with_sum=True)
    acc, summs = [f32(0)] * 8, f32(0)
    for b, block in enumerate(wrow.reshape(-1, 24).tolist()):
        dx, m = f16_at(block, 0), f16_at(block, 2)
        summs = fma32(m, f32(sy[b]), summs)
        q, y = q5_1_quants(block), qy[32 * b:32 * b + 32]
        d = f32(dx * f32(dy[b]))
        for lane in range(8):
            acc[lane] = fma32(f32(sum(q[e] * y[e] for e in range(4 * lane, 4 * lane + 4))), d, acc[lane])
    return f32(hsum_float_8(acc) + summs)


def reference_q5_k(wrow, xrow, tiled):
    qy, dy, bsums = llama_q8_K(xrow)
    acc, summs, total = [f32(0)] * 8, f32(0), f32(0)
    for b, block in enumerate(wrow.reshape(-1, 176).tolist()):
        xd, xdmin, scales = f16_at(block, 0), f16_at(block, 2), block[4:16]
        sc, mins = zip(*(k_scale_min(scales, j) for j in range(8)))
        q, y, yd = q5_k_quants(block), qy[256 * b:256 * b + 256], f32(dy[b])
        imin = sum(mins[s] * (bsums[16 * b + 2 * s] + bsums[16 * b + 2 * s + 1]) for s in range(8))
        if tiled:          # s1, s2 exact; result = fnmadd(dmin, s2, s1 * d); buf += result * d_y (fused)
            s1 = sum(sc[e // 32] * q[e] * y[e] for e in range(256))
            total = fma32(fma32(-xdmin, f32(imin), f32(f32(s1) * xd)), yd, total)
            continue
        d, dmin = f32(yd * xd), f32(-yd * xdmin)
        summs = fma32(dmin, f32(imin), summs)
        for lane, isum in enumerate(lane_sums(q, y, lambda e: sc[e // 32])):
            acc[lane] = fma32(d, f32(isum), acc[lane])
    return total if tiled else f32(hsum_float_8(acc) + summs)


def reference_q3_k(wrow, xrow, tiled):
    qy, dy, _ = llama_q8_K(xrow)
    acc, total = [f32(0)] * 8, f32(0)
    for b, block in enumerate(wrow.reshape(-1, 110).tolist()):
        xd, sc = f16_at(block, 108), q3_k_scales(block[96:108])
        q, y, yd = q3_k_quants(block), qy[256 * b:256 * b + 256], f32(dy[b])
        if tiled:          # no minimum: result = s1 * d; buf += result * d_y (fused)
            s1 = sum(sc[e // 16] * q[e] * y[e] for e in range(256))
            total = fma32(f32(f32(s1) * xd), yd, total)
            continue
        d = f32(yd * xd)
        for lane, isum in enumerate(lane_sums(q, y, lambda e: sc[e // 16])):
            acc[lane] = fma32(d, f32(isum), acc[lane])
    return total if tiled else hsum_float_8(acc)


def raw_blocks(rng, kind: str, rows: int, cols: int) -> np.ndarray:  # -> [rows, bytes per row] uint8
    """Random blocks (every bit pattern of quants and scales) with small finite float16 scales."""
    qtype = TYPES[kind]
    raw = rng.integers(0, 256, (rows * cols // qtype.block, qtype.block_bytes), dtype=np.uint8)
    for at in {"Q5_1": (0, 2), "Q5_K": (0, 2), "Q3_K": (108,), "Q2_K": (80, 82)}[kind]:
        raw[:, at:at + 2] = (rng.standard_normal(len(raw)) * 0.02).astype("<f2").view(np.uint8).reshape(-1, 2)
    return raw.reshape(rows, -1)


@pytest.mark.parametrize("kind, batch", [("Q5_1", 1), ("Q5_1", 8), ("Q5_K", 1), ("Q5_K", 8), ("Q3_K", 1),
                                         ("Q3_K", 8)])
def test_new_types_multiply_as_llama_cpps_x86_loops_to_the_bit(kind, batch):
    """One activation row (or fewer than eight) takes ggml_vec_dot; from eight rows the
    K-quants take the tiled kernel (Q5_1 has none: vec_dot still)."""
    rng = np.random.default_rng(sum(map(ord, kind)) + batch)
    rows, cols = 3, 512
    raw = raw_blocks(rng, kind, rows, cols)
    m = BlockMatrix.from_gguf(raw.reshape(-1), TYPES[kind].ggml_id, (rows, cols))
    x = rows_with_ties(rng, 2, cols)
    got = m.T.times_int8(x, batch)
    tiled = batch >= 8
    for i in range(2):
        for j in range(rows):
            want = (reference_q5_1(raw[j], x[i]) if kind == "Q5_1" else
                    reference_q5_k(raw[j], x[i], tiled) if kind == "Q5_K" else reference_q3_k(raw[j], x[i], tiled))
            assert got[i, j].view(np.uint32) == want.view(np.uint32), (i, j, got[i, j], want)


def reference_q2_k(wrow, xrow, run):
    """The repacked kernels' sums (llama.cpp repacks Q2_K on AVX-512): per `run` elements,
    256 for one activation row (gemv), 128 for rows four at a time (gemm)."""
    qy, dy, bsums = llama_q8_K(xrow)
    total, minimum = f32(0), f32(0)
    for b, block in enumerate(wrow.reshape(-1, 84).tolist()):
        scales, qs, xd, xdmin, yd = block[0:16], block[16:80], f16_at(block, 80), f16_at(block, 82), f32(dy[b])
        q = [(qs[32 * (e // 128) + e % 32] >> 2 * (e % 128 // 32)) & 3 for e in range(256)]
        y = qy[256 * b:256 * b + 256]
        for start in range(0, 256, run):
            isum = sum((scales[e // 16] & 0xF) * q[e] * y[e] for e in range(start, start + run))
            imin = sum((scales[g] >> 4) * bsums[16 * b + g] for g in range(start // 16, (start + run) // 16))
            total = fma32(f32(isum), f32(xd * yd), total)
            minimum = fma32(f32(imin), f32(xdmin * yd), minimum)
    return f32(total - minimum)


@pytest.mark.parametrize("batch", [1, 5])
def test_q2_k_multiplies_as_llama_cpps_repacked_kernels_to_the_bit(batch):
    """Five rows at once: the first four through the gemm, the fifth through the gemv."""
    rng = np.random.default_rng(21 + batch)
    rows, cols = 3, 512
    raw = raw_blocks(rng, "Q2_K", rows, cols)
    m = BlockMatrix.from_gguf(raw.reshape(-1), TYPES["Q2_K"].ggml_id, (rows, cols))
    x = rows_with_ties(rng, 5, cols)
    got = m.T.times_int8(x, batch)
    for i in range(5):
        run = 128 if batch > 3 and i < 4 else 256
        for j in range(rows):
            want = reference_q2_k(raw[j], x[i], run)
            assert got[i, j].view(np.uint32) == want.view(np.uint32), (i, j, got[i, j], want)
