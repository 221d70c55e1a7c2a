"""ForwardTrace: every intermediate value of one forward pass, as the panels show it.

Shapes: n = new positions fed in, t = positions the attention could read (cache + new),
d = model width, h = query heads, g = K/V heads, e = head size, V = vocabulary size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LayerTrace:
    x_in: np.ndarray       # [n, d] residual stream entering the layer
    q: np.ndarray          # [h, n, e] queries of the new positions (after rotary, if any)
    k: np.ndarray          # [g, n, e] keys the new positions add to the cache
    v: np.ndarray          # [g, n, e] values the new positions add to the cache
    scores: np.ndarray | None  # [h, n, t] q.k / sqrt(e), before the causal mask (None when
                           # the model keeps only the weights: DecoderConfig.keep_scores)
    mask: np.ndarray       # [n, t] True where the query may attend to the key (causal, and
                           # inside the window of a sliding-window layer)
    weights: np.ndarray    # [h, n, t] attention weights; masked cells are exactly 0
    attn_out: np.ndarray   # [n, d] attention output after the output projection (and its
                           # norm, Gemma's): what is added to the residual stream
    ffn_out: np.ndarray    # [n, d] feed-forward output (after its norm, Gemma's)
    hidden: np.ndarray     # [n, d] residual stream leaving the layer
    window: int = 0        # 0: a global layer, reads every earlier position; w: a sliding-
                           # window layer, reads only the latest w (query p: p-w+1 .. p)

    @property
    def is_local(self) -> bool:
        return self.window > 0


@dataclass(frozen=True)
class ForwardTrace:
    ids: np.ndarray            # [n] token ids fed in
    positions: np.ndarray      # [n] their positions
    key_ids: np.ndarray        # [t] token ids of every key position attention could read
    key_positions: np.ndarray  # [t]
    embeddings: np.ndarray     # [n, d] token (+ learned position) embeddings
    layers: tuple[LayerTrace, ...]
    final_hidden: np.ndarray   # [n, d] after the final norm (if any): what the output head reads
    logits: np.ndarray         # [m, V] scores of every vocabulary item for the next token, at
                               # the last m of the n positions (m = n unless the model keeps
                               # fewer: DecoderConfig.logit_rows)
    seconds: float = 0.0       # wall time of the forward

    @property
    def last_logits(self) -> np.ndarray:  # [V] the logits that choose the next token
        return self.logits[-1]

    @property
    def kv_bytes_per_position(self) -> int:
        """Bytes one position adds to the KV cache: its key and value in every layer."""
        return sum(lt.k[:, 0].nbytes + lt.v[:, 0].nbytes for lt in self.layers)   # [g, e] each
