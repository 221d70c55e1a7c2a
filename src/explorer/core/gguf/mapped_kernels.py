"""Compiled loops (numba) that multiply float32 rows by a GGUF file's own Q8_0, Q5_0,
Q4_K and Q6_K blocks (the types of the Q4_K_M and Q8_0 downloads), read in place from the
mapped file (`blocks.MappedMatrix`): nothing is copied or rewritten at load, and a product
reads the file's bits per weight (8.5, 5.5, 4.5, 6.56), not the rewritten rows' (`kernels`:
9, 9, 6.75, 10.6 with their float32 scales).

A matrix [rows, cols] is a tuple of parts, raw bytes [rows_i, cols / block * block bytes]
uint8 whose rows, one part after another, are its rows (a layer's Q, K and V, three
tensors of the file, are one matrix); each row is GGUF's blocks (`unpack`'s table).
The float16 scales are read through a table of every float16's float32 value (`HALF`),
so each weight is exactly the value the rewritten rows hold (and `gguf.dequantize`
gives). A Prefill's product unpacks four weight rows at a time into float32 and sums them
as `kernels` does (`kernels._dots`, in the same element order): the same sums, bit for
bit, as the rewritten rows'. A Decode step sums each row in blocks (fastmath "reassoc",
as `kernels`), which may round otherwise in the last place."""

from __future__ import annotations

import numba as nb
import numpy as np

from .kernels import GROUP, PARTS, _compiled, _dots

# float16 bits -> its float32 value (256 kB), as numpy converts them (subnormals, inf, nan)
HALF = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
Q8_0_BYTES, Q5_0_BYTES, Q4_K_BYTES, Q6_K_BYTES = 34, 22, 144, 210
# Every loop is handed the length of its innermost runs, 16 (`RUN`), as an argument: with a
# constant the compiler unrolls those runs before it vectorises, and the loops took ten
# times as long (a Q8_0 Decode product of 20,000 x 896: 15-20 ms instead of 1.5-3)
RUN = 16


@_compiled()
def _scale(row, at, half):  # -> the float16 at bytes at, at + 1 of a row, as float32
    return half[np.int32(row[at]) | (np.int32(row[at + 1]) << 8)]


