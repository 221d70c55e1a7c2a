"""llama.cpp's arithmetic: how its CPU backend rounds a forward, every rule in this file,
and `LLAMA_CPP`, the `models.arithmetic.Arithmetic` a DecoderModel computes in with
`--arithmetic llama.cpp` (`llama.with_arithmetic`).

    products with quantised weights   8-bit activations times the blocks, summed in
                                      llama.cpp's order (`int8_products`, one loop per
                                      block layout, on the fma, float16 rounding and
                                      batch size defined here)
    K and V                           kept as float16 (`to_half`); the queries rounded to
                                      float16 to meet them (`half_queries`)
    RMSNorm                           `rms_norm_ggml`: sums in float64, the rest float32
    GELU                              read from a float16 table (`gelu_half_table`)
    rotary positions                  its tables (`rope_tables_ggml`: powf, cosf, sinf)
                                      and its turn (`rope_ggml`: one fma per element)
    attention                         float16 products (`half_product`: tinyBLAS for a
                                      Prefill, ggml_vec_dot_f16 for a Decode step), its
                                      softmax (`softmax_ggml`: ggml_v_expf, sums in
                                      float64), the weights rounded to float16 before
                                      they multiply V: together `ggml_attention`

Each was matched against llama.cpp's own tensors (llama-cpp-python 0.3.36 on an AVX-512
x86 CPU, read with an eval callback): with them the logits of every step of
tests/fixtures/gemma3_llama_cpp.json are llama.cpp's bit for bit
(tools/compare_gemma3_llama_cpp.py).

The loops round in llama.cpp's order, so they are compiled for IEEE arithmetic
(`kernels._compiled(exact=True)`: no fastmath, which would let the compiler reorder the
sums)."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import math
from dataclasses import dataclass
from typing import ClassVar

import numba as nb
import numpy as np
from numba import types
from numba.extending import intrinsic

from .kernels import _compiled
from ..models.arithmetic import AttentionArithmetic

UBATCH = 512       # llama.cpp multiplies a Prefill's rows this many at a time (its n_ubatch)
_exact = _compiled(parallel=True, exact=True)
# the attention's small loops run on one thread: a Decode step would wait longer for
# the threads to wake than they work
_serial = _compiled(exact=True)


@intrinsic
def fma(typingctx, a, b, c):
    """a * b + c rounded once, the FMA instruction llama.cpp's kernels use (float32)."""
    def codegen(context, builder, signature, args):
        return builder.fma(*args)
    return types.float32(types.float32, types.float32, types.float32), codegen


def to_half(x):  # [...] float32 -> [...] float32 holding float16 values
    """Rounded to the nearest float16 (ties to even, as x86's F16C and llama.cpp do)."""
    return np.asarray(x, np.float32).astype(np.float16).astype(np.float32)


def rms_norm_ggml(x, gamma, eps=1e-5):  # [n, d] float32, [d] -> [n, d] float32
    """`layers.rms_norm` rounded as llama.cpp's CPU backend rounds it: the squares summed in
    float64, their mean, 1 / sqrt(mean + eps) and x times it in float32, then times gamma.
    Bit for bit matters there: 8-bit rounding of the result turns a last-bit difference on
    an exact tie (x / step = 42.5, frequent right after the quantised embedding) into a
    whole step."""
    mean = (np.square(x).astype(np.float64).sum(axis=-1) / x.shape[-1]).astype(np.float32)   # [n]
    scale = np.float32(1) / np.sqrt(mean + np.float32(eps))
    return (x * scale[..., None]) * gamma


@functools.cache
def _gelu_of_every_half() -> np.ndarray:  # [65536] float32, indexed by a float16's bits
    """llama.cpp's GELU table (ggml_table_gelu_f16): for every float16 x, its GELU as
    ggml_gelu_f32 computes it in float32 (1 + 0.044715 x x fused, tanhf), rounded to
    float16. tanh in float64 rounded to float32 stands for tanhf: equal on every entry
    llama.cpp's own products were checked against."""
    x = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):      # NaN and infinite entries stay so
        inner = ((np.float32(0.044715) * x).astype(np.float64) * x + 1).astype(np.float32)   # one rounding
        angle = (np.float32(math.sqrt(2 / math.pi)) * x) * inner
        t = np.tanh(angle.astype(np.float64)).astype(np.float32)
        return to_half((np.float32(0.5) * x) * (np.float32(1) + t))


