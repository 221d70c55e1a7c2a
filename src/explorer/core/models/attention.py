"""One attention head's scores and weights, recomputed on demand from the queries and keys
a LayerTrace keeps, with the function the forward itself called and the arithmetic it
computed in (the trace's `arithmetic`: float32's, or llama.cpp's products and softmax),
so bit for bit what it used in either."""

from __future__ import annotations

import numpy as np

from . import layers as L
from .trace import LayerTrace


def _batch(lt: LayerTrace, head: int):  # -> q [b, m, n, e], keys [b, t, e], (K/V index, query index)
    """The K/V heads the forward computed together with `head`'s, and where `head` is in them."""
    h, g, n = lt.q.shape[0], lt.keys.shape[0], lt.q.shape[1]
    if not 0 <= head < h:
        raise IndexError(f"head {head}: this layer has query heads 0..{h - 1}")
    m = h // g                                  # query heads per K/V head
    kv = next(b for b in L.kv_batches(g, n) if b.start <= head // m < b.stop)
    return L.grouped_queries(lt.q, kv, g), lt.keys[kv], (head // m - kv.start, head % m)


def attention_weights(lt: LayerTrace, head: int) -> np.ndarray:  # -> [n, t]
    """Query head `head`'s attention weights: each new position's row over every key it
    could read; masked cells (the future, and outside a sliding window) are exactly 0.
    They are the softmax's own output (in llama.cpp's arithmetic the product with V then
    reads them rounded to float16)."""
    q, keys, at = _batch(lt, head)
    att = lt.arithmetic
    weights = L.group_weights(q, keys, lt.mask, att.dot, att.soft, att.scale, att.cap)   # [b, m, n, t]
    return weights[at].copy()   # not a view holding the whole batch


def attention_scores(lt: LayerTrace, head: int) -> np.ndarray:  # -> [n, t]
    """Query head `head`'s q.k / sqrt(e) (soft-capped, for Gemma 2) before the mask (the
    handouts print them)."""
    q, keys, at = _batch(lt, head)
    return L.group_scores(q, keys, lt.arithmetic.dot, lt.arithmetic.scale, lt.arithmetic.cap)[at].copy()
