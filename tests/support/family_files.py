"""Tiny random-weight GGUF files of every model family the engine runs (`FAMILIES`), each in
float32 and in quantised variants (`VARIANTS`), written deterministically with llama.cpp's
own `gguf` package. The tests run them in the engine; tools/record_family_reference.py runs
the very same files in llama.cpp and keeps its numbers in tests/fixtures/.

The weights are large enough that every feature of a family moves the logits (biases of
about 1, head-norm gains far from 1, rotary factors from 1 to 8, soft caps set low):
tests/core/gguf/test_families.py checks that switching each feature off changes them."""

from __future__ import annotations

from dataclasses import dataclass, field

import gguf
import numpy as np
from gguf import GGMLQuantizationType as Q

from tiny_gguf import CONTROL, MERGES, TOKENS, VOCAB, add_tensor, write_out

D, FF, HEADS, KV_HEADS, LAYERS, CONTEXT = 256, 512, 4, 2, 2, 256   # head size 64; rows of 256
HEAD_DIM = D // HEADS
Q_OUT, KV_OUT = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
WINDOW = 8                     # Gemma 2's windowed layers read the latest 8 positions
ATTN_CAP, FINAL_CAP = 2.0, 6.0  # Gemma 2's soft caps, low enough to bend these models' numbers


@dataclass(frozen=True)
class Family:
    arch: str
    keys: dict = field(default_factory=dict)        # `{arch}.` key -> value (floats or ints)
    biases: bool = False
    head_norms: bool = False
    post_norms: bool = False
    fused: bool = False
    rope_freqs: str = ""                            # "", "rope_freqs" or "rope_factors_short"
    tied: bool = False


FAMILIES = {f.arch: f for f in (
    Family("llama", {"rope.scaling.type": "linear", "rope.scaling.factor": 2.0}, rope_freqs="rope_freqs", tied=True),
    Family("qwen2", biases=True, tied=True),
    Family("qwen3", head_norms=True),
    Family("phi3", {"rope.scaling.original_context_length": CONTEXT, "rope.scaling.attn_factor": 1.25},
           fused=True, rope_freqs="rope_factors_short"),
    Family("gemma2", {"attention.sliding_window": WINDOW, "attn_logit_softcapping": ATTN_CAP,
                      "final_logit_softcapping": FINAL_CAP}, post_norms=True, tied=True),
)}
# variant -> (type of the embedding, type of the layers' matrices); norms, biases and
# rotary factors stay float32 as the converters write them
VARIANTS = {"f32": (Q.F32, Q.F32), "q8_0": (Q.Q8_0, Q.Q8_0), "q4_0": (Q.Q8_0, Q.Q4_0), "q4_1": (Q.Q5_0, Q.Q4_1)}


def family_tensors(family: Family, seed: int = 0) -> dict[str, np.ndarray]:
    """Random float32 weights in numpy order ([out, in]), the same for the same seed."""
    rng = np.random.default_rng([seed, sorted(FAMILIES).index(family.arch)])

    def matrix(rows, cols, gain=1.0):
        return rng.standard_normal((rows, cols)) * gain / np.sqrt(cols)

    def gains(n, spread=0.1):
        return 1 + spread * rng.standard_normal(n)

    # a tied head reads the embedding back: small enough that the last token's own row
    # does not take all the probability (logits of spread about 2)
    t = {"token_embd.weight": rng.standard_normal((VOCAB, D)) * (0.1 if family.tied else 1.0),
         "output_norm.weight": gains(D)}
    if not family.tied:
        t["output.weight"] = matrix(VOCAB, D, 2.0)
    if family.rope_freqs:
        t[f"{family.rope_freqs}.weight"] = np.geomspace(1.0, 8.0, HEAD_DIM // 2)
    for i in range(LAYERS):
        b = f"blk.{i}."
        t[b + "attn_norm.weight"], t[b + "ffn_norm.weight"] = gains(D), gains(D)
        q, k, v = matrix(Q_OUT, D, 2.0), matrix(KV_OUT, D, 2.0), matrix(KV_OUT, D)
        if family.fused:
            t[b + "attn_qkv.weight"] = np.concatenate([q, k, v])
        else:
            t[b + "attn_q.weight"], t[b + "attn_k.weight"], t[b + "attn_v.weight"] = q, k, v
        if family.biases:
            t[b + "attn_q.bias"], t[b + "attn_k.bias"] = rng.standard_normal(Q_OUT), rng.standard_normal(KV_OUT)
            t[b + "attn_v.bias"] = rng.standard_normal(KV_OUT)
        if family.head_norms:
            t[b + "attn_q_norm.weight"], t[b + "attn_k_norm.weight"] = gains(HEAD_DIM, 0.5), gains(HEAD_DIM, 0.5)
        if family.post_norms:
            t[b + "post_attention_norm.weight"], t[b + "post_ffw_norm.weight"] = gains(D), gains(D)
        t[b + "attn_output.weight"] = matrix(D, Q_OUT)
        gate, up = matrix(FF, D), matrix(FF, D)
        if family.fused:
            t[b + "ffn_up.weight"] = np.concatenate([gate, up])
        else:
            t[b + "ffn_gate.weight"], t[b + "ffn_up.weight"] = gate, up
        t[b + "ffn_down.weight"] = matrix(D, FF)
    return {k: v.astype(np.float32) for k, v in t.items()}


def tensor_type(name: str, shape, variant: str):
    """The type a tensor of `variant` is stored in: matrices quantised, vectors float32."""
    embedding, layers = VARIANTS[variant]
    if len(shape) == 1:
        return Q.F32
    return embedding if name in ("token_embd.weight", "output.weight") else layers


def write_family(path, arch: str, variant: str = "f32", seed: int = 0, dequantised: bool = False):
    """A tiny `arch` file of `variant` at `path`; `dequantised`: the variant's weights
    (rounded to its blocks) stored back as float32, so that llama.cpp can compute with
    exactly the same weights in float arithmetic."""
    family = FAMILIES[arch]
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(LAYERS)
    w.add_context_length(CONTEXT)
    w.add_embedding_length(D)
    w.add_feed_forward_length(FF)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_key_length(HEAD_DIM)
    w.add_value_length(HEAD_DIM)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_dimension_count(HEAD_DIM)
    for key, value in family.keys.items():
        full = f"{arch}.{key}"
        if isinstance(value, str):
            w.add_string(full, value)
        elif isinstance(value, int):
            w.add_uint32(full, value)
        else:
            w.add_float32(full, value)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(TOKENS)
    w.add_token_types([3] * len(CONTROL) + [1] * (VOCAB - len(CONTROL)))
    w.add_token_merges(MERGES)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(False)
    for name, a in family_tensors(family, seed).items():
        add_tensor(w, name, a, tensor_type(name, a.shape, variant), dequantised)
    return write_out(w, path)