def gelu_half_table(x):  # [...] float32 -> [...] float32
    """GELU as llama.cpp's CPU backend reads it from its table: x rounded to float16, the
    table's float16 value; 0 at or below -10, x at or above 10."""
    table = _gelu_of_every_half()[np.asarray(x, np.float32).astype(np.float16).view(np.uint16)]
    return np.where(x <= -10, np.float32(0), np.where(x >= 10, x, table))


@nb.njit(inline="always")
def _reduce16(acc):
    """_mm512_reduce_add_ps of sixteen float32 lanes as GCC writes it: halves, halves,
    then pairs."""
    h0, h1, h2, h3 = acc[8] + acc[0], acc[9] + acc[1], acc[10] + acc[2], acc[11] + acc[3]
    h4, h5, h6, h7 = acc[12] + acc[4], acc[13] + acc[5], acc[14] + acc[6], acc[15] + acc[7]
    q0, q1, q2, q3 = h4 + h0, h5 + h1, h6 + h2, h7 + h3
    return (q0 + q2) + (q1 + q3)


@_serial
def _lanes64(a, c, out):
    """out[i, j] = sum over k of a[i, k] * c[j, k] as llama.cpp's ggml_vec_dot_f16 sums
    float16 rows on an AVX-512 CPU (a single query, where tinyBLAS is not used): four
    accumulators of sixteen float32 lanes over each run of 64 (accumulator r, lane l
    takes k = 64 b + 16 r + l, added by fma), folded as (0 + 2) + (1 + 3), then
    `_reduce16`. llama.cpp's rows are padded with zeros to a multiple of 256, so a tail
    shorter than 64 is summed the same way. a [r, k], c [s, k] -> out [r, s]."""
    rows, width = a.shape
    for i in range(rows):
        acc = np.empty(64, np.float32)
        lanes = np.empty(16, np.float32)
        for j in range(c.shape[0]):
            acc[:] = 0
            for k in range(width):
                acc[k & 63] = fma(a[i, k], c[j, k], acc[k & 63])
            for t in range(16):
                lanes[t] = (acc[t] + acc[t + 32]) + (acc[t + 16] + acc[t + 48])
            out[i, j] = _reduce16(lanes)


@_exact
def _lanes16(a, c, out):
    """out[i, j] = sum over k of a[i, k] * c[j, k] in the order llama.cpp's tinyBLAS sums
    float16 rows on an AVX-512 CPU (two or more queries): sixteen float32 lanes (lane l
    takes k = l, l + 16, ...), each product added by fma, then `_reduce16`. a [r, k],
    c [s, k] float32 (float16 values) -> out [r, s]."""
    rows, width = a.shape
    for i in nb.prange(rows):
        acc = np.empty(16, np.float32)
        for j in range(c.shape[0]):
            acc[:] = 0
            for k in range(width):
                acc[k & 15] = fma(a[i, k], c[j, k], acc[k & 15])
            out[i, j] = _reduce16(acc)


def half_product(a, c, queries: int):  # [b, r, k], [b, s, k] float32 (float16 values) -> [b, r, s] = a @ c^T
    """The attention's products in llama.cpp's order for a batch of `queries` tokens (row
    i of a head belongs to query i % queries): tinyBLAS's (`_lanes16`) where llama.cpp
    multiplies two queries or more at once, ggml_vec_dot_f16's (`_lanes64`) for a query
    alone in its batch of `UBATCH` (a Decode step, or the last of 513 tokens)."""
    a, c = np.ascontiguousarray(a, np.float32), np.ascontiguousarray(c, np.float32)
    out = np.empty((a.shape[0], a.shape[1], c.shape[1]), np.float32)
    alone = slice(queries - 1, None, queries) if queries % UBATCH == 1 else slice(0)
    for head in range(a.shape[0]):
        if queries > 1:
            _lanes16(a[head], c[head], out[head])
        if len(a[head, alone]):
            lone = np.empty((len(a[head, alone]), c.shape[1]), np.float32)
            _lanes64(np.ascontiguousarray(a[head, alone]), c[head], lone)
            out[head, alone] = lone
    return out


_EXP = np.array([float.fromhex(h) for h in (                  # ggml_v_expf's constants, float32
    "0x1.8p23", "0x1.715476p+0", "0x1.62e4p-1", "0x1.7f7d1cp-20", "0x1.0e4020p-7", "0x1.573e2ep-5",
    "0x1.555e66p-3", "0x1.fffdb6p-2", "0x1.ffffecp-1")], np.float32)