@_compiled()
def _unpack_q8_0(row, half, n, w):  # row [cols / 32 * 34] uint8 -> w [cols] float32; n = RUN
    for b in range(w.shape[0] // 32):
        o = Q8_0_BYTES * b
        d = _scale(row, o, half)
        for k in range(2 * n):
            w[32 * b + k] = np.float32(np.int8(row[o + 2 + k])) * d


@_compiled()
def _unpack_q5_0(row, half, n, w):  # row [cols / 32 * 22] uint8 -> w [cols] float32; n = RUN
    for b in range(w.shape[0] // 32):
        o = Q5_0_BYTES * b
        d = _scale(row, o, half)
        qh = (np.uint32(row[o + 2]) | (np.uint32(row[o + 3]) << 8) | (np.uint32(row[o + 4]) << 16)
              | (np.uint32(row[o + 5]) << 24))
        for k in range(n):
            v = np.int32(row[o + 6 + k])
            low = (v & 15) | (np.int32((qh >> k) & 1) << 4)
            high = (v >> 4) | (np.int32((qh >> (k + 16)) & 1) << 4)
            w[32 * b + k] = np.float32(low - 16) * d
            w[32 * b + 16 + k] = np.float32(high - 16) * d


@_compiled()
def _row(parts, j):  # -> row j of the matrix whose rows are those of parts[0], then parts[1], ...
    j = np.int64(j)                                      # (a prange index is unsigned)
    for p in range(len(parts)):
        n = parts[p].shape[0]
        if j < n:
            return parts[p][j]
        j -= n
    return parts[0][0]                                   # (j < the rows of all the parts)


@_compiled(parallel=True)
def matvec_q8_0(x, parts, half, n, out):
    """out = w @ x for one input row (a Decode step): x [cols] float32, parts a tuple of
    raw [rows_i, cols / 32 * 34] uint8 Q8_0 blocks whose rows, one part after another, are
    w's, n = RUN -> out [sum rows_i]."""
    cols = x.shape[0]
    for j in nb.prange(out.shape[0]):
        row = _row(parts, j)
        s = np.float32(0)
        for b in range(cols // 32):
            o = Q8_0_BYTES * b
            d = half[np.int32(row[o]) | (np.int32(row[o + 1]) << 8)]
            t = np.float32(0)
            for k in range(2 * n):
                t += x[32 * b + k] * np.float32(np.int8(row[o + 2 + k]))
            s += t * d
        out[j] = s


@_compiled(parallel=True)
def matvec_q5_0(x, parts, half, n, out):
    """out = w @ x for one input row: x [cols] float32, parts of raw [rows_i, cols / 32 * 22]
    uint8 Q5_0 blocks (as matvec_q8_0's) -> out [sum rows_i]."""
    cols = x.shape[0]
    for j in nb.prange(out.shape[0]):
        row = _row(parts, j)
        s = np.float32(0)
        for b in range(cols // 32):
            o = Q5_0_BYTES * b
            d = half[np.int32(row[o]) | (np.int32(row[o + 1]) << 8)]
            qh = (np.uint32(row[o + 2]) | (np.uint32(row[o + 3]) << 8)
                  | (np.uint32(row[o + 4]) << 16) | (np.uint32(row[o + 5]) << 24))
            t = np.float32(0)
            for k in range(n):
                v = np.int32(row[o + 6 + k])
                low = (v & 15) | (np.int32((qh >> k) & 1) << 4)
                high = (v >> 4) | (np.int32((qh >> (k + 16)) & 1) << 4)
                t += x[32 * b + k] * np.float32(low - 16) + x[32 * b + 16 + k] * np.float32(high - 16)
            s += t * d
        out[j] = s


@_compiled()
def _q4_k_scales(row, o, half, sc, off):  # super-block at byte o -> sc, off [8] float32
    """Q4_K's (and Q5_K's) eight sub-block scales d * sc and offsets -(dmin * m), from its
    6-bit scales and minimums (`unpack._scales_and_minimums`)."""
    d, dmin = _scale(row, o, half), _scale(row, o + 2, half)
    for s in range(8):
        if s < 4:
            a, m = np.int32(row[o + 4 + s]) & 63, np.int32(row[o + 8 + s]) & 63
        else:
            a = (np.int32(row[o + 8 + s]) & 15) | ((np.int32(row[o + s]) >> 6) << 4)
            m = (np.int32(row[o + 8 + s]) >> 4) | ((np.int32(row[o + 4 + s]) >> 6) << 4)
        sc[s] = d * np.float32(a)
        off[s] = -(dmin * np.float32(m))


@_compiled()
def _unpack_q4_k(row, half, n, w):  # row [cols / 256 * 144] uint8 -> w [cols] float32, in nibble order
    """Into `kernels`' nibble order (`blocks.nibble_order`: of each block of 32, elements
    0-15 at 16b.., 16-31 at cols/2 + 16b..), so that a Prefill's sums are the rewritten
    4-bit rows' own, bit for bit. n = RUN."""
    cols = w.shape[0]
    sc, off = np.empty(8, np.float32), np.empty(8, np.float32)
    for b in range(cols // 256):
        o = Q4_K_BYTES * b
        _q4_k_scales(row, o, half, sc, off)
        for s in range(8):
            shift = 4 * (s & 1)
            at = o + 16 + 32 * (s >> 1)
            block = 8 * b + s                                 # its block of 32 in the row
            for k in range(n):                                # elements 0-15, then 16-31 of the block
                w[16 * block + k] = np.float32((np.int32(row[at + k]) >> shift) & 15) * sc[s] + off[s]
                w[cols // 2 + 16 * block + k] = (np.float32((np.int32(row[at + 16 + k]) >> shift) & 15) * sc[s]
                                                 + off[s])


@_compiled()
def _unpack_q6_k(row, half, n, w):  # row [cols / 256 * 210] uint8 -> w [cols] float32; n = RUN
    """Element 128h + 32c + l (h < 2, c < 4, l < 32) of a super-block: the low nibble (c < 2)
    or high nibble of ql[64h + 32(c % 2) + l], and bits 2c, 2c + 1 of qh[32h + l] above
    them, minus 32; a scale per 16."""
    for b in range(w.shape[0] // 256):
        o = Q6_K_BYTES * b
        d = _scale(row, o + 208, half)
        for h in range(2):
            for c in range(4):
                low_at, high_at = o + 64 * h + 32 * (c & 1), o + 128 + 32 * h
                shift, e = 4 * (c >> 1), 256 * b + 128 * h + 32 * c
                for g in range(2):
                    scale = d * np.float32(np.int8(row[o + 192 + 8 * h + 2 * c + g]))
                    for k in range(16 * g, 16 * g + n):
                        q = ((np.int32(row[low_at + k]) >> shift) & 15) | (
                            ((np.int32(row[high_at + k]) >> (2 * c)) & 3) << 4)
                        w[e + k] = np.float32(q - 32) * scale


@_compiled(parallel=True)
def matvec_q4_k(x, parts, half, n, out):
    """out = w @ x for one input row: x [cols] float32 (in its own order), parts of raw
    [rows_i, cols / 256 * 144] uint8 Q4_K blocks (as matvec_q8_0's) -> out [sum rows_i]."""
    cols = x.shape[0]
    for j in nb.prange(out.shape[0]):
        row = _row(parts, j)
        sc, off = np.empty(8, np.float32), np.empty(8, np.float32)
        s = np.float32(0)
        for b in range(cols // 256):
            o = Q4_K_BYTES * b
            _q4_k_scales(row, o, half, sc, off)
            for p in range(4):                                # pairs of sub-blocks share 32 bytes
                at, e = o + 16 + 32 * p, 256 * b + 64 * p
                d0, m0, d1, m1 = sc[2 * p], off[2 * p], sc[2 * p + 1], off[2 * p + 1]
                for k in range(2 * n):
                    v = np.int32(row[at + k])
                    s += (x[e + k] * (np.float32(v & 15) * d0 + m0)
                          + x[e + 32 + k] * (np.float32(v >> 4) * d1 + m1))
        out[j] = s


@_compiled(parallel=True)
def matvec_q6_k(x, parts, half, n, out):
    """out = w @ x for one input row: x [cols] float32, parts of raw [rows_i, cols / 256 *
    210] uint8 Q6_K blocks (as matvec_q8_0's; elements as `_unpack_q6_k` reads them)
    -> out [sum rows_i]."""
    cols = x.shape[0]
    for j in nb.prange(out.shape[0]):
        row = _row(parts, j)
        s = np.float32(0)
        for b in range(cols // 256):
            o = Q6_K_BYTES * b
            d = _scale(row, o + 208, half)
            for h in range(2):
                for c in range(4):
                    low_at, high_at = o + 64 * h + 32 * (c & 1), o + 128 + 32 * h
                    shift, e = 4 * (c >> 1), 256 * b + 128 * h + 32 * c
                    for g in range(2):
                        t = np.float32(0)
                        for k in range(16 * g, 16 * g + n):
                            q = ((np.int32(row[low_at + k]) >> shift) & 15) | (
                                ((np.int32(row[high_at + k]) >> (2 * c)) & 3) << 4)
                            t += x[e + k] * np.float32(q - 32)
                        s += t * (d * np.float32(np.int8(row[o + 192 + 8 * h + 2 * c + g])))
        out[j] = s


@_compiled()
def _unpack(row, half, kind, n, w):  # one weight row of type `kind` (KINDS) -> w [cols] float32
    if kind == 0:
        _unpack_q8_0(row, half, n, w)
    elif kind == 1:
        _unpack_q5_0(row, half, n, w)
    elif kind == 2:
        _unpack_q4_k(row, half, n, w)
    else:
        _unpack_q6_k(row, half, n, w)


@_compiled(parallel=True)
def matmul(x, parts, half, kind, n, out):
    """out = x @ w.T: x [n, cols] float32 (Q4_K: in nibble order), parts of raw [rows_i, row
    bytes] uint8 of the type KINDS[kind] (as matvec_q8_0's), n = RUN -> out [n, sum
    rows_i]. (One loop for the four types, told apart per row: numba caches a function it
    is handed, not one made for each.)"""
    rows, cols = out.shape[1], x.shape[1]
    groups = (rows + GROUP - 1) // GROUP
    runs = min(groups, PARTS)
    for p in nb.prange(runs):                                # as kernels.matmul_4bit
        w = np.empty((GROUP, cols), np.float32)
        for g in range(p * groups // runs, (p + 1) * groups // runs):
            j0 = g * GROUP
            for r in range(min(GROUP, rows - j0)):
                _unpack(_row(parts, j0 + r), half, kind, n, w[r])
            _dots(x, w, j0, min(GROUP, rows - j0), out)


KINDS = ("Q8_0", "Q5_0", "Q4_K", "Q6_K")
# type name -> (its Decode loop, its `matmul` kind, whether that takes x in nibble order,
# `blocks.nibble_order`)
LOOPS = {"Q8_0": (matvec_q8_0, 0, False), "Q5_0": (matvec_q5_0, 1, False),
         "Q4_K": (matvec_q4_k, 2, True), "Q6_K": (matvec_q6_k, 3, False)}
