"""Transformer building blocks as small pure functions over numpy arrays.

Shapes: n = new positions, t = all positions the cache holds (t >= n),
d = model width, h = query heads, g = K/V heads (h is a multiple of g), e = head size."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def softmax(x: np.ndarray, axis: int = -1, out: np.ndarray | None = None) -> np.ndarray:
    """Numerically stable softmax; rows that are all -inf give all zeros, not NaN.
    `out` (which may be `x` itself) receives the result instead of a new array: a long
    Prefill's attention weights are 9 MB per layer."""
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.subtract(x, m, out=out)
    np.exp(e, out=e)
    s = np.sum(e, axis=axis, keepdims=True)
    e /= np.where(s == 0, 1, s)
    return e


def layer_norm(x, gamma, beta, eps=1e-5):  # [n, d], [d], [d] -> [n, d]
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * gamma + beta


def rms_norm(x, gamma, eps=1e-5):  # [n, d], [d] -> [n, d]
    mean_square = (x * x).sum(axis=-1) / x.shape[-1]             # [n], without np.mean's overhead
    return x * (gamma / np.sqrt(mean_square + eps)[..., None])   # gamma / rms: [n, d]


def gelu(x):  # [...] -> [...], the tanh approximation used by GPT-2 (and ggml's gelu)
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), in the dtype of x, in place in one
    scratch array (a Gemma 3 Prefill of 500 tokens takes it of 18 x 1M numbers)."""
    t = x * x
    t *= 0.044715
    t += 1
    t *= x
    t *= math.sqrt(2 / math.pi)    # a Python float: float32 stays float32
    np.tanh(t, out=t)
    t += 1
    t *= x
    t *= 0.5
    return t


def silu(x):  # [...] -> [...]
    return x / (1 + np.exp(-x))


@dataclass(frozen=True)
class RotaryScaling:
    """How a model stretches its rotary positions, as llama.cpp's rope_ext reads it: pair
    i of position p turns by the angle p * freq_scale * base^(-2i/e) / factors[i], and
    its cosine and sine are multiplied by `mscale`. The default changes nothing."""

    freq_scale: float = 1.0   # every angle times it (linear scaling: 1 / the file's factor)
    factors: tuple = ()       # per pair, its wavelength stretched by it (Llama 3's
                              # rope_freqs, Phi-3's rope factors); () = 1 for every pair
    mscale: float = 1.0       # cos and sin times it (the file's rope.scaling.attn_factor)

    def __post_init__(self):
        values = (self.freq_scale, self.mscale, *self.factors)
        if not all(math.isfinite(v) and v > 0 for v in values):
            raise ValueError(f"rotary scaling {self}: every factor must be a finite number > 0")


NO_SCALING = RotaryScaling()


def rope_tables(positions, e, base, dtype=np.float64, scaling: RotaryScaling = NO_SCALING):  # [n] -> [n, e/2] complex
    """The rotations of `rope` for these positions, as complex numbers mscale (cos + i sin)
    (angles in float64, then complex64 for float32 activations, complex128 for float64).

    A forward computes them once and passes them to every layer's `rope`."""
    inv_freq = base ** (-np.arange(0, e, 2, dtype=np.float64) / e)         # [e/2]
    if scaling.factors:
        if len(scaling.factors) != e // 2:
            raise ValueError(f"{len(scaling.factors)} rotary factors for {e // 2} pairs")
        inv_freq = inv_freq / np.asarray(scaling.factors, np.float64)
    angles = np.asarray(positions, dtype=np.float64)[:, None] * (inv_freq * scaling.freq_scale)   # [n, e/2]
    turns = np.exp(1j * angles)
    if scaling.mscale != 1:
        turns *= scaling.mscale
    return turns.astype(np.result_type(dtype, np.complex64))


def rope(x, tables):  # [n, heads*e], [n, e/2] complex -> [n, heads*e]
    """Rotary positions on adjacent pairs (x[2i], x[2i+1]) of every head, the layout
    llama.cpp uses: each pair, read as the complex number x[2i] + i x[2i+1], is
    multiplied by the rotation, which is (x[2i] cos - x[2i+1] sin, x[2i] sin + x[2i+1] cos).

    `x` holds each position's heads side by side (before `split_heads`), so the queries
    and keys of a fused Q|K|V product turn in one multiplication.
    `tables` = rope_tables(positions, e, base, x.dtype)."""
    n, half = x.shape[0], tables.shape[-1]
    pairs = np.ascontiguousarray(x).view(tables.dtype).reshape(n, -1, half)   # [n, heads, e/2]
    return (pairs * tables[:, None, :]).view(x.dtype).reshape(n, -1)


def rope_halves(x, tables):  # [n, heads*e], [n, e/2] complex -> [n, heads*e]
    """Rotary positions on the pairs (x[i], x[i + e/2]) of every head (GPT-NeoX's layout,
    which Gemma uses): the same rotations as `rope`, on another pairing."""
    n, half = x.shape[0], tables.shape[-1]
    halves = x.reshape(n, -1, 2, half)                                     # [n, heads, 2, e/2]
    turned = (halves[:, :, 0] + 1j * halves[:, :, 1]) * tables[:, None, :]  # [n, heads, e/2]
    out = np.empty_like(halves)
    out[:, :, 0], out[:, :, 1] = turned.real, turned.imag
    return out.reshape(n, -1)


