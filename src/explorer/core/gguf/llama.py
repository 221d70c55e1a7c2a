"""A llama-family model (SmolLM2's "llama", Gemma 3's "gemma3") from a GGUF file, as a
DecoderModel with float32 arithmetic, or llama.cpp's (`with_arithmetic`)."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..models.arithmetic import FLOAT, Arithmetic
from ..models.decoder import DecoderConfig, DecoderModel, DecoderParams, LayerParams
from ..errors import ExplorerError
from .reader import GGUFError, GGUFFile
from .checks import check_model_metadata
from .heap import collector_paused, keep_freed_arrays, return_freed_memory
from .blocks import BlockMatrix, layouts_of, prepare
from ..tokens.from_gguf import vocabulary_from_gguf

ARCHITECTURES = ("llama", "gemma3")
# `--arithmetic`'s choices (`arithmetic_named`): "float", every product in float32 (the
# teaching path); "llama.cpp", as llama.cpp's CPU backend computes (`ggml_arithmetic`)
ARITHMETICS = ("float", "llama.cpp")
# Gemma 3 as llama.cpp builds it: five sliding-window layers, then a global one; the
# windowed layers' rotary base (llama.cpp: rope_freq_base_train_swa)
GEMMA3_PATTERN, GEMMA3_LOCAL_ROPE_BASE = 6, 10000.0
# Gemma 3's extra norms: LayerParams field -> tensor, and whether it spans a head (e) or d
GEMMA3_NORMS = {"q_norm": ("attn_q_norm", "head"), "k_norm": ("attn_k_norm", "head"),
                "post_norm1": ("post_attention_norm", "model"), "post_norm2": ("post_ffw_norm", "model")}


def load_llama(path, name: str | None = None, arithmetic: str = "float") -> DecoderModel:
    """Read a llama- or gemma3-architecture GGUF file into a DecoderModel (float32
    activations) with its tokenizer. `arithmetic`: "float" (float32 throughout) or
    "llama.cpp" (as llama.cpp's CPU backend computes: see `ARITHMETICS`).

    "gemma3" reads the same tensors as "llama" plus four norms per layer (attn_q_norm,
    attn_k_norm [e]; post_attention_norm, post_ffw_norm [d]), scales its embedding by
    sqrt(d), rotates (x[i], x[i + e/2]) pairs (NeoX), and lets five layers of every six read
    only the latest `sliding_window` positions, with rotary base 10,000 (llama.cpp's value;
    the file's `rope.freq_base` is the global layers'). Gemma's norms multiply by (1 + w);
    the converter stored 1 + w, so they are plain RMSNorms here.

    Tensor names (llama.cpp's), in numpy order ([out, in]):
        token_embd                          [V, d]   token embedding (also the output head if
                                                     there is no `output` tensor)
        blk.N.attn_norm, blk.N.ffn_norm     [d]      RMSNorm weights
        blk.N.attn_q / attn_k / attn_v      [h*e, d] / [g*e, d] / [g*e, d]
        blk.N.attn_output                   [d, h*e]
        blk.N.ffn_gate / ffn_up             [f, d]   SwiGLU
        blk.N.ffn_down                      [d, f]
        output_norm                         [d]
        output                              [V, d]   optional
    A layer multiplies by their transposes [d_in, d_out]: float32 arrays, or `BlockMatrix`
    views for quantised ones. For llama the converter already permuted Q and K so that
    rotary positions act on adjacent pairs, the layout `layers.rope` uses."""
    with collector_paused():
        return _load_llama(path, name, arithmetic)


def _load_llama(path, name: str | None, arithmetic: str) -> DecoderModel:
    keep_freed_arrays()          # its 262,144-id sampling steps: 0.9 ms instead of 11 (heap, not fresh pages)
    gf = GGUFFile(path)
    check_model_metadata(gf)             # sizes and layer count believable before anything is allocated
    config = llama_config(gf)
    # Two cores: the weights are copied out of the file on a thread of their own (numpy
    # copies, which let go of the interpreter) while this one builds the tokenizer and
    # loads the compiled loops (Python: numba's import and cache, a third of a load)
    reading = _OnAnotherThread(llama_params, gf, config)
    try:
        vocab = vocabulary_from_gguf(gf)
        if len(vocab) != config.vocab_size:
            raise GGUFError(f"{gf.path}: the tokenizer has {len(vocab)} tokens but token_embd has "
                            f"{config.vocab_size} rows")
        loops = layouts_of(info.ggml_type for info in gf.tensors.values())
        if loops:
            prepare(loops)       # now, so that the first Prefill's time is the model's
    except BaseException:
        reading.wait()           # its outcome is beside the point now
        raise
    params = reading.result()
    return_freed_memory()        # the file's lists and the blocks' unpacking (80 MB for Gemma 3)
    return DecoderModel(config, params, vocab, name=name or Path(path).stem, dtype=np.float32,
                        arithmetic=arithmetic_named(arithmetic))


class _OnAnotherThread:
    """`fn(*args)` on a thread of its own, begun at once: `result()` waits for it and
    returns what it returned or raises what it raised (in the caller's thread)."""

    def __init__(self, fn, *args):
        self._out, self._error = None, None
        self._thread = threading.Thread(target=self._run, args=(fn, args), name=fn.__name__, daemon=True)
        self._thread.start()

    def _run(self, fn, args) -> None:
        try:
            self._out = fn(*args)
        except BaseException as exc:     # handed to the caller by result()
            self._error = exc

    def wait(self) -> None:
        self._thread.join()

    def result(self):
        self.wait()
        if self._error is not None:
            if not isinstance(self._error, ExplorerError):    # a message of its own says what was read
                self._error.add_note(f"(raised by {self._thread.name} on a thread of its own)")
            raise self._error
        return self._out


def arithmetic_named(name: str) -> Arithmetic:
    """The arithmetic of one of ARITHMETICS' names."""
    if name not in ARITHMETICS:
        raise ValueError(f"arithmetic = {name!r}: expected one of {ARITHMETICS}")
    if name == FLOAT.name:
        return FLOAT
    from .ggml_arithmetic import LLAMA_CPP     # numba: only in llama.cpp's arithmetic
    return LLAMA_CPP


def with_arithmetic(model, arithmetic: str):
    """`model` computing in `arithmetic` (one of ARITHMETICS), sharing its weights:
    "llama.cpp" only for a model read from a GGUF file (its quantised products are what
    that arithmetic changes)."""
    if getattr(model, "arithmetic", FLOAT).name == arithmetic:
        return model
    if not (isinstance(model, DecoderModel) and isinstance(model.params.embed, BlockMatrix)):
        raise ExplorerError(f"arithmetic {arithmetic!r}: only a model read from a quantised GGUF file "
                            f"(smollm2, gemma3-270m, a .gguf) computes as llama.cpp; {model.name!r} is not one")
    return replace(model, arithmetic=arithmetic_named(arithmetic))


def llama_config(gf: GGUFFile) -> DecoderConfig:
    arch = gf.require("general.architecture")
    if arch not in ARCHITECTURES:
        raise GGUFError(f"{gf.path}: architecture {arch!r} is not supported "
                        f"(supported: {', '.join(ARCHITECTURES)})")
    d = int(gf.require(f"{arch}.embedding_length"))
    heads = int(gf.require(f"{arch}.attention.head_count"))
    kv_heads = int(gf.get(f"{arch}.attention.head_count_kv", heads))
    head_dim = int(gf.get(f"{arch}.attention.key_length", d // heads))
    rot = int(gf.get(f"{arch}.rope.dimension_count", head_dim))
    if rot != head_dim:
        raise GGUFError(f"{gf.path}: rotary positions on {rot} of {head_dim} head dimensions "
                        f"are not supported (only all of them)")
    scaling = gf.get(f"{arch}.rope.scaling.type", "none")
    if scaling not in ("none", None):
        raise GGUFError(f"{gf.path}: rope scaling {scaling!r} is not supported")
    vocab = gf.info("token_embd.weight").shape[0]
    settings = dict(
        vocab_size=vocab, d_model=d, n_layers=int(gf.require(f"{arch}.block_count")),
        n_heads=heads, n_kv_heads=kv_heads, head_dim=head_dim,
        d_ff=int(gf.require(f"{arch}.feed_forward_length")), ffn="swiglu", norm="rms",
        positions="rope", max_positions=int(gf.get(f"{arch}.context_length", 2048)),
        rope_base=float(gf.get(f"{arch}.rope.freq_base", 10000.0)),
        norm_eps=float(gf.get(f"{arch}.attention.layer_norm_rms_epsilon", 1e-5)),
        output_bias=False, tied_output="output.weight" not in gf.tensors,
        kept_rows=1)     # the last position's logits choose a token: 49,152 numbers a position
    if arch == "gemma3":
        settings.update(_gemma3_settings(gf, settings["n_layers"], d, vocab))
    return DecoderConfig(**settings)


def _gemma3_settings(gf: GGUFFile, layers: int, d: int, vocab: int) -> dict:
    """What Gemma 3 adds to a llama configuration (see the module doc)."""
    value_length = gf.get("gemma3.attention.value_length")
    key_length = gf.get("gemma3.attention.key_length")
    if value_length is not None and value_length != key_length:
        raise GGUFError(f"{gf.path}: gemma3.attention.value_length = {value_length} differs from "
                        f"key_length = {key_length} (not supported)")
    window = int(gf.require("gemma3.attention.sliding_window"))
    if window <= 0:
        raise GGUFError(f"{gf.path}: gemma3.attention.sliding_window = {window}, expected a positive number")
    pattern = gf.get("gemma3.attention.sliding_window_pattern", GEMMA3_PATTERN)
    if np.ndim(pattern):          # one flag per layer
        local = [bool(x) for x in pattern]
        if len(local) != layers:
            raise GGUFError(f"{gf.path}: gemma3.attention.sliding_window_pattern has {len(local)} "
                            f"entries for {layers} layers")
    else:                         # a period: the last layer of every period is global
        local = [int(pattern) == 0 or i % int(pattern) < int(pattern) - 1 for i in range(layers)]
    return dict(ffn="geglu", embed_scale=float(np.sqrt(np.float32(d))), rope_pairs="halves",
                windows=tuple(window if lo else 0 for lo in local),
                local_rope_base=float(gf.get("gemma3.rope.freq_base_swa", GEMMA3_LOCAL_ROPE_BASE)))


def llama_params(gf: GGUFFile, c: DecoderConfig) -> DecoderParams:
    """Every tensor checked against the shape the config implies. Q4_0, Q4_1 and Q8_0
    matrices stay in their blocks (`BlockMatrix`, a quarter to an eighth of float32's
    bytes: a decode step reads every weight once); F32 and F16 ones become float32.
    Each layer's Q, K, V and its gate and up projections are stacked when they share a
    storage kind, so a step reads them with one product per group instead of five."""
    d, f, q_out, kv_out = c.d_model, c.d_ff, c.n_heads * c.head_dim, c.n_kv_heads * c.head_dim
    extra = GEMMA3_NORMS if c.ffn == "geglu" else {}
    expected = {"token_embd.weight": (c.vocab_size, d), "output_norm.weight": (d,)}
    if not c.tied_output:
        expected["output.weight"] = (c.vocab_size, d)
    for i in range(c.n_layers):
        b = f"blk.{i}."
        expected.update({
            b + "attn_norm.weight": (d,), b + "ffn_norm.weight": (d,),
            b + "attn_q.weight": (q_out, d), b + "attn_k.weight": (kv_out, d),
            b + "attn_v.weight": (kv_out, d), b + "attn_output.weight": (d, q_out),
            b + "ffn_gate.weight": (f, d), b + "ffn_up.weight": (f, d), b + "ffn_down.weight": (d, f)})
        expected.update({f"{b}{kind}.weight": (c.head_dim,) if span == "head" else (d,)
                         for kind, span in extra.values()})
    for name, shape in expected.items():
        info = gf.info(name)                     # GGUFError naming a missing tensor
        if info.shape != shape:
            raise GGUFError(f"{gf.path}: tensor {name} has shape {list(info.shape)}, "
                            f"expected {list(shape)} from the metadata")
        gf.raw(name)                             # GGUFError naming an unsupported type

    def layer(i: int) -> LayerParams:
        def w(kind):
            return _stored(gf, f"blk.{i}.{kind}.weight")
        qkv, (wq, wk, wv) = _stacked(gf, [f"blk.{i}.attn_{kind}.weight" for kind in "qkv"])
        w13, (w1, w3) = _stacked(gf, [f"blk.{i}.ffn_{kind}.weight" for kind in ("gate", "up")])
        return LayerParams(wq=wq.T, wk=wk.T, wv=wv.T, wo=w("attn_output").T, w1=w1.T, w3=w3.T,
                           w2=w("ffn_down").T, wqkv=None if qkv is None else qkv.T,
                           w13=None if w13 is None else w13.T,
                           norm1=(w("attn_norm"), None), norm2=(w("ffn_norm"), None),
                           **{field: (w(kind), None) for field, (kind, _) in extra.items()})

    return DecoderParams(embed=_stored(gf, "token_embd.weight"), layers=tuple(map(layer, range(c.n_layers))),
                         w_out=None if c.tied_output else _stored(gf, "output.weight").T,
                         norm_f=(_stored(gf, "output_norm.weight"), None))


def _stored(gf: GGUFFile, name: str):  # -> BlockMatrix, or float32 ndarray (numpy shape)
    info = gf.info(name)
    if info.quant_type.layout is not None:
        return BlockMatrix.from_gguf(gf.raw(name), info.ggml_type, info.shape)
    return gf.tensor(name)


def _stacked(gf: GGUFFile, names):
    """(all rows of the tensors `names` in one matrix, the parts as views of it), each
    tensor read once; (None, parts) when their storage differs (a file may quantise Q and
    V differently)."""
    infos = [gf.info(name) for name in names]
    layouts = {info.quant_type.layout for info in infos}
    if layouts == {None}:                                # float32 and float16
        whole = np.concatenate([gf.tensor(name) for name in names])
    elif len(layouts) == 1:
        whole = BlockMatrix.from_gguf_rows([(gf.raw(info.name), info.ggml_type, info.shape) for info in infos])
    else:
        return None, [_stored(gf, name) for name in names]
    bounds = np.cumsum([0] + [info.shape[0] for info in infos])
    return whole, [whole[a:b] if isinstance(whole, np.ndarray) else whole.row_block(a, b)
                   for a, b in zip(bounds[:-1], bounds[1:])]
