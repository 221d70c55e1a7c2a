"""Products with 8-bit activations, as llama.cpp's CPU backend computes them (numba).

llama.cpp does not multiply a quantised weight matrix by float activations: it first
rounds each activation row to 8-bit integers with a scale per block (its "vec_dot type"),
multiplies integers by integers, sums them in int32 per block, and only then scales:

    weights                 activations   activation blocks
    Q4_0, Q5_0, Q8_0        Q8_0          32 elements: d = max|x| / 127 (kept as float16),
                                          q = round(x * 127 / max|x|), ties to even
    Q4_1, Q5_1              Q8_1          as Q8_0, plus s = d * sum(q) as float16 (the
                                          block's offset multiplies it)
    Q3_K, Q4_K, Q5_K, Q6_K  Q8_K          256 elements: max = the element of largest |x|,
                                          q = min(127, round(-127 / max * x)),
                                          d = 1 / (-127 / max) (float32)

A weight block (`kernels`' layouts: value = q_w * scale + offset) times an
activation block (value = q_x * d) is then
    scale * d * sum(q_w * q_x) + offset * d * sum(q_x)
with both sums exact integers: the only roundings are the activations' and a few float32
products per block. These loops compute exactly that for every weight type the model
files use (4-bit rows: Q4_0, Q4_1, Q4_K; 8-bit rows with a scale per 32: Q5_0, Q8_0, and
with an offset: Q5_1, Q5_K; per 16: Q3_K, Q6_K, and with an offset: Q2_K).

The float order of those sums depends on how many activation rows llama.cpp multiplies
at once (`times_rows`' batch): one row takes ggml_vec_dot / gemv, several take tinyBLAS
(Q8_0, Q5_0: the same order), the repacked gemm of Q4_K and (on a machine with AVX-512,
as this one) Q2_K (four rows at a time: one fma per 64 or 128 elements instead of per
256) and, from eight rows, the tiled kernel of Q3_K, Q5_K and Q6_K.

The rest of llama.cpp's arithmetic (float16 K/V, its attention, norm, GELU and rotary
positions) is `ggml_arithmetic`'s, whose fma, float16 rounding and batch size these loops
share.

Activation rows [n, cols] become (q [n, cols] int8, d [n, cols/32] float32, s [n, cols/32]
float32): per 32 elements the scale (Q8_K's one per 256, repeated) and the number an
offset multiplies (d * sum(q), Q8_1's float16 s).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .ggml_arithmetic import UBATCH, fma, to_half
from .kernels import _compiled

BLOCK = 32
ACTIVATIONS = ("q8_0", "q8_1", "q8_K")


@_compiled()
def _round_blocks_32(x, q, d, total):
    """Per block of 32 of each row: d = max|x| / 127, q = x * (127 / max|x|) rounded to
    nearest, ties to even (llama.cpp's x86 quantize_row_q8_0 / q8_1), total = sum(q).
    x [n, cols] float32 -> q [n, cols] int8, d, total [n, cols/32] float32. A NaN in a
    block makes its d NaN, so the product shows it."""
    n, cols = x.shape
    for i in range(n):
        for b in range(cols // 32):
            amax, bad = np.float32(0), False
            for k in range(32):
                a = abs(x[i, 32 * b + k])
                bad |= a != a
                amax = max(amax, a)
            if bad:
                amax = np.float32(np.nan)
            inv = np.float32(127) / amax if amax != 0 else np.float32(0)
            t = 0
            for k in range(32):
                v = np.rint(x[i, 32 * b + k] * inv)
                q[i, 32 * b + k] = np.int8(v) if amax == amax else np.int8(0)
                t += np.int32(q[i, 32 * b + k])
            d[i, b] = amax / np.float32(127)
            total[i, b] = np.float32(t)


@_compiled()
def _round_blocks_256(x, q, d, total):
    """Per block of 256 of each row, llama.cpp's quantize_row_q8_K: max = the element of
    largest |x| (the first such), q = min(127, round(-127 / max * x)) (ties to even), d =
    1 / (-127 / max), the same d for its eight blocks of 32; total per 32 = sum(q).
    x [n, cols] float32 -> q [n, cols] int8, d, total [n, cols/32] float32."""
    n, cols = x.shape
    for i in range(n):
        for b in range(cols // 256):
            amax, peak, bad = np.float32(0), np.float32(0), False
            for k in range(256):
                v = x[i, 256 * b + k]
                bad |= v != v
                if abs(v) > amax:
                    amax, peak = abs(v), v
            if bad:
                amax = peak = np.float32(np.nan)
            if amax == 0:
                for k in range(256):
                    q[i, 256 * b + k] = 0
                for s in range(8):
                    d[i, 8 * b + s], total[i, 8 * b + s] = np.float32(0), np.float32(0)
                continue
            iscale = np.float32(-127) / peak
            for s in range(8):
                t = 0
                for k in range(32 * s, 32 * s + 32):
                    v = min(np.float32(127), np.rint(iscale * x[i, 256 * b + k]))
                    q[i, 256 * b + k] = np.int8(v) if amax == amax else np.int8(0)
                    t += np.int32(q[i, 256 * b + k])
                d[i, 8 * b + s] = np.float32(1) / iscale
                total[i, 8 * b + s] = np.float32(t)


def quantize_rows(x: np.ndarray, kind: str):  # [n, cols] -> q [n, cols] int8, d, s [n, cols/32]
    """Activation rows rounded to 8 bits as llama.cpp's `kind` ("q8_0", "q8_1", "q8_K")."""
    x = np.ascontiguousarray(x, np.float32)
    n, cols = x.shape
    q = np.empty((n, cols), np.int8)
    d = np.empty((n, cols // BLOCK), np.float32)
    total = np.empty_like(d)
    if kind == "q8_K":
        _round_blocks_256(x, q, d, total)
        return q, d, d * total
    if kind not in ACTIVATIONS:
        raise ValueError(f"activation type {kind!r}: expected one of {ACTIVATIONS}")
    _round_blocks_32(x, q, d, total)
    if kind == "q8_1":
        return q, to_half(d), to_half(d * total)     # s from the unrounded d, as llama.cpp
    d = to_half(d)
    return q, d, d * total


# The products round in llama.cpp's order, so they need IEEE arithmetic: no fastmath
# (which would let the compiler reorder the sums).
_exact = _compiled(parallel=True, exact=True)


@nb.njit(inline="always")
def _sum_lanes(acc):
    """llama.cpp's horizontal sum of eight float32 lanes (hsum_float_8): halves, then
    pairs, then the two."""
    return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))


@nb.njit(inline="always")
def _quad(w, x, k):  # sum of w[k + t] * x[k + t] for t < 4, int8 rows -> int32
    return (np.int32(w[k]) * np.int32(x[k]) + np.int32(w[k + 1]) * np.int32(x[k + 1])
            + np.int32(w[k + 2]) * np.int32(x[k + 2]) + np.int32(w[k + 3]) * np.int32(x[k + 3]))


@_exact
def product_8bit_lanes(xq, xd, q, scale, out):
    """Rows with a scale per 32 (Q8_0, Q5_0) times Q8_0 activations, as llama.cpp's x86
    kernels (ggml_vec_dot_q8_0_q8_0, and tinyBLAS for several rows) sum: eight float32
    lanes, lane l taking elements 4l..4l+3 of every block, each block's integer lane sums
    added as lane = fma(scale * d, sum, lane); then summed as `_sum_lanes`.
    xq [n, cols] int8, xd [n, cols/32], q [rows, cols] int8, scale [rows, cols/32] -> out [n, rows]."""
    rows, cols = q.shape
    n = xq.shape[0]
    for j in nb.prange(rows):
        w = q[j]
        for i in range(n):
            x = xq[i]
            a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = np.float32(0)
            for b in range(cols // 32):
                d, k = scale[j, b] * xd[i, b], 32 * b
                a0 = fma(d, np.float32(_quad(w, x, k)), a0)
                a1 = fma(d, np.float32(_quad(w, x, k + 4)), a1)
                a2 = fma(d, np.float32(_quad(w, x, k + 8)), a2)
                a3 = fma(d, np.float32(_quad(w, x, k + 12)), a3)
                a4 = fma(d, np.float32(_quad(w, x, k + 16)), a4)
                a5 = fma(d, np.float32(_quad(w, x, k + 20)), a5)
                a6 = fma(d, np.float32(_quad(w, x, k + 24)), a6)
                a7 = fma(d, np.float32(_quad(w, x, k + 28)), a7)
            out[i, j] = ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7))