def causal_mask(query_positions, key_positions, window: int = 0):  # [n], [t] -> [n, t] bool, True = may attend
    """Each query sees the keys at its own and earlier positions; with a `window` only the
    latest `window` of them (a sliding-window layer: query p reads p - window + 1 .. p)."""
    back = np.asarray(query_positions)[:, None] - np.asarray(key_positions)[None, :]   # [n, t]
    return (back >= 0) & (back < window) if window else back >= 0


def transposed_product(a, c):  # [b, r, k], [b, s, k] -> [b, r, s] = a @ c^T
    return a @ c.transpose(0, 2, 1)


def masked_softmax(scores, mask):  # [b, m, n, t] float, [n, t] bool -> the same array
    """Each row of `scores` replaced by its softmax over the keys its query may read
    (`mask`); masked cells exactly 0."""
    if mask.all():                 # a decode step's single query sees every key: nothing to mask
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        return scores
    np.copyto(scores, -np.inf, where=~mask)
    return softmax(scores, out=scores)


def soft_cap(x, cap: float):  # [...] -> the same array, cap * tanh(x / cap)
    """Gemma 2's soft-capping: large values squeezed smoothly into (-cap, cap), in place
    (x / cap as a product by 1 / cap, as llama.cpp's graph computes it)."""
    x *= 1 / cap                   # a Python float: float32 stays float32
    np.tanh(x, out=x)
    x *= cap
    return x


def group_scores(q, k, dot=transposed_product, scale=None, cap=0.0):  # [b, m, n, e], [b, t, e] -> [b, m, n, t]
    """q.k times `scale` (default 1 / sqrt(e)), then soft-capped at `cap` if it is set
    (Gemma 2), for b K/V heads each read by m query heads (before any mask), the products
    by `dot` (an `arithmetic.AttentionArithmetic`'s)."""
    b, m, n, e = q.shape
    scores = dot(q.reshape(b, m * n, e), k)                           # [b, m*n, t]
    scores *= 1 / math.sqrt(e) if scale is None else scale   # a Python float: float32 stays float32
    if cap:
        soft_cap(scores, cap)
    return scores.reshape(b, m, n, -1)                                # [b, m, n, t]


def group_weights(q, k, mask, dot=transposed_product, soft=masked_softmax, scale=None, cap=0.0):  # [b, m, n, e], [b, t, e], [n, t] -> [b, m, n, t]
    """Attention weights for b K/V heads, each read by m query heads: `soft` (a masked
    softmax) of `group_scores` over the keys each query may read (`mask`); masked cells
    are exactly 0.

    The forward and `models.attention` (one head, when a panel shows it) both call this
    with the same arrays (the same `kv_batches`) and the same `arithmetic.AttentionArithmetic`
    (its `dot`, `soft`, `scale` and `cap`), so the weights shown are bit for bit the ones
    the forward used."""
    return soft(group_scores(q, k, dot, scale, cap), mask)


FEW_QUERIES = 16   # up to this many new positions compute every head's attention together


def kv_batches(g: int, n: int) -> list[slice]:
    """The K/V heads whose attention is computed together: all g for a few queries (a
    Decode step, a speculative verify pass, the rest of a prompt after a prefix cache:
    fewer, larger calls), one at a time for a longer Prefill (its weights, [h/g, n, t] per
    K/V head, exist for one head's group only)."""
    return [slice(0, g)] if n <= FEW_QUERIES else [slice(j, j + 1) for j in range(g)]


def grouped_queries(q, kv: slice, g: int):  # [h, n, e] -> [b, h/g, n, e] the query heads of K/V heads kv
    m = q.shape[0] // g
    return q[kv.start * m:kv.stop * m].reshape(kv.stop - kv.start, m, *q.shape[1:])


def attention(q, k, v, mask, dot=transposed_product, soft=masked_softmax, round_weights=np.asarray,
              scale=None, cap=0.0):  # [h, n, e], [g, t, e], [g, t, e], [n, t] -> out [h, n, e]
    """Scaled dot-product attention (scores as `group_scores` scales and caps them) with grouped K/V heads (query head i reads K/V head
    i // (h/g)), the query heads of a K/V head stacked against it (K and V are never copied
    per query head), rounded as an `arithmetic.AttentionArithmetic` says: both products by
    `dot`, the weights by `soft` (`group_weights`), then `round_weights` before they
    multiply V. The weights are not kept: `models.attention` recomputes a head's."""
    h, n, e = q.shape
    g = k.shape[0]
    out = np.empty(q.shape, q.dtype)                                  # [h, n, e]
    for kv in kv_batches(g, n):
        weights = round_weights(group_weights(grouped_queries(q, kv, g), k[kv], mask, dot, soft, scale, cap))   # [b, m, n, t]
        b = weights.shape[0]
        heads = dot(weights.reshape(b, -1, weights.shape[-1]), v[kv].transpose(0, 2, 1))   # [b, m*n, e]
        out[kv.start * (h // g):kv.stop * (h // g)] = heads.reshape(-1, n, e)
    return out


def split_heads(x, heads):  # [n, heads*e] -> [heads, n, e]
    n = x.shape[0]
    return x.reshape(n, heads, -1).transpose(1, 0, 2)


def merge_heads(x):  # [heads, n, e] -> [n, heads*e]
    return x.transpose(1, 0, 2).reshape(x.shape[1], -1)
