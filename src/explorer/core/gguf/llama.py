"""A model of one of the families in `architectures` (Llama, Qwen2, Qwen3, Phi-3, Gemma 2,
Gemma 3) from a GGUF file, as a DecoderModel with float32 arithmetic, or llama.cpp's
(`with_arithmetic`)."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..models.arithmetic import FLOAT, Arithmetic
from ..models.decoder import DecoderConfig, DecoderModel, DecoderParams, LayerParams
from ..errors import ExplorerError
from .reader import GGUFError, GGUFFile
from .architectures import Architecture, architecture_of, decoder_config
from .checks import check_model_metadata
from .heap import collector_paused, keep_freed_arrays, return_freed_memory
from .blocks import (MAPPED_TYPES, BlockMatrix, layouts_of, mapped_kinds, prepare, prepare_mapped, stored_matrix,
                     stored_rows)
from ..tokens.from_gguf import vocabulary_from_gguf

# `--arithmetic`'s choices (`arithmetic_named`): "float", every product in float32 (the
# teaching path); "llama.cpp", as llama.cpp's CPU backend computes (`ggml_arithmetic`)
ARITHMETICS = ("float", "llama.cpp")


def load_llama(path, name: str | None = None, arithmetic: str = "float", in_place: bool = False) -> DecoderModel:
    """Read a GGUF file of one of the families in `architectures.ARCHITECTURES` into a
    DecoderModel (float32 activations) with its tokenizer. `arithmetic`: "float" (float32
    throughout) or "llama.cpp" (as llama.cpp's CPU backend computes: see `ARITHMETICS`).
    What each family adds to a llama-shaped decoder is in `architectures`; the tensors
    a file holds are listed in `expected_tensors`. `in_place`: the matrices of the types
    `blocks.MAPPED_TYPES` are read in place from the mapped file (`blocks.MappedMatrix`:
    about the file's size in memory, a faster load, slower Decode steps), not rewritten."""
    with collector_paused():
        return _load_llama(path, name, arithmetic, in_place)


def _load_llama(path, name: str | None, arithmetic: str, in_place: bool) -> DecoderModel:
    keep_freed_arrays()          # its 262,144-id sampling steps: 0.9 ms instead of 11 (heap, not fresh pages)
    gf = GGUFFile(path)
    check_model_metadata(gf)             # sizes and layer count believable before anything is allocated
    config = llama_config(gf)
    # Two cores: the weights are read (those not read in place copied out of the file, numpy
    # copies, which let go of the interpreter) on a thread of their own while this one
    # builds the tokenizer and loads the compiled loops (Python: numba's import and cache)
    reading = _OnAnotherThread(llama_params, gf, config, in_place)
    try:
        vocab = vocabulary_from_gguf(gf)
        if len(vocab) != config.vocab_size:
            raise GGUFError(f"{gf.path}: the tokenizer has {len(vocab)} tokens but token_embd has "
                            f"{config.vocab_size} rows")
        loops = layouts_of(info.ggml_type for info in gf.tensors.values()
                           if not (in_place and info.type_name in MAPPED_TYPES))
        if loops:
            prepare(loops)       # now, so that the first Prefill's time is the model's
    except BaseException:
        reading.wait()           # its outcome is beside the point now
        raise
    params = reading.result()
    prepare_mapped(mapped_kinds(_matrices(params)))    # the loops of the matrices read in place
    gf.release_pages()           # the pages read so far (the vocabulary's, the weights copied out)
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


def _matrices(params: DecoderParams):  # -> every weight matrix, as stored (BlockMatrix or array)
    transposed = [params.w_out] + [getattr(lp, name) for lp in params.layers
                                   for name in ("wq", "wk", "wv", "wo", "w1", "w2", "w3", "wqkv", "w13")]
    return [params.embed] + [w.T for w in transposed if w is not None]


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
    """The decoder the file describes (`architectures.decoder_config`)."""
    return decoder_config(gf, architecture_of(gf))


def llama_params(gf: GGUFFile, c: DecoderConfig, in_place: bool = False) -> DecoderParams:
    """Every tensor checked against the shape the config implies, and every tensor of the
    file used (one the engine would not read is refused by name: it would change what
    the model computes). Quantised matrices stay in their blocks (`BlockMatrix`, a
    quarter to an eighth of float32's bytes: a decode step reads every weight once), those
    with `in_place` those of the common downloads' types read in place from the mapped file
    (`MappedMatrix`); F32, F16 and BF16 ones become float32. Each layer's Q, K, V and its gate and up
    projections are stacked when they share a storage kind (or are one tensor in the
    file, as Phi-3 stores them), so a step reads them with one product per group
    instead of five."""
    a = architecture_of(gf)
    expected = expected_tensors(gf, a, c)
    unused = [name for name in gf.tensors if name not in expected]
    if unused:
        more = f" and {len(unused) - 3} more" if len(unused) > 3 else ""
        raise GGUFError(f"{gf.path}: tensor {', '.join(unused[:3])}{more} is not part of a {a.family} model "
                        f"as Token Explorer builds it (it would change the computation; not implemented)")
    for name, shape in expected.items():
        info = gf.info(name)                     # GGUFError naming a missing tensor
        if info.shape != shape:
            raise GGUFError(f"{gf.path}: tensor {name} has shape {list(info.shape)}, "
                            f"expected {list(shape)} from the metadata")
        gf.raw(name)                             # GGUFError naming an unsupported type
    q_out, kv_out = c.n_heads * c.head_dim, c.n_kv_heads * c.head_dim

    def layer(i: int) -> LayerParams:
        b = f"blk.{i}."

        def w(kind):
            return _stored(gf, f"{b}{kind}.weight", in_place)

        if b + "attn_qkv.weight" in expected:       # Phi-3: one tensor [q + 2kv, d]
            qkv, (wq, wk, wv) = _split_rows(gf, b + "attn_qkv.weight", (q_out, kv_out, kv_out), in_place)
        else:
            qkv, (wq, wk, wv) = _stacked(gf, [f"{b}attn_{kind}.weight" for kind in "qkv"], in_place)
        if b + "ffn_gate.weight" in expected:
            w13, (w1, w3) = _stacked(gf, [f"{b}ffn_{kind}.weight" for kind in ("gate", "up")], in_place)
        else:                                       # Phi-3: ffn_up [2f, d] = gate, then up
            w13, (w1, w3) = _split_rows(gf, b + "ffn_up.weight", (c.d_ff, c.d_ff), in_place)
        extra = {}
        if a.head_norms:
            extra.update(q_norm=(w("attn_q_norm"), None), k_norm=(w("attn_k_norm"), None))
        if a.post_norms:
            extra.update(post_norm1=(w("post_attention_norm"), None), post_norm2=(w("post_ffw_norm"), None))
        if b + "attn_q.bias" in expected:
            extra.update({f"b{kind}": gf.tensor(f"{b}attn_{kind}.bias") for kind in "qkv"})
        return LayerParams(wq=wq.T, wk=wk.T, wv=wv.T, wo=w("attn_output").T, w1=w1.T, w3=w3.T,
                           w2=w("ffn_down").T, wqkv=None if qkv is None else qkv.T,
                           w13=None if w13 is None else w13.T,
                           norm1=(w("attn_norm"), None), norm2=(w("ffn_norm"), None), **extra)

    return DecoderParams(embed=_stored(gf, "token_embd.weight", in_place), layers=tuple(map(layer, range(c.n_layers))),
                         w_out=None if c.tied_output else _stored(gf, "output.weight", in_place).T,
                         norm_f=(_stored(gf, "output_norm.weight"), None))


def expected_tensors(gf: GGUFFile, a: Architecture, c: DecoderConfig) -> dict[str, tuple]:
    """name -> numpy shape of every tensor a file of architecture `a` and configuration
    `c` holds; where a family allows two spellings (fused or separate Q, K, V; biases
    or none) the file's own is taken.

        token_embd                          [V, d]   token embedding (also the output head if
                                                     there is no `output` tensor)
        output_norm [d], output [V, d] (optional), rope_freqs / rope_factors_short /
        rope_factors_long [e/2] (optional: `architectures.rotary_scaling` reads them)
        blk.N.attn_norm, blk.N.ffn_norm     [d]      RMSNorm weights
        blk.N.attn_q / attn_k / attn_v      [h*e, d] / [g*e, d] / [g*e, d]
          (Phi-3: blk.N.attn_qkv            [(h+2g)*e, d])
        blk.N.attn_q/k/v.bias               [h*e] / [g*e] / [g*e]   (Qwen2; optional in llama)
        blk.N.attn_q_norm, attn_k_norm      [e]      (Qwen3, Gemma 3)
        blk.N.attn_output                   [d, h*e]
        blk.N.post_attention_norm, post_ffw_norm [d] (Gemma)
        blk.N.ffn_gate / ffn_up             [f, d]   SwiGLU / GeGLU
          (Phi-3: blk.N.ffn_up              [2f, d], the gate's rows first)
        blk.N.ffn_down                      [d, f]
    A layer multiplies by their transposes [d_in, d_out]. For llama the converter already
    permuted Q and K so that rotary positions act on adjacent pairs, the layout
    `layers.rope` uses; the other families turn halves (NEOX)."""
    d, f, e = c.d_model, c.d_ff, c.head_dim
    q_out, kv_out = c.n_heads * e, c.n_kv_heads * e
    out = {"token_embd.weight": (c.vocab_size, d), "output_norm.weight": (d,)}
    if not c.tied_output:
        out["output.weight"] = (c.vocab_size, d)
    rotary = ("rope_freqs.weight",) if a.key == "llama" else ("rope_factors_short.weight",
                                                              "rope_factors_long.weight") if a.key == "phi3" else ()
    out.update({name: (e // 2,) for name in rotary if name in gf.tensors})
    for i in range(c.n_layers):
        b = f"blk.{i}."
        out.update({b + "attn_norm.weight": (d,), b + "ffn_norm.weight": (d,),
                    b + "attn_output.weight": (d, q_out), b + "ffn_down.weight": (d, f)})
        if a.fused and b + "attn_qkv.weight" in gf.tensors:
            out[b + "attn_qkv.weight"] = (q_out + 2 * kv_out, d)
        else:
            out.update({b + "attn_q.weight": (q_out, d), b + "attn_k.weight": (kv_out, d),
                        b + "attn_v.weight": (kv_out, d)})
        if a.fused and b + "ffn_gate.weight" not in gf.tensors:
            out[b + "ffn_up.weight"] = (2 * f, d)
        else:
            out.update({b + "ffn_gate.weight": (f, d), b + "ffn_up.weight": (f, d)})
        if a.biases and (a.key == "qwen2" or b + "attn_q.bias" in gf.tensors):
            out.update({b + "attn_q.bias": (q_out,), b + "attn_k.bias": (kv_out,), b + "attn_v.bias": (kv_out,)})
        if a.head_norms:
            out.update({b + "attn_q_norm.weight": (e,), b + "attn_k_norm.weight": (e,)})
        if a.post_norms:
            out.update({b + "post_attention_norm.weight": (d,), b + "post_ffw_norm.weight": (d,)})
    return out


def _stored(gf: GGUFFile, name: str, in_place: bool = False):  # -> BlockMatrix, or float32 ndarray (numpy shape)
    """A tensor as the model keeps it: F32 ones read in place from the mapped file,
    quantised ones rewritten into their layout's blocks (a copy; with `in_place`, those
    of `blocks.MAPPED_TYPES` read in place, `blocks.MappedMatrix`), F16 and BF16 ones made
    float32."""
    info = gf.info(name)
    if info.quant_type.layout is not None:
        return stored_matrix(gf.raw(name), info.ggml_type, info.shape, in_place)
    return gf.mapped(name)


def _stacked(gf: GGUFFile, names, in_place: bool = False):
    """(all rows of the tensors `names` in one matrix, the parts as views of it), each
    tensor read once; (None, parts) when their storage differs (a file may quantise Q and
    V differently; with `in_place`, tensors read in place are stacked only if they are of
    one type, `blocks.stored_rows`, else each is kept in place on its own)."""
    infos = [gf.info(name) for name in names]
    layouts = {info.quant_type.layout for info in infos}
    mapped = {in_place and info.type_name in MAPPED_TYPES for info in infos}   # stacked without a copy if of one type
    if layouts == {None}:                                # float32 and float16
        whole = np.concatenate([gf.tensor(name) for name in names])
    elif len(layouts) == 1 and (mapped == {False} or len({info.ggml_type for info in infos}) == 1):
        whole = stored_rows([(gf.raw(info.name), info.ggml_type, info.shape) for info in infos], in_place)
    else:
        return None, [_stored(gf, name, in_place) for name in names]
    bounds = np.cumsum([0] + [info.shape[0] for info in infos])
    return whole, [whole[a:b] if isinstance(whole, np.ndarray) else whole.row_block(a, b)
                   for a, b in zip(bounds[:-1], bounds[1:])]


def _split_rows(gf: GGUFFile, name: str, sizes, in_place: bool = False):
    """(the tensor `name`, its consecutive row blocks of `sizes` as views of it): one
    tensor the file stores fused (Phi-3's attn_qkv, its gate|up)."""
    whole = _stored(gf, name, in_place)
    bounds = np.cumsum([0, *sizes])
    return whole, [whole[a:b] if isinstance(whole, np.ndarray) else whole.row_block(a, b)
                   for a, b in zip(bounds[:-1], bounds[1:])]

