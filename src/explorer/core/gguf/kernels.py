"""Compiled loops (numba) that multiply float32 rows by GGUF's 4- and 8-bit weight blocks,
unpacking each weight where it is used; `blocks` calls them."""

from __future__ import annotations

import os

# numba's parallel loops run on GNU OpenMP (libgomp), which reads its settings when numba
# first launches a loop, after this. By default a thread that waits (the worker between
# two products, the caller at a product's end) spins 300,000 times before it sleeps.
# On two cores shared with anything else (the window's own UI thread, another program)
# the two spinning threads of a product take turns on one core, each waiting out the
# other's spin: with two busy processes, SmolLM2's Decode step took a median of 80 ms
# (single steps up to 1.2 s). Sleeping at once (OMP_WAIT_POLICY=passive) cures that but
# costs every launch a wake-up: a quiet machine's Decode went from 11 to 19-21 ms. A short
# spin, then sleep, keeps most of both (bench_rows.py, Decode / 8 new rows, medians):
#                 spin 300,000       spin 0               spin 1,000
#     quiet       11 / 28 ms         19-21 / 34-38 ms     12 / 28 ms
#     1 busy      23-24 / 59-151     19-20 / 46           25 / 52
#     2 busy      80 / 91            19-40 / 46-80        25-36 / 52-80
# Settings the user makes (either variable) stay as they are.
if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    os.environ.update(OMP_WAIT_POLICY="PASSIVE", GOMP_SPINCOUNT="1000")

import numba as nb  # noqa: E402  (after the policy: see above)
import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from .quant_types import LAYOUTS  # noqa: E402

# A matrix [rows, cols] is stored as GGUF stores it, each row in blocks of 32:
#     4-bit  q [rows, cols/2] uint8: byte k of block b holds element 32b + k (low nibble)
#            and element 32b + 16 + k (high nibble); value = nibble * scale + offset
#            (Q4_1: offset = the block's minimum; Q4_0: offset = -8 * scale)
#     8-bit  q [rows, cols] int8; value = q * scale, or q * scale + offset (Q5_1, Q5_K, Q2_K)
#     scale, offset [rows, cols/32] float32, one per block (8-bit rows made from Q2_K, Q3_K
#     and Q6_K have one per 16 elements: their own pairs of 8-bit loops, `EIGHT_BIT`)
# The K-quants, Q5_0 and Q5_1 are rewritten in these layouts at load (`unpack`).
# A 4-bit row unpacks in nibble order: the low nibbles of all its bytes first (positions
# 0..cols/2-1), then the high nibbles; the input rows are permuted to the same order
# (`blocks.nibble_order`) once per product.
# Unpacking is exact (a 4- or 8-bit integer times a float16 scale fits a float32); the dot
# products reassociate their sums (fastmath "reassoc"), so they round differently from a
# BLAS product over the dequantised matrix, as two BLAS builds would.

# From now on this process's BLAS (OpenBLAS, under numpy) runs on one thread. A model
# whose weights go through these loops uses BLAS only for its attention, and two thread
# pools on two cores take turns spinning: a Prefill of 200 tokens took 1.2 s with
# OpenBLAS's threads waking between these loops, 0.48 s without them.
threadpool_limits(1, user_api="blas")

_OPTIONS = dict(nogil=True, boundscheck=False, error_model="numpy",
                fastmath={"reassoc", "contract"})   # not nnan/ninf: a nan must still show


def _compiled(parallel: bool = False, exact: bool = False):
    """numba's njit, with its compiled code cached beside this file or in the user's
    cache folder. When neither can be written (a read-only install and home), numba
    refuses to cache: the loops then compile at every start (about 4 s) instead of the
    model failing to load. `exact`: IEEE float arithmetic in the order written, without
    fastmath (llama.cpp's sums, `ggml_arithmetic`, `int8_products`)."""
    options = {k: v for k, v in _OPTIONS.items() if k != "fastmath"} if exact else _OPTIONS

    def wrap(f):
        try:
            return nb.njit(parallel=parallel, cache=True, **options)(f)
        except RuntimeError as exc:
            if "cannot cache" not in str(exc):
                raise
            return nb.njit(parallel=parallel, **options)(f)
    return wrap


