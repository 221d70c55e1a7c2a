"""A llama-family model from a GGUF file, as a DecoderModel (float32 arithmetic throughout).

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
(shapes in numpy order: GGUF's ne = [in, out] is stored row-major as [out, in]). A layer
multiplies by their transposes [d_in, d_out]: float32 arrays, or `BlockMatrix` views
for quantised ones (see `quantized`). The converter already permuted Q and K so that
rotary positions act on adjacent pairs, the layout `layers.rope` uses.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .bpe import PRE_TOKENIZERS, BPEVocabulary, template_system_prompt
from .decoder import DecoderConfig, DecoderModel, DecoderParams, LayerParams
from .gguf import GGUFError, GGUFFile
from .quantized import QUANTISED, BlockMatrix, prepare

ARCHITECTURES = ("llama",)
CONTROL, USER_DEFINED = 3, 4     # tokenizer.ggml.token_type values recognised in text
# control tokens that end a turn, as llama.cpp also stops on them when the file names no
# end-of-turn id (SmolLM2: EOS is <|im_end|>, a plain continuation may end <|endoftext|>)
END_MARKERS = ("<|endoftext|>", "<|im_end|>", "<|eot_id|>", "<|end_of_text|>", "<end_of_turn>", "<|end|>")


def load_llama(path, name: str | None = None) -> DecoderModel:
    """Read a llama-architecture GGUF file into a DecoderModel (float32 activations) with its tokenizer."""
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


def llama_params(gf: GGUFFile, c: DecoderConfig) -> DecoderParams:
    """Every tensor checked against the shape the config implies. Q4_0, Q4_1 and Q8_0
    matrices stay in their blocks (`BlockMatrix`, a quarter to an eighth of float32's
    bytes: a decode step reads every weight once); F32 and F16 ones become float32.
    Each layer's Q, K, V and its gate and up projections are stacked when they share a
    storage kind, so a step reads them with one product per group instead of five."""
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
    stored = {name: _stored(gf, name) for name in expected}   # matrices [out, in]
    if any(isinstance(w, BlockMatrix) for w in stored.values()):
        prepare()          # the compiled loops now, not inside the first timed Prefill

    def layer(i: int) -> LayerParams:
        def w(kind):
            return stored[f"blk.{i}.{kind}.weight"]
        qkv, (wq, wk, wv) = _stacked([w("attn_q"), w("attn_k"), w("attn_v")])
        w13, (w1, w3) = _stacked([w("ffn_gate"), w("ffn_up")])
        return LayerParams(wq=wq.T, wk=wk.T, wv=wv.T, wo=w("attn_output").T, w1=w1.T, w3=w3.T,
                           w2=w("ffn_down").T, wqkv=None if qkv is None else qkv.T,
                           w13=None if w13 is None else w13.T,
                           norm1=(w("attn_norm"), None), norm2=(w("ffn_norm"), None))

    return DecoderParams(embed=stored["token_embd.weight"], layers=tuple(map(layer, range(c.n_layers))),
                         w_out=None if c.tied_output else stored["output.weight"].T,
                         norm_f=(stored["output_norm.weight"], None))


def _stored(gf: GGUFFile, name: str):  # -> BlockMatrix, or float32 ndarray (numpy shape)
    info = gf.info(name)
    if info.ggml_type in QUANTISED:
        return BlockMatrix.from_gguf(gf.raw(name), info.ggml_type, info.shape)
    return gf.tensor(name)


def _stacked(parts):
    """(all rows of `parts` in one matrix, the parts as views of it); (None, parts) when
    their storage differs (a file may quantise Q and V differently)."""
    if all(isinstance(p, np.ndarray) for p in parts):
        whole = np.concatenate(parts)
    elif all(isinstance(p, BlockMatrix) for p in parts) and len({p.kind for p in parts}) == 1:
        whole = BlockMatrix.stack(parts)
    else:
        return None, parts
    bounds = np.cumsum([0] + [p.shape[0] for p in parts])
    return whole, [whole[a:b] if isinstance(whole, np.ndarray) else whole.row_block(a, b)
                   for a, b in zip(bounds[:-1], bounds[1:])]


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
    for role in ("bos", "eos", "eot", "eom", "pad", "unknown"):
        tid = gf.get(f"tokenizer.ggml.{role}_token_id")
        if tid is not None and 0 <= int(tid) < len(tokens):
            specials["unk" if role == "unknown" else role] = int(tid)
    if "eot" not in specials:
        marked = [i for i in control if tokens[i] in END_MARKERS and i != specials.get("eos")]
        if marked:
            specials["eot"] = marked[0]
    return BPEVocabulary.build(tokens, merges, specials, control, split_digits=PRE_TOKENIZERS[pre],
                               chat_system=template_system_prompt(gf.get("tokenizer.chat_template")))
