"""GGUF files shaped like real Qwen2.5 models, with random weights in the Q4_K_M mix of
types llama.cpp's quantiser writes, for benchmarks (bench_families.py). The weights are
random blocks (the `gguf` package cannot quantise K-quants): their numbers are
meaningless, their sizes, types and layout are a real download's. Written outside the
repository (a temporary folder, or --keep), never committed."""

from __future__ import annotations

from dataclasses import dataclass

import gguf
import numpy as np
from gguf import GGMLQuantizationType as Q

# bytes per block and the float16 scales' byte offsets in it, of the types written here
BLOCKS = {Q.Q4_K: (256, 144, (0, 2)), Q.Q6_K: (256, 210, (208,)), Q.Q5_0: (32, 22, (0,)), Q.Q8_0: (32, 34, (0,))}
# llama.cpp's fallback when a row is not a whole number of 256-element K-quant blocks
# (llama-quant.cpp): Qwen2.5-0.5B's rows of 896 take Q5_0 and Q8_0
FALLBACK = {Q.Q4_K: Q.Q5_0, Q.Q6_K: Q.Q8_0}


@dataclass(frozen=True)
class Shape:
    name: str
    layers: int
    d: int
    heads: int
    kv_heads: int
    ff: int
    vocab: int = 151_936
    context: int = 32_768


SHAPES = {s.name: s for s in (
    Shape("qwen2.5-0.5b", layers=24, d=896, heads=14, kv_heads=2, ff=4864),
    Shape("qwen2.5-1.5b", layers=28, d=1536, heads=12, kv_heads=2, ff=8960),
)}


def more_bits(layer: int, layers: int) -> bool:
    """llama.cpp's use_more_bits: the layers whose attn_v and ffn_down Q4_K_M keeps in Q6_K."""
    return layer < layers // 8 or layer >= 7 * layers // 8 or (layer - layers // 8) % 3 == 2


def q4_k_m_type(name: str, layer: int, layers: int, cols: int):
    """The type llama.cpp's Q4_K_M gives a matrix (the tied embedding counts as the output)."""
    if name == "token_embd":
        chosen = Q.Q6_K
    elif name in ("attn_v", "ffn_down"):
        chosen = Q.Q6_K if more_bits(layer, layers) else Q.Q4_K
    else:
        chosen = Q.Q4_K
    return chosen if cols % 256 == 0 else FALLBACK[chosen]


def random_blocks(rng, qtype, rows: int, cols: int) -> np.ndarray:  # -> [rows, cols / block * bytes] uint8
    """Random quantised rows whose float16 scales are small and finite."""
    block, size, scales = BLOCKS[qtype]
    data = rng.integers(0, 256, (rows * cols // block, size), np.uint8)
    for at in scales:
        data[:, at:at + 2] = np.frombuffer(np.float16(0.002).tobytes(), np.uint8)
    return data.reshape(rows, -1)


def vocabulary(n: int) -> list[str]:
    """n distinct tokens: the 256 bytes in GPT-2's spelling, made-up pieces, then Qwen's
    three control tokens."""
    from explorer.core.tokens.bpe import byte_to_unicode
    table = byte_to_unicode()
    made_up = [f"{table[97 + i % 26]}{i}" for i in range(n - 256 - 3)]
    return [table[b] for b in range(256)] + made_up + ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def write_shaped(path, shape: Shape, seed: int = 0):
    """A Qwen2 GGUF of `shape` at `path` (tied embedding, q/k/v biases, Q4_K_M's types)."""
    rng = np.random.default_rng(seed)
    s, e = shape, shape.d // shape.heads
    w = gguf.GGUFWriter(str(path), "qwen2")
    w.add_block_count(s.layers)
    w.add_context_length(s.context)
    w.add_embedding_length(s.d)
    w.add_feed_forward_length(s.ff)
    w.add_head_count(s.heads)
    w.add_head_count_kv(s.kv_heads)
    w.add_rope_freq_base(1_000_000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_K_M)
    tokens = vocabulary(s.vocab)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types([1] * (s.vocab - 3) + [3] * 3)
    w.add_token_merges(["Ġ t", "h e"])
    w.add_eos_token_id(s.vocab - 1)
    w.add_add_bos_token(False)

    def matrix(name, layer, rows, cols, full=None):
        qt = q4_k_m_type(name, layer, s.layers, cols)
        w.add_tensor(full or f"blk.{layer}.{name}.weight", random_blocks(rng, qt, rows, cols), raw_dtype=qt)

    def vector(name, n, gain=1.0):
        w.add_tensor(name, (gain * (1 + 0.1 * rng.standard_normal(n))).astype(np.float32))

    matrix("token_embd", 0, s.vocab, s.d, full="token_embd.weight")
    vector("output_norm.weight", s.d)
    for i in range(s.layers):
        b = f"blk.{i}."
        vector(b + "attn_norm.weight", s.d)
        vector(b + "ffn_norm.weight", s.d)
        for kind, rows in (("q", s.heads * e), ("k", s.kv_heads * e), ("v", s.kv_heads * e)):
            matrix(f"attn_{kind}", i, rows, s.d)
            vector(b + f"attn_{kind}.bias", rows, 0.1)
        matrix("attn_output", i, s.d, s.heads * e)
        matrix("ffn_gate", i, s.ff, s.d)
        matrix("ffn_up", i, s.ff, s.d)
        matrix("ffn_down", i, s.d, s.ff)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