GROUP = 4        # weight rows unpacked together: each input element loaded serves four
# A product of several rows splits its groups of weight rows into at most PARTS runs of
# consecutive groups, one buffer each (the threads take whole runs): a buffer per group
# cost an allocation per four weight rows, 12,288 of them for SmolLM2's output head.
PARTS = 64


@_compiled(parallel=True)
def matvec_4bit(x, q, scale, offset, out):
    """out = w @ x for one input row (a decode step): x [cols] float32 in nibble order,
    q [rows, cols/2] uint8, scale, offset [rows, cols/32] -> out [rows]. Each weight is
    unpacked and used at once, in registers."""
    rows, half = q.shape
    low, shift = np.uint8(15), np.uint8(4)     # uint8 constants keep the unpacking 8-bit
    for j in nb.prange(rows):
        s = np.float32(0)
        for t in range(half):
            v = q[j, t]
            d, m = scale[j, t >> 4], offset[j, t >> 4]
            s += (x[t] * (np.float32(np.uint8(v & low)) * d + m)
                  + x[half + t] * (np.float32(np.uint8(v >> shift)) * d + m))
        out[j] = s


@_compiled()
def _dots(x, w, j0, count, out):
    """out[i, j0 + r] = x[i] . w[r] for every input row i and r < count:
    x [n, cols], w [GROUP, cols] -> out [n, rows]."""
    n, cols = x.shape
    if count < GROUP:                          # the short last group of a matrix
        for i in range(n):
            for r in range(count):
                s = np.float32(0)
                for c in range(cols):
                    s += x[i, c] * w[r, c]
                out[i, j0 + r] = s
        return
    for i in range(0, n - 1, 2):               # two input rows by four weight rows
        a0 = a1 = a2 = a3 = b0 = b1 = b2 = b3 = np.float32(0)
        for c in range(cols):
            x0, x1 = x[i, c], x[i + 1, c]
            w0, w1, w2, w3 = w[0, c], w[1, c], w[2, c], w[3, c]
            a0 += x0 * w0
            a1 += x0 * w1
            a2 += x0 * w2
            a3 += x0 * w3
            b0 += x1 * w0
            b1 += x1 * w1
            b2 += x1 * w2
            b3 += x1 * w3
        out[i, j0], out[i, j0 + 1], out[i, j0 + 2], out[i, j0 + 3] = a0, a1, a2, a3
        out[i + 1, j0], out[i + 1, j0 + 1], out[i + 1, j0 + 2], out[i + 1, j0 + 3] = b0, b1, b2, b3
    if n % 2:                                  # an odd last row
        i = n - 1
        a0 = a1 = a2 = a3 = np.float32(0)
        for c in range(cols):
            x0 = x[i, c]
            a0 += x0 * w[0, c]
            a1 += x0 * w[1, c]
            a2 += x0 * w[2, c]
            a3 += x0 * w[3, c]
        out[i, j0], out[i, j0 + 1], out[i, j0 + 2], out[i, j0 + 3] = a0, a1, a2, a3


