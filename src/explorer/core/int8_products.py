"""Products with 8-bit activations, as llama.cpp's CPU backend computes them (numba).

llama.cpp does not multiply a quantised weight matrix by float activations: it first
rounds each activation row to 8-bit integers with a scale per block (its "vec_dot type"),
multiplies integers by integers, sums them in int32 per block, and only then scales:

    weights                 activations   activation blocks
    Q4_0, Q5_0, Q8_0        Q8_0          32 elements: d = max|x| / 127 (kept as float16),
                                          q = round(x * 127 / max|x|), ties to even
    Q4_1                    Q8_1          as Q8_0, plus s = d * sum(q) as float16 (the
                                          block's offset multiplies it)
    Q4_K, Q6_K              Q8_K          256 elements: max = the element of largest |x|,
                                          q = min(127, round(-127 / max * x)),
                                          d = 1 / (-127 / max) (float32)

A weight block (`block_kernels`' layouts: value = q_w * scale + offset) times an
activation block (value = q_x * d) is then
    scale * d * sum(q_w * q_x) + offset * d * sum(q_x)
with both sums exact integers: the only roundings are the activations' and a few float32
products per block. These loops compute exactly that for every weight layout the model
files use (4-bit rows: Q4_0, Q4_1, Q4_K; 8-bit rows with a scale per 32: Q5_0, Q8_0, or
per 16: Q6_K).

Activation rows [n, cols] become (q [n, cols] int8, d [n, cols/32] float32, s [n, cols/32]
float32): per 32 elements the scale (Q8_K's one per 256, repeated) and the number an
offset multiplies (d * sum(q), Q8_1's float16 s).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .block_kernels import _compiled
from .layers import to_half

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
            amax = np.float32(0)
            for k in range(32):
                a = abs(x[i, 32 * b + k])
                if not a <= amax:                  # NaN propagates
                    amax = a
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
            amax, peak = np.float32(0), np.float32(0)
            for k in range(256):
                v = x[i, 256 * b + k]
                if not abs(v) <= amax:             # NaN propagates
                    amax, peak = abs(v), v
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


@_compiled(parallel=True)
def product_4bit(xq, xd, xs, q, scale, offset, out):
    """out[i, j] = sum over blocks b of scale[j, b] * xd[i, b] * sum(nibbles * xq) +
    offset[j, b] * xs[i, b]: xq [n, cols] int8, xd, xs [n, cols/32], q [rows, cols/2] uint8
    (byte k of block b: element 32b + k low, 32b + 16 + k high), scale, offset [rows, cols/32]
    -> out [n, rows]."""
    rows, half = q.shape
    n = xq.shape[0]
    low, shift = np.uint8(15), np.uint8(4)
    for j in nb.prange(rows):
        for i in range(n):
            s = np.float32(0)
            for b in range(half // 16):
                acc = np.int32(0)
                for k in range(16):
                    v = q[j, 16 * b + k]
                    acc += (np.int32(v & low) * np.int32(xq[i, 32 * b + k])
                            + np.int32(v >> shift) * np.int32(xq[i, 32 * b + 16 + k]))
                s += scale[j, b] * xd[i, b] * np.float32(acc) + offset[j, b] * xs[i, b]
            out[i, j] = s


def _product_8bit(shift: int):
    """The 8-bit product for rows with a scale per 1 << shift elements (5: per 32, 4: Q6_K's
    per 16), the shift folded in when it compiles (as `block_kernels._eight_bit_loops`)."""
    per = 1 << shift

    @_compiled(parallel=True)
    def product_8bit(xq, xd, q, scale, out):
        """out[i, j] = sum over blocks b of scale[j, b] * xd[i, b's 32-block] * sum(q * xq):
        xq [n, cols] int8, xd [n, cols/32], q [rows, cols] int8, scale [rows, cols >> shift]
        -> out [n, rows]."""
        rows, cols = q.shape
        n = xq.shape[0]
        for j in nb.prange(rows):
            for i in range(n):
                s = np.float32(0)
                for b in range(cols >> shift):
                    acc = np.int32(0)
                    for k in range(per * b, per * b + per):
                        acc += np.int32(q[j, k]) * np.int32(xq[i, k])
                    s += scale[j, b] * xd[i, (b * per) >> 5] * np.float32(acc)
                out[i, j] = s

    return product_8bit


PRODUCT_8BIT = {5: _product_8bit(5), 4: _product_8bit(4)}    # shift -> loop


def times_rows(m, x: np.ndarray, lock) -> np.ndarray:  # BlockMatrix [rows, cols], x [n, cols] -> [n, rows]
    """x @ m.T with x rounded to 8 bits as llama.cpp rounds it for m's block type."""
    xq, xd, xs = quantize_rows(x, m.activations)
    out = np.empty((x.shape[0], m.shape[0]), np.float32)
    with lock:
        if m.offset is None:
            PRODUCT_8BIT[m.group.bit_length() - 1](xq, xd, m.q, m.scale, out)
        else:
            product_4bit(xq, xd, xs, m.q, m.scale, m.offset, out)
    return out