@nb.njit(inline="always")
def _expf(x, c):
    """exp(x) for x <= 0 as llama.cpp's AVX-512 ggml_v_expf computes it (a float32
    polynomial by fma, scaled by 2^n); 0 below -192 ln 2 and for -inf."""
    one = np.float32(1)
    z = fma(x, c[1], c[0])
    n = z - c[0]
    if not abs(n) <= np.float32(192):
        return np.float32(0)
    b = fma(-n, c[3], fma(-n, c[2], x))
    u = b * b
    j = fma(fma(fma(c[4], b, c[5]), u, fma(c[6], b, c[7])), u, fma(c[8], b, one))
    return np.float32(np.float64(j) * 2.0 ** np.float64(n))


@_serial
def _softmax_rows(x, c):
    """Each row of x [r, t] float32 (-inf where masked) replaced in place by its softmax
    as llama.cpp's ggml_vec_soft_max_f32 computes it on an AVX-512 CPU: `_expf` of x -
    max per run of sixteen, each run's sum (`_reduce16`) added in float64, then every
    value times float32(1 / sum)."""
    rows, t = x.shape
    for r in range(rows):
        top = np.float32(-np.inf)
        for k in range(t):
            top = max(top, x[r, k])
        lanes = np.zeros(16, np.float32)
        total = 0.0
        for start in range(0, t, 16):
            for lane in range(16):
                k = start + lane
                lanes[lane] = _expf(x[r, k] - top, c) if k < t else np.float32(0)
                if k < t:
                    x[r, k] = lanes[lane]
            total += np.float64(_reduce16(lanes))
        scale = np.float32(1.0 / total)
        for k in range(t):
            x[r, k] *= scale


def softmax_ggml(x):  # [..., t] float32 -> the same array, each row its softmax
    """The attention weights' softmax in llama.cpp's float order (`_softmax_rows`)."""
    rows = x.reshape(-1, x.shape[-1])
    _softmax_rows(rows, _EXP)
    return x


def masked_softmax_ggml(scores, mask):  # [b, m, n, t] float32, [n, t] bool -> the same array
    """`softmax_ggml` of the scores, -inf (exactly 0 after it) where `mask` is False."""
    np.copyto(scores, -np.inf, where=~mask)
    return softmax_ggml(scores)


def ggml_attention(queries: int) -> AttentionArithmetic:
    """llama.cpp's attention arithmetic for a forward over `queries` new tokens: its
    products (`half_product`), its softmax (`softmax_ggml`), and the weights rounded to
    float16 before they multiply its float16 V cache."""
    return AttentionArithmetic(functools.partial(half_product, queries=queries), masked_softmax_ggml, to_half)


@functools.cache
def _libm():
    """The C library's float32 powf, cosf and sinf (llama.cpp's rotary tables call them;
    cosf and sinf are not always the correctly rounded value), or None where it cannot
    be loaded."""
    try:
        libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        powf, cosf, sinf = libm.powf, libm.cosf, libm.sinf
    except (OSError, AttributeError):
        return None
    powf.restype, powf.argtypes = ctypes.c_float, [ctypes.c_float, ctypes.c_float]
    for f in (cosf, sinf):
        f.restype, f.argtypes = ctypes.c_float, [ctypes.c_float]
    return powf, np.frompyfunc(cosf, 1, 1), np.frompyfunc(sinf, 1, 1)