@_exact
def product_8bit_offset_lanes(xq, xd, xs, q, scale, offset, out):
    """Q5_1 rows (value = q * d + m, q 0..31) times Q8_1 activations, as llama.cpp's x86
    ggml_vec_dot_q5_1_q8_1 sums: the lanes of `product_8bit_lanes` over q * q_x, and a
    float32 sum of m * s (fma), added last. xq [n, cols] int8, xd, xs [n, cols/32],
    q [rows, cols] int8, scale, offset [rows, cols/32] -> out [n, rows]."""
    rows, cols = q.shape
    n = xq.shape[0]
    for j in nb.prange(rows):
        w = q[j]
        for i in range(n):
            x = xq[i]
            a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = np.float32(0)
            offsets = np.float32(0)
            for b in range(cols // 32):
                offsets = fma(offset[j, b], xs[i, b], offsets)
                d, k = scale[j, b] * xd[i, b], 32 * b
                a0 = fma(d, np.float32(_quad(w, x, k)), a0)
                a1 = fma(d, np.float32(_quad(w, x, k + 4)), a1)
                a2 = fma(d, np.float32(_quad(w, x, k + 8)), a2)
                a3 = fma(d, np.float32(_quad(w, x, k + 12)), a3)
                a4 = fma(d, np.float32(_quad(w, x, k + 16)), a4)
                a5 = fma(d, np.float32(_quad(w, x, k + 20)), a5)
                a6 = fma(d, np.float32(_quad(w, x, k + 24)), a6)
                a7 = fma(d, np.float32(_quad(w, x, k + 28)), a7)
            out[i, j] = (((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7))) + offsets


@_exact
def product_4bit_lanes(xq, xd, xs, q, scale, offset, centre, out):
    """Q4_0 (centre 8, no offset term) and Q4_1 (centre 0) rows times Q8_0 / Q8_1
    activations, as ggml_vec_dot_q4_0_q8_0 / q4_1_q8_1 sum on x86: the lanes of
    `product_8bit_lanes` over (nibble - centre) * q, and for Q4_1 a float32 sum of
    offset * s (fma), added last. xq [n, cols] int8, xd, xs [n, cols/32], q [rows, cols/2]
    uint8, scale, offset [rows, cols/32] -> out [n, rows]."""
    rows, half = q.shape
    n = xq.shape[0]
    low, shift = np.uint8(15), np.uint8(4)
    for j in nb.prange(rows):
        acc = np.empty(8, np.float32)
        for i in range(n):
            acc[:] = 0
            offsets = np.float32(0)
            for b in range(half // 16):
                d = scale[j, b] * xd[i, b]
                for lane in range(8):
                    p = np.int32(0)
                    for e in range(4 * lane, 4 * lane + 4):     # element e of the block
                        v = q[j, 16 * b + (e & 15)]
                        nibble = (v & low) if e < 16 else (v >> shift)
                        p += (np.int32(nibble) - centre) * np.int32(xq[i, 32 * b + e])
                    acc[lane] = fma(d, np.float32(p), acc[lane])
                if centre == 0:
                    offsets = fma(offset[j, b], xs[i, b], offsets)
            out[i, j] = _sum_lanes(acc) + offsets


@_exact
def product_q4_k(xq, xd, q, d, dmin, sc, m, out, run):
    """Q4_K rows times Q8_K activations, as llama.cpp's repacked x86 kernels sum them:
    per run of `run` elements (256 for one activation row, ggml_gemv_q4_K_8x8_q8_K; 64
    for rows taken four at a time, ggml_gemm_q4_K_8x8_q8_K) one integer sum of sc * q * x
    and one of m * sum(x), scaled into two float32 sums by fma (d * d_x, dmin * d_x), the
    second subtracted at the end. xq [n, cols] int8, xd [n, cols/32] (one value per 256,
    repeated), q [rows, cols/2] uint8, d, dmin [rows, cols/256], sc, m [rows, cols/32]
    uint8 -> out [n, rows]."""
    rows, half = q.shape
    n = xq.shape[0]
    low, shift = np.uint8(15), np.uint8(4)
    per = run // 32                                # blocks of 32 in a run
    for j in nb.prange(rows):
        for i in range(n):
            total, minimum = np.float32(0), np.float32(0)
            for r in range(half // (16 * per)):
                isum, imin = np.int32(0), np.int32(0)
                for b in range(per * r, per * r + per):
                    acc, xsum = np.int32(0), np.int32(0)
                    for k in range(16):
                        v = q[j, 16 * b + k]
                        x0, x1 = np.int32(xq[i, 32 * b + k]), np.int32(xq[i, 32 * b + 16 + k])
                        acc += np.int32(v & low) * x0 + np.int32(v >> shift) * x1
                        xsum += x0 + x1
                    isum += np.int32(sc[j, b]) * acc
                    imin += np.int32(m[j, b]) * xsum
                s, dx = (per * r) // 8, xd[i, per * r]
                total = fma(np.float32(isum), d[j, s] * dx, total)
                minimum = fma(np.float32(imin), dmin[j, s] * dx, minimum)
            out[i, j] = total - minimum


@_exact
def product_q2_k(xq, xd, q, d, dmin, sc, m, out, run):
    """Q2_K rows times Q8_K activations, as llama.cpp's repacked x86 kernels sum them
    (AVX-512 builds repack Q2_K as Q4_K: ggml_gemv_q2_K_8x8_q8_K, run 256, for one
    activation row; ggml_gemm_q2_K_8x8_q8_K, run 128, for rows taken four at a time): per
    run one integer sum of sc * q * x and one of m * sum(x), per 16 elements, scaled into
    two float32 sums by fma (d * d_x, dmin * d_x), the second subtracted at the end.
    xq [n, cols] int8, xd [n, cols/32] (one per 256, repeated), q [rows, cols] int8 (0..3),
    d, dmin [rows, cols/256], sc, m [rows, cols/16] uint8 -> out [n, rows]."""
    rows, cols = q.shape
    n = xq.shape[0]
    for j in nb.prange(rows):
        for i in range(n):
            total, minimum = np.float32(0), np.float32(0)
            for r in range(cols // run):
                isum, imin = np.int32(0), np.int32(0)
                for g in range(run * r // 16, run * (r + 1) // 16):
                    p, x_sum = np.int32(0), np.int32(0)
                    for e in range(16 * g, 16 * g + 16):
                        p += np.int32(q[j, e]) * np.int32(xq[i, e])
                        x_sum += np.int32(xq[i, e])
                    isum += np.int32(sc[j, g]) * p
                    imin += np.int32(m[j, g]) * x_sum
                s = run * r // 256
                dx = xd[i, 8 * s]
                total = fma(np.float32(isum), d[j, s] * dx, total)
                minimum = fma(np.float32(imin), dmin[j, s] * dx, minimum)
            out[i, j] = total - minimum


@_exact
def product_q6_k(xq, xd, q, d, sc, out):
    """Q6_K rows times Q8_K activations, as llama.cpp's x86 ggml_vec_dot_q6_K_q8_K sums:
    per block of 256, eight int32 lanes, lane l taking elements 4l..4l+3 of each of the
    eight runs of 32, each times its 16-element scale, with (q + 32) for q; then the
    offset, 32 * (sc * sum(x)) of the 16-element groups 2l and 2l + 1, taken from lane l;
    each lane added as lane = fma(d * d_x, lane sum, lane), then summed as `_sum_lanes`.
    xq [n, cols] int8, xd [n, cols/32] (one per 256, repeated), q [rows, cols] int8 (q - 32
    of the file), d [rows, cols/256], sc [rows, cols/16] int8 -> out [n, rows]."""
    rows, cols = q.shape
    n = xq.shape[0]
    for j in nb.prange(rows):
        acc = np.empty(8, np.float32)
        lanes = np.empty(8, np.int32)
        for i in range(n):
            acc[:] = 0
            for s in range(cols // 256):
                base = 256 * s
                lanes[:] = 0
                for c in range(8):                 # runs of 32
                    for lane in range(8):
                        k = base + 32 * c + 4 * lane
                        p = np.int32(0)
                        for e in range(k, k + 4):
                            p += (np.int32(q[j, e]) + 32) * np.int32(xq[i, e])
                        lanes[lane] += np.int32(sc[j, (k - base) // 16 + 16 * s]) * p
                for lane in range(8):
                    offset = np.int32(0)
                    for g in (2 * lane, 2 * lane + 1):
                        x_sum = np.int32(0)
                        for e in range(base + 16 * g, base + 16 * g + 16):
                            x_sum += np.int32(xq[i, e])
                        offset += np.int32(sc[j, g + 16 * s]) * x_sum
                    acc[lane] = fma(xd[i, 8 * s] * d[j, s], np.float32(lanes[lane] - 32 * offset), acc[lane])
            out[i, j] = _sum_lanes(acc)


@_exact
def product_q3_k(xq, xd, q, d, sc, out):
    """Q3_K rows times Q8_K activations, as llama.cpp's x86 ggml_vec_dot_q3_K_q8_K sums:
    per block of 256, eight int32 lanes, lane l taking elements 4l..4l+3 of each of the
    eight runs of 32, each times its 16-element scale; each lane added as lane = fma(d *
    d_x, lane sum, lane), then summed as `_sum_lanes`. xq [n, cols] int8, xd [n, cols/32]
    (one per 256, repeated), q [rows, cols] int8 (-4..3), d [rows, cols/256], sc
    [rows, cols/16] int8 (the file's scale - 32) -> out [n, rows]."""
    rows, cols = q.shape
    n = xq.shape[0]
    for j in nb.prange(rows):
        acc = np.empty(8, np.float32)
        lanes = np.empty(8, np.int32)
        for i in range(n):
            acc[:] = 0
            for s in range(cols // 256):
                base = 256 * s
                lanes[:] = 0
                for c in range(8):                 # runs of 32
                    for lane in range(8):
                        k = base + 32 * c + 4 * lane
                        p = np.int32(0)
                        for e in range(k, k + 4):
                            p += np.int32(q[j, e]) * np.int32(xq[i, e])
                        lanes[lane] += np.int32(sc[j, (k - base) // 16 + 16 * s]) * p
                for lane in range(8):
                    acc[lane] = fma(xd[i, 8 * s] * d[j, s], np.float32(lanes[lane]), acc[lane])
            out[i, j] = _sum_lanes(acc)


@_exact
def product_q5_k(xq, xd, q, d, dmin, sc, m, out):
    """Q5_K rows times Q8_K activations, as llama.cpp's x86 ggml_vec_dot_q5_K_q8_K sums:
    per block of 256, eight int32 lanes, lane l taking elements 4l..4l+3 of each of the
    eight sub-blocks of 32 times its scale, added as lane = fma(d * d_x, lane sum, lane);
    and a float32 sum of -(d_x * dmin) times the block's integer sum of m * sum(x) (fma),
    added after `_sum_lanes`. xq [n, cols] int8, xd [n, cols/32] (one per 256, repeated),
    q [rows, cols] int8 (0..31), d, dmin [rows, cols/256], sc, m [rows, cols/32] uint8
    -> out [n, rows]."""
    rows, cols = q.shape
    n = xq.shape[0]
    for j in nb.prange(rows):
        acc = np.empty(8, np.float32)
        lanes = np.empty(8, np.int32)
        for i in range(n):
            acc[:] = 0
            minimum = np.float32(0)
            for s in range(cols // 256):
                base = 256 * s
                lanes[:] = 0
                imin = np.int32(0)
                for c in range(8):                 # sub-blocks of 32
                    x_sum = np.int32(0)
                    for lane in range(8):
                        k = base + 32 * c + 4 * lane
                        p = np.int32(0)
                        for e in range(k, k + 4):
                            p += np.int32(q[j, e]) * np.int32(xq[i, e])
                            x_sum += np.int32(xq[i, e])
                        lanes[lane] += np.int32(sc[j, 8 * s + c]) * p
                    imin += np.int32(m[j, 8 * s + c]) * x_sum
                dx = xd[i, 8 * s]
                minimum = fma(-(dx * dmin[j, s]), np.float32(imin), minimum)
                for lane in range(8):
                    acc[lane] = fma(dx * d[j, s], np.float32(lanes[lane]), acc[lane])
            out[i, j] = _sum_lanes(acc) + minimum


@_exact
def product_k_tiled(xq, xd, q, d, dmin, sc, m, out):
    """K-quant rows with a minimum (Q5_K's, sub-blocks of 32) times Q8_K activations as
    llama.cpp's tiled x86 kernel sums them when eight or more activation rows arrive at
    once (ggml-cpu/tiled, AVX512-VNNI microtile): per block of 256 one exact integer sum
    s1 of sc * q * x and one s2 of m * sum(x); result = fma(-dmin, s2, s1 * d) in float32,
    then out = fma(result, d_x, out), block after block. Shapes as `product_q5_k`."""
    rows, cols = q.shape
    n = xq.shape[0]
    for j in nb.prange(rows):
        for i in range(n):
            total = np.float32(0)
            for s in range(cols // 256):
                s1, s2 = np.int32(0), np.int32(0)
                for c in range(8):
                    p, x_sum = np.int32(0), np.int32(0)
                    for e in range(256 * s + 32 * c, 256 * s + 32 * c + 32):
                        p += np.int32(q[j, e]) * np.int32(xq[i, e])
                        x_sum += np.int32(xq[i, e])
                    s1 += np.int32(sc[j, 8 * s + c]) * p
                    s2 += np.int32(m[j, 8 * s + c]) * x_sum
                result = fma(-dmin[j, s], np.float32(s2), np.float32(s1) * d[j, s])
                total = fma(result, xd[i, 8 * s], total)
            out[i, j] = total


@_exact
def product_16_tiled(xq, xd, q, d, sc, out):
    """Q3_K and Q6_K rows times Q8_K activations as llama.cpp's tiled x86 kernel sums them
    when eight or more activation rows arrive at once (ggml-cpu/tiled, AVX512-VNNI
    microtile, no minimum): per block of 256 one exact integer sum of sc * q * x, then
    out = out + (isum * d) * d_x in float32, block after block (the compiler fuses the
    last multiply and add). q [rows, cols] int8 (the signed quants), d [rows, cols/256],
    sc [rows, cols/16] int8; other shapes as `product_q6_k`."""
    rows, cols = q.shape
    n = xq.shape[0]
    for j in nb.prange(rows):
        for i in range(n):
            total = np.float32(0)
            for s in range(cols // 256):
                isum = np.int32(0)
                for g in range(16):
                    p = np.int32(0)
                    for e in range(256 * s + 16 * g, 256 * s + 16 * g + 16):
                        p += np.int32(q[j, e]) * np.int32(xq[i, e])
                    isum += np.int32(sc[j, g + 16 * s]) * p
                total = fma(np.float32(isum) * d[j, s], xd[i, 8 * s], total)
            out[i, j] = total


def times_rows(m, x: np.ndarray, lock, batch: int | None = None) -> np.ndarray:  # BlockMatrix [rows, cols], x [n, cols] -> [n, rows]
    """x @ m.T with x rounded to 8 bits as llama.cpp rounds it for m's block type, each
    row summed as llama.cpp sums it when it multiplies `batch` rows at once (default: as
    many as it takes of x's at a time, `UBATCH`). The order depends on that number for
    Q3_K, Q5_K and Q6_K (eight or more take the tiled kernel), Q2_K and Q4_K (four or more:
    groups of four are summed otherwise than the rest)."""
    product = globals()[m.layout.product]        # the loop the matrix's layout names (`quant_types`)
    xq, xd, xs = quantize_rows(x, m.activations)
    out = np.empty((x.shape[0], m.shape[0]), np.float32)
    with lock:
        for start in range(0, x.shape[0], UBATCH):
            rows = slice(start, start + UBATCH)
            product(m, xq[rows], xd[rows], xs[rows], out[rows], batch or len(xq[rows]))
    return out


# Each layout's product of rows already rounded (`times_rows`), as llama.cpp orders it:
# m a BlockMatrix [rows, cols], xq [n, cols] int8, xd, xs [n, cols/32] -> out [n, rows],
# for a batch of `batch` rows.

def times_8bit_lanes(m, xq, xd, xs, out, batch: int) -> None:  # Q8_0, Q5_0
    product_8bit_lanes(xq, xd, m.q, m.scale, out)


def times_q4_0(m, xq, xd, xs, out, batch: int) -> None:
    product_4bit_lanes(xq, xd, xs, m.q, m.scale, m.offset, 8, out)


def times_q4_1(m, xq, xd, xs, out, batch: int) -> None:
    product_4bit_lanes(xq, xd, xs, m.q, m.scale, m.offset, 0, out)


def times_q4_k(m, xq, xd, xs, out, batch: int) -> None:  # four rows at a time, then one by one
    whole = len(xq) - len(xq) % 4 if batch > 3 else 0
    for rows, run in ((slice(0, whole), 64), (slice(whole, None), 256)):
        if len(xq[rows]):
            product_q4_k(xq[rows], xd[rows], m.q, *m.k_parts, out[rows], run)


def times_q5_1(m, xq, xd, xs, out, batch: int) -> None:
    product_8bit_offset_lanes(xq, xd, xs, m.q, m.scale, m.offset, out)


def times_q2_k(m, xq, xd, xs, out, batch: int) -> None:  # four rows at a time, then one by one
    whole = len(xq) - len(xq) % 4 if batch > 3 else 0
    for rows, run in ((slice(0, whole), 128), (slice(whole, None), 256)):
        if len(xq[rows]):
            product_q2_k(xq[rows], xd[rows], m.q, *m.k_parts, out[rows], run)


def times_q3_k(m, xq, xd, xs, out, batch: int) -> None:
    (product_16_tiled if batch >= 8 else product_q3_k)(xq, xd, m.q, *m.k_parts, out)


def times_q5_k(m, xq, xd, xs, out, batch: int) -> None:
    (product_k_tiled if batch >= 8 else product_q5_k)(xq, xd, m.q, *m.k_parts, out)


def times_q6_k(m, xq, xd, xs, out, batch: int) -> None:
    (product_16_tiled if batch >= 8 else product_q6_k)(xq, xd, m.q, *m.k_parts, out)
