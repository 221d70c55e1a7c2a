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
matrices are [d_in, d_out] views into one buffer laid out for decode speed (see
`_weight_arena`). The converter already permuted Q and
K so that rotary positions act on adjacent pairs, the layout `layers.rope` uses.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from .bpe import PRE_TOKENIZERS, BPEVocabulary, template_system_prompt
from .decoder import DecoderConfig, DecoderModel, DecoderParams, LayerParams
from .gguf import GGUFError, GGUFFile

ARCHITECTURES = ("llama",)
CONTROL, USER_DEFINED = 3, 4     # tokenizer.ggml.token_type values recognised in text
# control tokens that end a turn, as llama.cpp also stops on them when the file names no
# end-of-turn id (SmolLM2: EOS is <|im_end|>, a plain continuation may end <|endoftext|>)
END_MARKERS = ("<|endoftext|>", "<|im_end|>", "<|eot_id|>", "<|end_of_text|>", "<end_of_turn>", "<|end|>")


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
    into = _weight_arena(c, expected)

    def transposed(name):  # [out, in] as stored -> [in, out]; vectors as they are
        a = gf.tensor(name)
        if name in into:
            into[name][...] = a.T
            return into[name]
        return a

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
                    wqkv=into[f"blk.{i}.wqkv"], w13=into[f"blk.{i}.w13"])
        for i in range(c.n_layers))
    return DecoderParams(embed=arrays["token_embd.weight"].T, layers=layers,
                         w_out=None if c.tied_output else w("output.weight"),
                         norm_f=(arrays["output_norm.weight"], None))


def _weight_arena(c: DecoderConfig, expected: dict) -> dict[str, np.ndarray]:
    """Where each matrix is dequantised to: [d_in, d_out] views of one float32 buffer.

    A decode step is a chain of matrix-vector products that stream every weight once, so
    its speed is memory bandwidth. One buffer, in the order a step reads it, is backed by
    huge pages (numpy asks for them on large allocations): fewer TLB misses than 300
    separate arrays. Each layer's Q, K, V and its gate and up projections sit side by
    side ("blk.N.wqkv", "blk.N.w13": one product per group instead of five). The down
    projection is stored [d, f] and used as its [f, d] transposed view, and the embedding
    stored [d, V] is used as its [V, d] view (the output head): for these two shapes
    OpenBLAS streams the other orientation faster (benchmarks/bench_real_model.py)."""
    d, f, q_out, kv_out = c.d_model, c.d_ff, c.n_heads * c.head_dim, c.n_kv_heads * c.head_dim
    matrices = [name for name, shape in expected.items() if len(shape) == 2]
    arena = np.empty(sum(int(np.prod(expected[n])) for n in matrices), np.float32)
    used = 0

    def take(rows, cols):  # the next [rows, cols] C-ordered block of the arena
        nonlocal used
        block = arena[used:used + rows * cols].reshape(rows, cols)
        used += rows * cols
        return block

    into = {}
    for i in range(c.n_layers):
        b = f"blk.{i}."
        wqkv, wo, w13, w2_rows = take(d, q_out + 2 * kv_out), take(q_out, d), take(d, 2 * f), take(d, f)
        into.update({b + "wqkv": wqkv, b + "w13": w13,
                     b + "attn_q.weight": wqkv[:, :q_out], b + "attn_k.weight": wqkv[:, q_out:q_out + kv_out],
                     b + "attn_v.weight": wqkv[:, q_out + kv_out:], b + "attn_output.weight": wo,
                     b + "ffn_gate.weight": w13[:, :f], b + "ffn_up.weight": w13[:, f:],
                     b + "ffn_down.weight": w2_rows.T})
    into["token_embd.weight"] = take(d, c.vocab_size)           # [d, V]; embed = its .T
    if not c.tied_output:
        into["output.weight"] = take(d, c.vocab_size)
    assert used == arena.size
    return into


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