def rope_tables_ggml(positions, e: int, base: float, scaling=None):  # [n] -> (cos, sin) [n, e/2] float32
    """llama.cpp's rotary tables (ggml_rope_cache_init, rope_yarn without YaRN): the angle
    of pair i is the position times theta_scale^i, theta_scale = powf(base, -2 / e),
    multiplied up one float32 step at a time, then divided by the pair's factor and
    multiplied by freq_scale (`layers.RotaryScaling`); its cosine and sine by the C
    library's cosf and sinf (float64 rounded to float32 where there is no C library to
    call), each times mscale."""
    libm = _libm()
    exponent = np.float32(-2.0) / np.float32(e)
    scale = np.float32(libm[0](np.float32(base), exponent) if libm else np.float32(base) ** exponent)
    angles = np.empty((len(positions), e // 2), np.float32)                # [n, e/2]
    angles[:, 0] = np.asarray(positions, np.float32)
    for i in range(1, e // 2):
        angles[:, i] = angles[:, i - 1] * scale
    if scaling is not None:
        if scaling.factors:
            angles /= np.asarray(scaling.factors, np.float32)
        angles *= np.float32(scaling.freq_scale)
    if libm is None:
        wide = angles.astype(np.float64)
        cos, sin = np.cos(wide).astype(np.float32), np.sin(wide).astype(np.float32)
    else:
        cos, sin = libm[1](angles).astype(np.float32), libm[2](angles).astype(np.float32)
    if scaling is not None and scaling.mscale != 1:
        cos *= np.float32(scaling.mscale)
        sin *= np.float32(scaling.mscale)
    return cos, sin


@_serial
def _rotate(x, cos, sin, half, stride, out):
    """llama.cpp's rotate_pairs on x [n, heads*e]: each pair (x0, x1) = (x[a], x[a +
    stride]) of every head turned as (x0 cos - x1 sin, x0 sin + x1 cos), each fused by
    the compiler into an fma of its first product (fma(x0, cos, -(x1 sin)), fma(x0,
    sin, x1 cos)). stride = e/2 for Gemma's halves, 1 for adjacent pairs."""
    n, width = x.shape
    e = 2 * half
    for r in range(n):
        for h in range(width // e):
            for i in range(half):
                a = h * e + (i if stride != 1 else 2 * i)
                x0, x1 = x[r, a], x[r, a + stride]
                c, s = cos[r, i], sin[r, i]
                out[r, a] = fma(x0, c, -(x1 * s))
                out[r, a + stride] = fma(x0, s, x1 * c)


def rope_ggml(x, tables, halves: bool):  # [n, heads*e] float32, (cos, sin) [n, e/2] -> [n, heads*e]
    """Rotary positions as llama.cpp turns them (`_rotate`), on Gemma's halves or on
    adjacent pairs."""
    cos, sin = tables
    x = np.ascontiguousarray(x, np.float32)
    out = np.empty_like(x)
    half = cos.shape[1]
    _rotate(x, cos, sin, half, half if halves else 1, out)
    return out


def half_queries(q, scale: float, scaled_first: bool):  # [n, h*e] float32 -> [n, h*e] float16 values
    """The queries rounded to float16 as llama.cpp rounds them to meet its float16 K
    cache. Its Gemma graphs (`scaled_first`) multiply them by the scores' `scale` first
    (its other graphs scale the scores): the same numbers, except where q * scale is a
    float16 subnormal (or, for a scale not a power of two, a last bit)."""
    if not scaled_first:
        return to_half(q)
    scale = np.float32(scale)
    return to_half(q * scale) / scale          # 1/16 for head size 256: exact both ways


@dataclass(frozen=True)
class LlamaCppArithmetic:
    """A forward as llama.cpp's CPU backend computes it (the table at the top)."""

    name: ClassVar[str] = "llama.cpp"   # as `--arithmetic` names it

    def label(self, dtype) -> str:
        return self.name

    def matmul(self, x, w, rows_at_once: int | None = None):  # [n, a] @ [a, b] -> [n, b]
        """A quantised matrix (a transposed `blocks.BlockMatrix`) reads x rounded to 8 bits
        (`int8_products`), each row summed as llama.cpp sums it in a product of
        `rows_at_once` rows (default: x's); a float one is multiplied in float32."""
        return w.times_int8(x, rows_at_once) if hasattr(w, "times_int8") else x @ w

    def rms_norm(self, x, gamma, eps: float):  # [..., d], [d] -> [..., d]
        return rms_norm_ggml(x, gamma, eps)

    def gelu(self, x):  # [...] -> [...]
        return gelu_half_table(x)

    def rope_tables(self, positions, e: int, base: float, dtype, scaling):  # [n] -> (cos, sin) [n, e/2] float32
        return rope_tables_ggml(positions, e, base, scaling)

    def rope(self, x, tables, halves: bool):  # [n, heads*e] -> [n, heads*e]
        return rope_ggml(x, tables, halves)

    def queries(self, q, scale: float, scaled_first: bool):  # [n, h*e] -> [n, h*e] float16 values
        """Rounded to float16; llama.cpp's Gemma graphs scale them first."""
        return half_queries(q, scale, scaled_first)

    def cached(self, x):  # [n, g*e] -> [n, g*e] float16 values
        return to_half(x)

    def attention(self, queries: int) -> AttentionArithmetic:
        return ggml_attention(queries)


LLAMA_CPP = LlamaCppArithmetic()
