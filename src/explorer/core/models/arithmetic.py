"""What a forward computes in: one object holding every operation whose rounding differs
between arithmetics, so that `decoder.DecoderModel`'s layers read as the textbook block
and never ask which arithmetic they are in.

`Arithmetic` is the interface; `FLOAT` (numpy in the model's dtype, the teaching path) is
the default. llama.cpp's (8-bit activations into quantised weights, float16 K/V, its
float order) is built in `gguf.ggml_arithmetic`, beside the files it belongs to.

Shapes: n = new positions, t = all positions attended to, d, a, b = widths, e = head size."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

import numpy as np

from . import layers as L


@dataclass(frozen=True)
class AttentionArithmetic:
    """How one forward's attention computes and rounds (`layers.attention`'s operations).
    A LayerTrace keeps it, so that `models.attention` recomputes a head's weights with it."""

    dot: Callable = L.transposed_product   # a @ c^T: [b, r, k], [b, s, k] -> [b, r, s]
    soft: Callable = L.masked_softmax      # scores [b, m, n, t], mask [n, t] -> weights, in place
    round_weights: Callable = np.asarray   # the weights as they multiply V (float: as they are)
    scale: float | None = None             # the scores' factor (None: 1 / sqrt(e); the model's)
    cap: float = 0.0                       # the scores' soft cap (Gemma 2's; 0: none)


FLOAT_ATTENTION = AttentionArithmetic()


@runtime_checkable
class Arithmetic(Protocol):
    """The operations of a forward that an arithmetic rounds in its own way."""

    name: str   # as `--arithmetic` names it

    def label(self, dtype) -> str:
        """What a run computed in, as a record says it ("float32", "llama.cpp")."""

    def matmul(self, x, w, rows_at_once: int | None = None) -> np.ndarray:  # [n, a] @ [a, b] -> [n, b]
        """x times a weight matrix (a float array or a GGUF file's `BlockMatrix` view),
        summed as a product of `rows_at_once` rows at a time would sum it (None: all of x's)."""

    def rms_norm(self, x, gamma, eps: float) -> np.ndarray:  # [..., d], [d] -> [..., d]
        """RMSNorm."""

    def gelu(self, x) -> np.ndarray:  # [...] -> [...]
        """GELU (tanh approximation)."""

    def rope_tables(self, positions, e: int, base: float, dtype, scaling: L.RotaryScaling):  # [n] -> the rotations for `rope`
        """The rotary positions' turns for these positions, stretched as `scaling` says,
        computed once per forward."""

    def rope(self, x, tables, halves: bool) -> np.ndarray:  # [n, heads*e] -> [n, heads*e]
        """x's heads turned by `tables`: pairs (x[i], x[i + e/2]) if `halves`, else
        adjacent pairs."""

    def queries(self, q, scale: float, scaled_first: bool) -> np.ndarray:  # [n, h*e] -> [n, h*e]
        """The queries as they meet the keys; `scale` is the scores' factor, which
        `scaled_first` models (Gemma's) multiply into the queries before they meet them."""

    def cached(self, x) -> np.ndarray:  # [n, g*e] -> [n, g*e]
        """Keys or values as the KV cache keeps them."""

    def attention(self, queries: int) -> AttentionArithmetic:
        """How the attention of a forward over `queries` new tokens rounds."""


@dataclass(frozen=True)
class FloatArithmetic:
    """numpy's arithmetic in the dtype of the model's arrays (float64 for the teaching
    model, float32 for a GGUF file's)."""

    name: ClassVar[str] = "float"   # as `--arithmetic` names it

    def label(self, dtype) -> str:
        return np.dtype(dtype).name

    def matmul(self, x, w, rows_at_once: int | None = None):  # [n, a] @ [a, b] -> [n, b]
        return x @ w

    def rms_norm(self, x, gamma, eps: float):  # [..., d], [d] -> [..., d]
        return L.rms_norm(x, gamma, eps)

    def gelu(self, x):  # [...] -> [...]
        return L.gelu(x)

    def rope_tables(self, positions, e: int, base: float, dtype, scaling: L.RotaryScaling):  # [n] -> [n, e/2] complex
        return L.rope_tables(positions, e, base, dtype, scaling)

    def rope(self, x, tables, halves: bool):  # [n, heads*e] -> [n, heads*e]
        return (L.rope_halves if halves else L.rope)(x, tables)

    def queries(self, q, scale: float, scaled_first: bool):  # [n, h*e] -> the same array
        return q

    def cached(self, x):  # [n, g*e] -> the same array
        return x

    def attention(self, queries: int) -> AttentionArithmetic:
        return FLOAT_ATTENTION


FLOAT = FloatArithmetic()
