"""A general decoder-only transformer in numpy, with a KV cache and a full trace: the
teaching model, llama-shaped models and Gemma 3 are configurations of the same code. It
computes in the arithmetic it holds (`arithmetic.Arithmetic`: float's, or llama.cpp's)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from . import layers as L
from .arithmetic import FLOAT, Arithmetic
from ..errors import PromptError
from .kvcache import KVCache
from .protocol import StepwiseModel
from .trace import ForwardTrace, LayerTrace
from ..tokens.vocab import Vocabulary

NORMS = ("none", "layer", "rms")
POSITIONS = ("none", "learned", "rope")
FFNS = ("tanh", "gelu", "swiglu", "geglu")
ROPE_PAIRS = ("adjacent", "halves")


@dataclass(frozen=True)
class DecoderConfig:
    vocab_size: int = 7          # the course's teaching vocabulary
    d_model: int = 4             # small enough to print every number on a slide
    n_layers: int = 1            # one layer is enough to show attention and the cache
    n_heads: int = 1             # one causal head
    n_kv_heads: int = 1          # equal to n_heads unless K/V heads are shared (GQA)
    head_dim: int = 4            # d_model / n_heads for the teaching model
    d_ff: int = 8                # feed-forward width
    ffn: str = "tanh"            # "tanh" | "gelu" | "swiglu"
    norm: str = "none"           # "none" | "layer" | "rms"; the course omits normalisation
    positions: str = "none"      # "none" | "learned" | "rope"; the course omits positions
    max_positions: int = 64      # rows of the learned position table
    context_length: int | None = None   # rotary positions: the most a forward may reach (a GGUF
                                        # file's context_length; None: no limit but the run's)
    rope_base: float = 10000.0   # rotary frequency base
    norm_eps: float = 1e-5       # added under the square root of every norm
    output_bias: bool = True     # the teaching head has a bias per vocabulary item
    tied_output: bool = False    # reuse the embedding as the output head (llama-style)
    embed_scale: float = 1.0     # the embedding is multiplied by it (Gemma: sqrt(d_model))
    rope_pairs: str = "adjacent"  # rotated pairs: "adjacent" (llama) or "halves" (NeoX, Gemma)
    windows: tuple = ()          # per layer, how many of the latest positions it reads
                                 # (0 = all: a global layer); () = every layer global
    local_rope_base: float = 0.0  # rotary base of the windowed layers (0: rope_base)
    rope_scaling: L.RotaryScaling = L.NO_SCALING   # stretched rotary positions (Llama 3, Phi-3)
    attn_scale: float = 0.0      # the attention scores' factor (0: 1 / sqrt(head_dim))
    queries_scaled_first: bool = False   # the factor is multiplied into the queries, not the
                                 # scores (Gemma's graphs: the same numbers, but llama.cpp
                                 # rounds the scaled queries to float16)
    attn_softcap: float = 0.0    # scores soft-capped at it before the softmax (Gemma 2; 0: none)
    final_softcap: float = 0.0   # logits soft-capped at it (Gemma 2; 0: none)
    kept_rows: int = 0           # positions whose logits and residual stream a trace keeps:
                                 # the last `kept_rows` of each forward (0 = all). A real
                                 # model chooses with the last one; all 2,000 of a long
                                 # Prefill would be 390 MB of SmolLM2 logits and 550 MB of
                                 # its layers' [n, d] records

    def window(self, layer: int) -> int:
        """Positions layer `layer` reads back from each query (itself included); 0 = all."""
        return self.windows[layer] if self.windows else 0

    def __post_init__(self):
        if self.norm not in NORMS:
            raise ValueError(f"norm = {self.norm!r}: expected one of {NORMS}")
        if self.positions not in POSITIONS:
            raise ValueError(f"positions = {self.positions!r}: expected one of {POSITIONS}")
        if self.ffn not in FFNS:
            raise ValueError(f"ffn = {self.ffn!r}: expected one of {FFNS}")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads = {self.n_heads} is not a multiple of n_kv_heads = {self.n_kv_heads}")
        if self.positions == "rope" and self.head_dim % 2:
            raise ValueError(f"head_dim = {self.head_dim}: rotary positions need an even head size")
        if self.rope_pairs not in ROPE_PAIRS:
            raise ValueError(f"rope_pairs = {self.rope_pairs!r}: expected one of {ROPE_PAIRS}")
        if self.windows and len(self.windows) != self.n_layers:
            raise ValueError(f"windows has {len(self.windows)} entries for {self.n_layers} layers")
        if self.rope_scaling.factors and len(self.rope_scaling.factors) != self.head_dim // 2:
            raise ValueError(f"rope_scaling has {len(self.rope_scaling.factors)} factors for "
                             f"{self.head_dim // 2} rotary pairs")
        for name in ("attn_scale", "attn_softcap", "final_softcap"):
            if not (np.isfinite(getattr(self, name)) and getattr(self, name) >= 0):
                raise ValueError(f"{name} = {getattr(self, name)!r}: expected a finite number >= 0")

    @property
    def score_scale(self) -> float:
        """What the attention scores are multiplied by."""
        return self.attn_scale or 1 / float(np.sqrt(self.head_dim))


@dataclass(frozen=True)
class LayerParams:
    """One layer's weights. `wqkv` and `w13` are optional fused storage: when wq, wk, wv
    are the column blocks of one matrix [wq | wk | wv] (and w1, w3 of [w1 | w3]), a step
    reads them with one matrix product instead of three (two); `fused_layer` builds such
    a layer. A fused matrix whose blocks are not exactly these views (after
    `dataclasses.replace(lp, wq=...)`, say) is dropped: wq, wk, wv, w1, w3 are the truth."""

    # matrices are float arrays, or (a llama file's quantised weights) transposed
    # `gguf.blocks.BlockMatrix` views: both are multiplied as `x @ w`
    wq: np.ndarray                 # [d, h*e]
    wk: np.ndarray                 # [d, g*e]
    wv: np.ndarray                 # [d, g*e]
    wo: np.ndarray                 # [h*e, d]
    w1: np.ndarray                 # [d, f]  (SwiGLU, GeGLU: the gate)
    w2: np.ndarray                 # [f, d]
    w3: np.ndarray | None = None   # [d, f]  SwiGLU / GeGLU up projection
    b1: np.ndarray | None = None   # [f]
    b2: np.ndarray | None = None   # [d]
    norm1: tuple | None = None     # ([d] gamma, [d] beta or None) before attention
    norm2: tuple | None = None     # ([d] gamma, [d] beta or None) before the FFN
    wqkv: np.ndarray | None = None  # [d, (h+2g)*e] = [wq | wk | wv], those three its views
    w13: np.ndarray | None = None   # [d, 2f] = [w1 | w3], those two its views
    q_norm: tuple | None = None     # ([e] gamma, None): RMSNorm of every query head (Gemma 3)
    k_norm: tuple | None = None     # ([e] gamma, None): RMSNorm of every key head
    post_norm1: tuple | None = None  # ([d] gamma, None) on the attention output (Gemma)
    post_norm2: tuple | None = None  # ([d] gamma, None) on the FFN output
    bq: np.ndarray | None = None    # [h*e] biases of the queries, keys and values (Qwen2's)
    bk: np.ndarray | None = None    # [g*e]
    bv: np.ndarray | None = None    # [g*e]

    @cached_property
    def bqkv(self) -> np.ndarray | None:  # -> [(h+2g)*e] the three biases side by side, for wqkv
        if self.bq is None:
            return None
        return np.concatenate([self.bq, self.bk, self.bv])

    def __post_init__(self):
        if self.wqkv is not None and not _column_blocks(self.wqkv, (self.wq, self.wk, self.wv)):
            object.__setattr__(self, "wqkv", None)
        if self.w13 is not None and (self.w3 is None or not _column_blocks(self.w13, (self.w1, self.w3))):
            object.__setattr__(self, "w13", None)


def _column_blocks(whole: np.ndarray, parts) -> bool:
    """True if `parts` are exactly the consecutive column blocks of `whole` (views of it)."""
    if not isinstance(whole, np.ndarray):     # transposed BlockMatrix views: compare their rows
        return all(type(part) is type(whole) for part in parts) and whole.T.stacks([part.T for part in parts])
    if whole.ndim != 2:
        return False
    address, step = whole.__array_interface__["data"][0], whole.strides[1]
    for part in parts:
        if (part.ndim != 2 or part.dtype != whole.dtype or part.shape[0] != whole.shape[0]
                or part.strides != whole.strides
                or part.__array_interface__["data"][0] != address):
            return False
        address += part.shape[1] * step
    return address == whole.__array_interface__["data"][0] + whole.shape[1] * step


def fused_layer(lp: LayerParams) -> LayerParams:
    """`lp` with wq, wk, wv (and SwiGLU's w1, w3) stored as column blocks of one matrix."""
    wqkv = np.concatenate([lp.wq, lp.wk, lp.wv], axis=1)
    a, b = lp.wq.shape[1], lp.wq.shape[1] + lp.wk.shape[1]
    parts = dict(wqkv=wqkv, wq=wqkv[:, :a], wk=wqkv[:, a:b], wv=wqkv[:, b:])
    if lp.w3 is not None:
        w13 = np.concatenate([lp.w1, lp.w3], axis=1)
        f = lp.w1.shape[1]
        parts.update(w13=w13, w1=w13[:, :f], w3=w13[:, f:])
    return replace(lp, **parts)


@dataclass(frozen=True)
class DecoderParams:
    embed: np.ndarray                      # [V, d]
    layers: tuple[LayerParams, ...]
    w_out: np.ndarray | None = None        # [d, V]; None when tied to the embedding
    b_out: np.ndarray | None = None        # [V]
    pos_embed: np.ndarray | None = None    # [max_positions, d] for learned positions
    norm_f: tuple | None = None            # final norm ([d] gamma, [d] beta or None)


@dataclass(eq=False)      # compared and hashed by identity: runs are cached per model
class DecoderModel(StepwiseModel):
    """A LanguageModel: `prefill`, `decode` and the reference `full_forward`."""

    config: DecoderConfig
    params: DecoderParams
    vocab: Vocabulary
    name: str = "decoder"
    dtype: type = field(default=np.float64)
    arithmetic: Arithmetic = FLOAT  # numpy's in `dtype`; a GGUF file's model may take llama.cpp's
                                    # (`gguf.llama.with_arithmetic`)
    load_note: str = ""             # what its load did differently, said where it is opened (`catalog.load`)

    @property
    def arithmetic_label(self) -> str:
        """What a run computed in, as a record says it: "float32", "float64" or "llama.cpp"."""
        return self.arithmetic.label(self.dtype)

    @property
    def context_length(self) -> int | None:
        """The most positions a forward pass may reach (a GGUF file's `context_length`, a
        learned position table's rows); None without such a limit (the course's model)."""
        c = self.config
        return c.max_positions if c.positions == "learned" else c.context_length

    def new_cache(self) -> KVCache:
        c = self.config
        return KVCache(c.n_layers, c.n_kv_heads, c.head_dim, self.dtype)

    def _forward(self, ids, positions, cache: KVCache) -> ForwardTrace:  # [n], [n] -> trace
        start = time.perf_counter()
        key_positions = np.concatenate([cache.positions, positions])       # [t]
        key_ids = np.concatenate([cache.ids, ids])                         # [t]
        embeddings = self._embed(ids, positions)                           # [n, d]
        x, traces = self._layers(embeddings, ids, positions, cache, keep=True)
        final = self._kept(self._norm(x, self.params.norm_f))              # [m, d]
        return ForwardTrace(ids, positions, key_ids, key_positions, self._kept(embeddings), traces,
                            final, self._head(final), time.perf_counter() - start)

    def _kept(self, x):  # [n, ...] -> [m, ...] the rows a trace keeps (a copy: not a view of all n)
        rows = self.config.kept_rows
        return x[-rows:].copy() if rows and rows < len(x) else x

    def reference_logits(self, ids, last: int) -> np.ndarray:  # -> [last, V]
        """`full_forward(ids).logits[-last:]` without the trace: no layer keeps its
        attention records (a 500-token prefix would hold 540 MB of them on SmolLM2 for
        nothing) and the output head multiplies only the rows compared."""
        ids = self.vocab.id_array(ids, "ids")
        positions = np.arange(len(ids))
        x, _ = self._layers(self._embed(ids, positions), ids, positions, self.new_cache(), keep=False)
        return self._head(self._norm(x[-last:], self.params.norm_f))

    def _embed(self, ids, positions):  # [n], [n] -> [n, d]
        c, p = self.config, self.params
        context = self.context_length
        if context is not None and len(positions) and positions[-1] >= context:
            raise PromptError(f"position {positions[-1]} is beyond the model's context of {context} "
                              f"positions (its context_length): shorten the prompt or the output")
        x = p.embed[ids]
        if c.embed_scale != 1:
            x = x * x.dtype.type(c.embed_scale)
        return x + p.pos_embed[positions] if c.positions == "learned" else x

    def _layers(self, x, ids, positions, cache: KVCache, keep: bool):  # [n, d] -> [n, d], traces
        """Every layer on the embeddings `x`, extending `cache`; each layer's LayerTrace
        when `keep`, else none."""
        c = self.config
        key_positions = np.concatenate([cache.positions, positions])                  # [t]
        windows = [c.window(i) for i in range(c.n_layers)]
        masks = {w: L.causal_mask(positions, key_positions, w) for w in set(windows)}   # [n, t] each
        arithmetic = self.arithmetic
        tables = {}                     # the same rotations in every layer of a kind: computed once
        if c.positions == "rope":
            bases = {w: c.local_rope_base if w and c.local_rope_base else c.rope_base for w in masks}
            tables = {w: arithmetic.rope_tables(positions, c.head_dim, base, x.dtype, c.rope_scaling)   # [n, e/2]
                      for w, base in bases.items()}
        att = arithmetic.attention(len(ids))   # how this forward's attention rounds: alike in every layer
        if c.attn_scale or c.attn_softcap:
            att = replace(att, scale=c.attn_scale or None, cap=c.attn_softcap)
        traces = []
        for i, lp in enumerate(self.params.layers):
            x_in, mask = x, masks[windows[i]]
            a_in = self._norm(x, lp.norm1)
            q, k, v = self._qkv(a_in, lp, tables.get(windows[i]))         # [n, h*e], [n, g*e] x2
            q = arithmetic.queries(q, c.score_scale, c.queries_scaled_first)   # as they meet the keys
            k, v = arithmetic.cached(k), arithmetic.cached(v)              # as the cache keeps them
            q = L.split_heads(q, c.n_heads)                                # [h, n, e]
            k = L.split_heads(k, c.n_kv_heads)                             # [g, n, e]
            v = L.split_heads(v, c.n_kv_heads)                             # [g, n, e]
            k_all, v_all = cache.extend(i, k, v)                           # [g, t, e]
            heads = L.attention(q, k_all, v_all, mask, att.dot, att.soft, att.round_weights,
                                att.scale, att.cap)                           # [h, n, e]
            attn_out = self._norm(self._mm(L.merge_heads(heads), lp.wo), lp.post_norm1)   # [n, d]
            x = x + attn_out
            # the last layer's FFN matters for the one row whose logits are read: its products
            # sum as a product of one row does (llama.cpp's runs it on that row alone)
            rows = 1 if i == c.n_layers - 1 else None
            ffn_out = self._norm(self._ffn(self._norm(x, lp.norm2), lp, rows), lp.post_norm2)   # [n, d]
            x = x + ffn_out
            if keep:
                n = len(ids)           # the new keys and values as views of the cache: kept once
                traces.append(LayerTrace(self._kept(x_in), q, k_all[:, -n:], v_all[:, -n:], k_all, mask,
                                         self._kept(attn_out), self._kept(ffn_out), self._kept(x),
                                         windows[i], att))
        cache.commit(ids, positions)
        return x, tuple(traces)

    def layer_logits(self, trace: ForwardTrace) -> np.ndarray:  # -> [L, V]
        """The final norm and the output head applied to the residual stream leaving every
        layer at the trace's last position (the raw logit lens), in the model's arithmetic.
        The last layer's row is the trace's own logits: the forward applied this very head
        to that very row, so it is taken, not multiplied again. The others' products sum as
        the trace's head summed its (as many rows at a time as it kept)."""
        if len(trace.layers) == 1:
            return trace.logits[-1:]
        x = np.stack([lt.hidden[-1] for lt in trace.layers[:-1]])            # [L-1, d]
        early = self._head(self._norm(x, self.params.norm_f), len(trace.final_hidden))   # [L-1, V]
        return np.concatenate([early, trace.logits[-1:]])                      # [L, V]

    def _head(self, final, rows_at_once: int | None = None):  # [n, d] -> [n, V] logits
        p = self.params
        logits = self._mm(final, p.embed.T if self.config.tied_output else p.w_out, rows_at_once)
        if p.b_out is not None:
            logits = logits + p.b_out
        return L.soft_cap(logits, self.config.final_softcap) if self.config.final_softcap else logits

    def _mm(self, x, w, rows_at_once: int | None = None):  # [n, a] @ [a, b] -> [n, b]
        return self.arithmetic.matmul(x, w, rows_at_once)

    def _norm(self, x, norm):  # [n, d] -> [n, d]
        c = self.config
        if c.norm == "none" or norm is None:
            return x
        gamma, beta = norm
        if c.norm == "rms":
            return self.arithmetic.rms_norm(x, gamma, c.norm_eps)
        return L.layer_norm(x, gamma, beta, c.norm_eps)

    def _qkv(self, x, lp: LayerParams, tables):  # [n, d] -> q [n, h*e], k [n, g*e], v [n, g*e]
        """Queries, keys and values, plus their biases if the layer has them (Qwen2);
        queries and keys normalised per head if the layer has those norms (Gemma 3,
        Qwen3), then turned by the rotary `tables` ([n, e/2], or None without rotary
        positions)."""
        if lp.wqkv is None:
            q, k, v = self._mm(x, lp.wq), self._mm(x, lp.wk), self._mm(x, lp.wv)
            if lp.bq is not None:
                q, k, v = q + lp.bq, k + lp.bk, v + lp.bv
        else:
            qkv = self._mm(x, lp.wqkv)                 # one product instead of three
            if lp.bq is not None:
                qkv += lp.bqkv
            a, b = lp.wq.shape[1], lp.wq.shape[1] + lp.wk.shape[1]
            v = qkv[:, b:].copy()      # its own array: a trace keeping V does not keep Q and K twice
            if lp.q_norm is None and tables is not None:
                qk = self._rope(qkv[:, :b], tables)    # both turned at once
                return qk[:, :a], qk[:, a:], v
            q, k = qkv[:, :a], qkv[:, a:b]
        if lp.q_norm is not None:
            q, k = self._head_norm(q, lp.q_norm), self._head_norm(k, lp.k_norm)
        if tables is not None:
            q, k = self._rope(q, tables), self._rope(k, tables)
        return q, k, v

    def _head_norm(self, x, norm):  # [n, heads*e] -> [n, heads*e], each head normalised alone
        n, e = x.shape[0], self.config.head_dim
        return self._norm(x.reshape(n, -1, e), norm).reshape(n, -1)

    def _rope(self, x, tables):  # [n, heads*e] -> [n, heads*e]
        return self.arithmetic.rope(x, tables, self.config.rope_pairs == "halves")

    def _ffn(self, x, lp: LayerParams, rows: int | None = None):  # [n, d] -> [n, d]
        """The feed-forward block; `rows` as `_mm`'s `rows_at_once`, for its products."""
        act = self.config.ffn
        if act in ("swiglu", "geglu"):                 # gate(x) * up(x), gated by SiLU or GELU
            gate = L.silu if act == "swiglu" else self.arithmetic.gelu
            if lp.w13 is None:
                return self._mm(gate(self._mm(x, lp.w1, rows)) * self._mm(x, lp.w3, rows), lp.w2, rows)
            gate_up = self._mm(x, lp.w13, rows)        # [n, 2f], one product instead of two
            f = lp.w1.shape[1]
            return self._mm(gate(gate_up[:, :f]) * gate_up[:, f:], lp.w2, rows)
        hidden = self._mm(x, lp.w1, rows) + (0 if lp.b1 is None else lp.b1)    # [n, f]
        hidden = np.tanh(hidden) if act == "tanh" else self.arithmetic.gelu(hidden)
        return self._mm(hidden, lp.w2, rows) + (0 if lp.b2 is None else lp.b2)


def random_params(config: DecoderConfig, rng: np.random.Generator, scale: float = 0.5,
                  dtype=np.float64) -> DecoderParams:
    """Random parameters of the right shapes (tests, benchmarks, the start of a fit)."""
    c = config
    d, e, f = c.d_model, c.head_dim, c.d_ff

    def w(*shape):
        return (rng.standard_normal(shape) * scale / np.sqrt(shape[0])).astype(dtype)

    def norm():
        if c.norm == "none":
            return None
        beta = None if c.norm == "rms" else w(1, d)[0]
        return (1 + w(1, d)[0] * 0.1, beta)

    gated = c.ffn in ("swiglu", "geglu")         # gate and up projections, no biases
    layer_list = tuple(
        LayerParams(
            wq=w(d, c.n_heads * e), wk=w(d, c.n_kv_heads * e), wv=w(d, c.n_kv_heads * e),
            wo=w(c.n_heads * e, d), w1=w(d, f), w2=w(f, d),
            w3=w(d, f) if gated else None,
            b1=None if gated else w(1, f)[0], b2=None if gated else w(1, d)[0],
            norm1=norm(), norm2=norm())
        for _ in range(c.n_layers))
    return DecoderParams(
        embed=(rng.standard_normal((c.vocab_size, d)) * scale).astype(dtype),
        layers=layer_list,
        w_out=None if c.tied_output else w(d, c.vocab_size),
        b_out=w(1, c.vocab_size)[0] if c.output_bias else None,
        pos_embed=(rng.standard_normal((c.max_positions, d)) * scale).astype(dtype)
        if c.positions == "learned" else None,
        norm_f=norm())