@_compiled(parallel=True)
def matmul_4bit(x, q, scale, offset, out):
    """out = x @ w.T: x [n, cols] float32 in nibble order, q [rows, cols/2] uint8,
    scale, offset [rows, cols/32] -> out [n, rows]."""
    rows, half = q.shape
    low, shift = np.uint8(15), np.uint8(4)     # as in matvec_4bit
    groups = (rows + GROUP - 1) // GROUP
    parts = min(groups, PARTS)
    for p in nb.prange(parts):
        # unpacked here, not in a helper: into a buffer allocated in this function the
        # compiler knows nothing else writes, so it vectorises the loop (4x faster)
        w = np.empty((GROUP, 2 * half), np.float32)
        for g in range(p * groups // parts, (p + 1) * groups // parts):
            j0 = g * GROUP
            for r in range(min(GROUP, rows - j0)):
                for t in range(half):
                    v = q[j0 + r, t]
                    d, m = scale[j0 + r, t >> 4], offset[j0 + r, t >> 4]
                    w[r, t] = np.float32(np.uint8(v & low)) * d + m
                    w[r, half + t] = np.float32(np.uint8(v >> shift)) * d + m
            _dots(x, w, j0, min(GROUP, rows - j0), out)


def _eight_bit_loops(shift: int, offset: bool):
    """The two 8-bit loops for rows with a scale (and, with `offset`, an offset) per
    1 << shift elements (5: per 32; 4: per 16, Q2_K's, Q3_K's and Q6_K's). The shift is a
    constant of each pair, folded in when it compiles: passed as an argument it kept the
    loops from vectorising (a 262,144-row product: 138 ms, not 24)."""
    if offset:
        return _offset_loops(shift)

    @_compiled(parallel=True)
    def matvec_8bit(x, q, scale, out):
        """out = w @ x for one input row: x [cols] float32, q [rows, cols] int8,
        scale [rows, cols >> shift] -> out [rows]."""
        for j in nb.prange(q.shape[0]):
            s = np.float32(0)
            for t in range(q.shape[1]):
                s += x[t] * (np.float32(q[j, t]) * scale[j, t >> shift])
            out[j] = s

    @_compiled(parallel=True)
    def matmul_8bit(x, q, scale, out):
        """out = x @ w.T: x [n, cols] float32, q [rows, cols] int8, scale [rows, cols >> shift]
        -> out [n, rows]."""
        rows, cols = q.shape
        groups = (rows + GROUP - 1) // GROUP
        parts = min(groups, PARTS)
        for p in nb.prange(parts):                           # as in matmul_4bit
            w = np.empty((GROUP, cols), np.float32)
            for g in range(p * groups // parts, (p + 1) * groups // parts):
                j0 = g * GROUP
                for r in range(min(GROUP, rows - j0)):
                    for t in range(cols):
                        w[r, t] = np.float32(q[j0 + r, t]) * scale[j0 + r, t >> shift]
                _dots(x, w, j0, min(GROUP, rows - j0), out)

    return matvec_8bit, matmul_8bit


def _offset_loops(shift: int):
    """`_eight_bit_loops` of rows whose value is q * scale + offset (Q5_1, Q5_K, Q2_K: an
    unsigned q and a minimum). q * scale is exact, so a fused multiply-add rounds the value
    as the `gguf` package's dequantiser does, once."""

    @_compiled(parallel=True)
    def matvec_8bit_offset(x, q, scale, offset, out):
        """out = w @ x for one input row: x [cols] float32, q [rows, cols] int8,
        scale, offset [rows, cols >> shift] -> out [rows]."""
        for j in nb.prange(q.shape[0]):
            s = np.float32(0)
            for t in range(q.shape[1]):
                s += x[t] * (np.float32(q[j, t]) * scale[j, t >> shift] + offset[j, t >> shift])
            out[j] = s

    @_compiled(parallel=True)
    def matmul_8bit_offset(x, q, scale, offset, out):
        """out = x @ w.T: x [n, cols] float32, q [rows, cols] int8, scale, offset
        [rows, cols >> shift] -> out [n, rows]."""
        rows, cols = q.shape
        groups = (rows + GROUP - 1) // GROUP
        parts = min(groups, PARTS)
        for p in nb.prange(parts):                           # as in matmul_4bit
            w = np.empty((GROUP, cols), np.float32)
            for g in range(p * groups // parts, (p + 1) * groups // parts):
                j0 = g * GROUP
                for r in range(min(GROUP, rows - j0)):
                    for t in range(cols):
                        w[r, t] = (np.float32(q[j0 + r, t]) * scale[j0 + r, t >> shift]
                                   + offset[j0 + r, t >> shift])
                _dots(x, w, j0, min(GROUP, rows - j0), out)

    return matvec_8bit_offset, matmul_8bit_offset


# (elements per scale, offset) -> (matvec, matmul), for each kind of 8-bit rows the layouts have
EIGHT_BIT = {(group, offset): _eight_bit_loops(group.bit_length() - 1, offset)
             for group, offset in dict.fromkeys((lo.group, lo.offset) for lo in LAYOUTS.values() if lo.bits == 8)}
