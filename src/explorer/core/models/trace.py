"""ForwardTrace: every intermediate value of one forward pass, as the panels show it.

Shapes: n = new positions fed in, t = positions the attention could read (cache + new),
m = the last positions whose residual stream and logits are kept (m = n unless the model
keeps fewer: DecoderConfig.kept_rows), d = model width, h = query heads, g = K/V heads,
e = head size, V = vocabulary size."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .arithmetic import FLOAT_ATTENTION, AttentionArithmetic


@dataclass(frozen=True)
class LayerTrace:
    """One layer's records. The attention scores and weights ([h, n, t] each: 4 GB over a
    2,000-token Prefill of SmolLM2) are not kept: `core.models.attention` recomputes one head's
    from `q`, `keys` and `mask` in the forward's own `arithmetic`."""

    x_in: np.ndarray       # [m, d] residual stream entering the layer
    q: np.ndarray          # [h, n, e] queries of the new positions (after rotary, if any)
                           # (in llama.cpp's arithmetic float16 values, as it multiplies
                           # them: Gemma's rounded after scaling by 1/sqrt(e))
    k: np.ndarray          # [g, n, e] keys the new positions add to the cache (views of it)
    v: np.ndarray          # [g, n, e] values the new positions add to the cache
    keys: np.ndarray       # [g, t, e] every key the new positions' queries read (cache + new;
                           # a view of the cache's storage, the very array the forward used)
    mask: np.ndarray       # [n, t] True where the query may attend to the key (causal, and
                           # inside the window of a sliding-window layer)
    attn_out: np.ndarray   # [m, d] attention output after the output projection (and its
                           # norm, Gemma's): what is added to the residual stream
    ffn_out: np.ndarray    # [m, d] feed-forward output (after its norm, Gemma's)
    hidden: np.ndarray     # [m, d] residual stream leaving the layer
    window: int = 0        # 0: a global layer, reads every earlier position; w: a sliding-
                           # window layer, reads only the latest w (query p: p-w+1 .. p)
    arithmetic: AttentionArithmetic = FLOAT_ATTENTION   # how the forward's attention rounded
                           # (its products and softmax: numpy's, or llama.cpp's)

    @property
    def is_local(self) -> bool:
        return self.window > 0


@dataclass(frozen=True)
class ForwardTrace:
    ids: np.ndarray            # [n] token ids fed in
    positions: np.ndarray      # [n] their positions
    key_ids: np.ndarray        # [t] token ids of every key position attention could read
    key_positions: np.ndarray  # [t]
    embeddings: np.ndarray     # [m, d] token (+ learned position) embeddings
    layers: tuple[LayerTrace, ...]
    final_hidden: np.ndarray   # [m, d] after the final norm (if any): what the output head reads
    logits: np.ndarray         # [m, V] scores of every vocabulary item for the next token, at
                               # the last m of the n positions
    seconds: float = 0.0       # wall time of the forward

    @cached_property
    def last_logits(self) -> np.ndarray:  # [V] the logits that choose the next token
        """A read-only view, the same object every time: sampling recognises it and builds
        its raw stage once per trace, however often a slider reselects from it."""
        last = self.logits[-1]
        last.flags.writeable = False
        return last

    @property
    def kv_bytes_per_position(self) -> int:
        """Bytes one position adds to the KV cache: its key and value in every layer."""
        return sum(lt.k[:, 0].nbytes + lt.v[:, 0].nbytes for lt in self.layers)   # [g, e] each
