"""Attention records on demand: one head's scores and weights, recomputed from the queries
and keys a LayerTrace keeps.

A trace keeps no [heads, n, t] arrays (a 2,000-token Prefill of SmolLM2 would hold 4 GB of
them); the panel, the slides, the handouts and the lessons ask here for the one head they
show. `layers.group_weights` is the function the forward itself called on the same arrays,
so the result is bit for bit what the forward used.
"""

from __future__ import annotations

import numpy as np

from . import layers as L
from .trace import LayerTrace


def _group(lt: LayerTrace, head: int):  # -> q [m, n, e] of the head's group, keys [t, e], index in it
    h, g = lt.q.shape[0], lt.keys.shape[0]
    if not 0 <= head < h:
        raise IndexError(f"head {head}: this layer has query heads 0..{h - 1}")
    m = h // g                                  # query heads per K/V head
    group = head // m
    return lt.q[group * m:(group + 1) * m], lt.keys[group], head - group * m


def attention_weights(lt: LayerTrace, head: int) -> np.ndarray:  # -> [n, t]
    """Query head `head`'s attention weights: each new position's row over every key it
    could read; masked cells (the future, and outside a sliding window) are exactly 0."""
    q, keys, i = _group(lt, head)
    return L.group_weights(q, keys, lt.mask)[i].copy()     # not a view holding the whole group


def attention_scores(lt: LayerTrace, head: int) -> np.ndarray:  # -> [n, t]
    """Query head `head`'s q.k / sqrt(e) before the mask (the handouts print them)."""
    q, keys, i = _group(lt, head)
    return L.group_scores(q, keys)[i].copy()
