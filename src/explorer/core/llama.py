"""A llama-family model from a GGUF file, as a DecoderModel (float32 throughout).

Tensor names (llama.cpp's):
    token_embd                          [V, d]   token embedding (also the output head if
                                                 there is no `output` tensor)
    blk.N.attn_norm, blk.N.ffn_norm     [d]      RMSNorm weights
    blk.N.attn_q / attn_k / attn_v      [h*e, d] / [g*e, d] / [g*e, d]
    blk.N.attn_output                   [d, h*e]
    blk.N.ffn_gate / ffn_up             [f, d]   SwiGLU
    blk.N.ffn_down                      [d, f]
    output_norm                         [d]
    output                              [V, d]   optional
(shapes in numpy order: GGUF's ne = [in, out] is stored row-major as [out, in]). Our
matrices are [d_in, d_out]: each weight is transposed once, at load, into a C-ordered
array (a matrix-vector product streams it row by row, the fastest a decode step gets). A
layer's Q, K, V and its gate and up projections are stored side by side (LayerParams.wqkv,
.w13), so a step reads each group with one product. The converter already permuted Q and
K so that rotary positions act on adjacent pairs, the layout `layers.rope` uses.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from .bpe import PRE_TOKENIZERS, BPEVocabulary
from .decoder import DecoderConfig, DecoderModel, DecoderParams, LayerParams
from .gguf import GGUFError, GGUFFile

ARCHITECTURES = ("llama",)
CONTROL, USER_DEFINED = 3, 4     # tokenizer.ggml.token_type values recognised in text


def load_llama(path, name: str | None = None) -> DecoderModel:
    """Read a llama-architecture GGUF file into a float32 DecoderModel with its tokenizer."""
    gf = GGUFFile(path)
    config = llama_config(gf)
    vocab = vocabulary_from_gguf(gf)
    if len(vocab) != config.vocab_size:
        raise GGUFError(f"{gf.path}: the tokenizer has {len(vocab)} tokens but token_embd has "
                        f"{config.vocab_size} rows")
    params = llama_params(gf, config)
    return DecoderModel(config, params, vocab, name=name or Path(path).stem, dtype=np.float32)


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
    return DecoderConfig(
        vocab_size=vocab, d_model=d, n_layers=int(gf.require(f"{arch}.block_count")),
        n_heads=heads, n_kv_heads=kv_heads, head_dim=head_dim,
        d_ff=int(gf.require(f"{arch}.feed_forward_length")), ffn="swiglu", norm="rms",
        positions="rope", max_positions=int(gf.get(f"{arch}.context_length", 2048)),
        rope_base=float(gf.get(f"{arch}.rope.freq_base", 10000.0)),
        norm_eps=float(gf.get(f"{arch}.attention.layer_norm_rms_epsilon", 1e-5)),
        output_bias=False, tied_output="output.weight" not in gf.tensors)


def llama_params(gf: GGUFFile, c: DecoderConfig, threads: int = 2) -> DecoderParams:
    """Every tensor dequantised to float32 (two threads: numpy releases the GIL), checked
    against the shape the config implies, matrices as [d_in, d_out] views."""
    d, f, q_out, kv_out = c.d_model, c.d_ff, c.n_heads * c.head_dim, c.n_kv_heads * c.head_dim
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
    for name, shape in expected.items():
        info = gf.info(name)                     # GGUFError naming a missing tensor
        if info.shape != shape:
            raise GGUFError(f"{gf.path}: tensor {name} has shape {list(info.shape)}, "
                            f"expected {list(shape)} from the metadata")
        gf.raw(name)                             # GGUFError naming an unsupported type
    # Q, K, V of a layer are written side by side into one [d, (h+2g)*e] matrix, and the
    # SwiGLU gate and up projections into one [d, 2f] matrix: a decode step then makes two
    # larger matrix-vector products instead of five (the separate matrices are its views)
    into = {}
    fused = []
    for i in range(c.n_layers):
        b = f"blk.{i}."
        wqkv = np.empty((d, q_out + 2 * kv_out), np.float32)
        w13 = np.empty((d, 2 * f), np.float32)
        into.update({b + "attn_q.weight": wqkv[:, :q_out], b + "attn_k.weight": wqkv[:, q_out:q_out + kv_out],
                     b + "attn_v.weight": wqkv[:, q_out + kv_out:],
                     b + "ffn_gate.weight": w13[:, :f], b + "ffn_up.weight": w13[:, f:]})
        fused.append((wqkv, w13))

    def transposed(name):  # [out, in] as stored -> C-ordered [in, out]; vectors as they are
        a = gf.tensor(name)
        if name in into:
            into[name][...] = a.T
            return into[name]
        return np.ascontiguousarray(a.T) if a.ndim == 2 else a

    # the largest first, so the two threads finish together
    names = sorted(expected, key=lambda n: -gf.info(n).n_elements)
    with ThreadPoolExecutor(max(1, threads)) as pool:
        arrays = dict(zip(names, pool.map(transposed, names)))

    def w(name):  # [in, out]
        return arrays[name]

    layers = tuple(
        LayerParams(wq=w(f"blk.{i}.attn_q.weight"), wk=w(f"blk.{i}.attn_k.weight"),
                    wv=w(f"blk.{i}.attn_v.weight"), wo=w(f"blk.{i}.attn_output.weight"),
                    w1=w(f"blk.{i}.ffn_gate.weight"), w2=w(f"blk.{i}.ffn_down.weight"),
                    w3=w(f"blk.{i}.ffn_up.weight"),
                    norm1=(arrays[f"blk.{i}.attn_norm.weight"], None),
                    norm2=(arrays[f"blk.{i}.ffn_norm.weight"], None),
                    wqkv=fused[i][0], w13=fused[i][1])
        for i in range(c.n_layers))
    # The embedding is kept as [d, V] and used as its [V, d] view: the output head reads
    # it transposed (every token's logit), which is then a C-ordered matrix-vector product
    return DecoderParams(embed=arrays["token_embd.weight"].T, layers=layers,
                         w_out=None if c.tied_output else w("output.weight"),
                         norm_f=(arrays["output_norm.weight"], None))


def vocabulary_from_gguf(gf: GGUFFile) -> BPEVocabulary:
    """The byte-level BPE tokenizer stored in the file's `tokenizer.ggml.*` metadata."""
    kind = gf.require("tokenizer.ggml.model")
    if kind != "gpt2":
        raise GGUFError(f"{gf.path}: tokenizer {kind!r} is not supported (only byte-level BPE, 'gpt2')")
    pre = gf.get("tokenizer.ggml.pre", "gpt-2")
    if pre not in PRE_TOKENIZERS:
        raise GGUFError(f"{gf.path}: pre-tokenizer {pre!r} is not supported "
                        f"(supported: {', '.join(PRE_TOKENIZERS)})")
    tokens = gf.require("tokenizer.ggml.tokens")
    merges = gf.require("tokenizer.ggml.merges")
    types = gf.get("tokenizer.ggml.token_type")
    control = [] if types is None else np.flatnonzero((types == CONTROL) | (types == USER_DEFINED)).tolist()
    specials = {}
    for role in ("bos", "eos", "pad", "unknown"):
        tid = gf.get(f"tokenizer.ggml.{role}_token_id")
        if tid is not None and 0 <= int(tid) < len(tokens):
            specials["unk" if role == "unknown" else role] = int(tid)
    return BPEVocabulary.build(tokens, merges, specials, control, split_digits=PRE_TOKENIZERS[pre])
