"""The model families a GGUF file may hold (`general.architecture`), each as llama.cpp
builds its graph: what it adds to a llama-shaped decoder (`Architecture`), the
configuration read from its metadata (`decoder_config`), and the tensors a layer may
have. A key or tensor that would change the computation and that this engine does not
implement is refused by name, never skipped (`check_known_keys`, `loader.llama_params`).

    family      rotary pairs   FFN      extras
    llama       adjacent       SwiGLU   Llama 3's rope_freqs, linear rope scaling, q/k/v biases
    qwen2       halves         SwiGLU   q/k/v biases
    qwen3       halves         SwiGLU   RMSNorm of every query and key head
    phi3        halves         SwiGLU   fused Q|K|V and gate|up tensors, rope factors
    gemma2      halves         GeGLU    embedding x sqrt(d), post-attention and post-FFN norms,
                                        sliding window on alternate layers, soft-capped
                                        attention scores and logits
    gemma3      halves         GeGLU    as gemma2 without soft-caps, with q/k head norms and
                                        five windowed layers of six (their own rotary base)"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..models.decoder import DecoderConfig
from ..models.layers import NO_SCALING, RotaryScaling
from .reader import GGUFError, GGUFFile


@dataclass(frozen=True)
class Architecture:
    key: str                    # general.architecture
    family: str                 # what a teacher calls the models ("Qwen2, Qwen2.5")
    rope_pairs: str = "halves"  # "adjacent" (llama.cpp's NORM rope) or "halves" (NEOX)
    ffn: str = "swiglu"         # "swiglu" or "geglu"
    head_norms: bool = False    # attn_q_norm, attn_k_norm [e] in every layer
    post_norms: bool = False    # post_attention_norm, post_ffw_norm [d] in every layer
    biases: bool = False        # attn_q/k/v.bias may be present (all three, or none)
    fused: bool = False         # attn_qkv may replace attn_q/k/v; ffn_up [2f, d] without ffn_gate
    keys: tuple = ()            # `{arch}.` keys of its own that it implements (beyond COMMON_KEYS)


ARCHITECTURES = {a.key: a for a in (
    Architecture("llama", "Llama (Llama 2, Llama 3.x, SmolLM2, Mistral)", rope_pairs="adjacent", biases=True),
    Architecture("qwen2", "Qwen2, Qwen2.5", biases=True),
    Architecture("qwen3", "Qwen3", head_norms=True),
    Architecture("phi3", "Phi-3, Phi-3.5", fused=True, keys=("attention.sliding_window",)),
    Architecture("gemma2", "Gemma 2", ffn="geglu", post_norms=True,
                 keys=("attention.sliding_window", "attention.sliding_window_pattern", "rope.freq_base_swa",
                       "attn_logit_softcapping", "final_logit_softcapping")),
    Architecture("gemma3", "Gemma 3", ffn="geglu", head_norms=True, post_norms=True,
                 keys=("attention.sliding_window", "attention.sliding_window_pattern", "rope.freq_base_swa")),
)}
FAMILIES = {key: a.family for key, a in ARCHITECTURES.items()}   # architecture -> family name

# `{arch}.` keys every family implements (or that do not change the computation)
COMMON_KEYS = ("context_length", "embedding_length", "block_count", "feed_forward_length",
               "attention.head_count", "attention.head_count_kv", "attention.key_length",
               "attention.value_length", "attention.layer_norm_rms_epsilon", "rope.dimension_count",
               "rope.freq_base", "rope.scaling.type", "rope.scaling.factor", "rope.scaling.attn_factor",
               "rope.scaling.original_context_length", "rope.scaling.finetuned", "vocab_size",
               "expert_count", "expert_used_count")
# rope.scaling.type values: llama.cpp's names; "none" and "linear" stretch positions
# uniformly, "longrope" is Phi-3's factor tensors; YaRN is not implemented
ROPE_SCALINGS = ("none", "linear", "longrope")
# Gemma 2 as llama.cpp builds it: every other layer windowed, its default window and caps
GEMMA2_PATTERN, GEMMA2_WINDOW, GEMMA2_ATTN_CAP, GEMMA2_FINAL_CAP = 2, 4096, 50.0, 30.0
GEMMA2_27B_LAYERS = 46   # llama.cpp scales that model's queries by 1/sqrt(d / heads), not 1/sqrt(e)
# Gemma 3: five sliding-window layers, then a global one; the windowed layers' rotary
# base (llama.cpp: rope_freq_base_train_swa)
GEMMA3_PATTERN, GEMMA3_LOCAL_ROPE_BASE = 6, 10000.0


def supported_families() -> str:
    """The families that work, in words: "Llama (...), Qwen2, Qwen2.5, ..."."""
    return "; ".join(FAMILIES.values())


def architecture_of(gf: GGUFFile) -> Architecture:
    arch = gf.require("general.architecture")
    if arch not in ARCHITECTURES:
        raise GGUFError(f"{gf.path}: architecture {arch!r} is not supported. Token Explorer runs these "
                        f"model families: {supported_families()} (general.architecture "
                        f"{', '.join(ARCHITECTURES)})")
    return ARCHITECTURES[arch]


def check_known_keys(gf: GGUFFile, a: Architecture) -> None:
    """GGUFError naming an `{arch}.` metadata key this engine does not implement (it
    would change what the model computes: a mixture of experts, YaRN, ...)."""
    known = set(COMMON_KEYS) | set(a.keys)
    prefix = a.key + "."
    for key, value in gf.metadata.items():
        if not key.startswith(prefix):
            continue
        name = key[len(prefix):]
        if name.startswith("expert_") and name in known and int(value) == 0:
            continue                    # "no experts", as some converters write it
        if name not in known or name.startswith("expert_"):
            raise GGUFError(f"{gf.path}: metadata key {key} = {_shown(value)} changes how the model computes, "
                            f"and Token Explorer does not implement it for {a.family}")


def _shown(value) -> str:
    return f"an array of {len(value)}" if isinstance(value, (list, np.ndarray)) else repr(value)[:40]


def decoder_config(gf: GGUFFile, a: Architecture) -> DecoderConfig:
    """The decoder `a`'s file describes (factor tensors of the rotary scaling are read here)."""
    arch = a.key
    check_known_keys(gf, a)
    d = int(gf.require(f"{arch}.embedding_length"))
    heads = int(gf.require(f"{arch}.attention.head_count"))
    kv_heads = int(gf.get(f"{arch}.attention.head_count_kv", heads))
    head_dim = int(gf.get(f"{arch}.attention.key_length", d // heads))
    value_length = gf.get(f"{arch}.attention.value_length")
    if value_length is not None and value_length != head_dim:
        raise GGUFError(f"{gf.path}: {arch}.attention.value_length = {value_length} differs from the key "
                        f"length {head_dim} (not supported)")
    rot = int(gf.get(f"{arch}.rope.dimension_count", head_dim))
    if rot != head_dim:
        raise GGUFError(f"{gf.path}: rotary positions on {rot} of {head_dim} head dimensions "
                        f"are not supported (only all of them)")
    vocab = gf.info("token_embd.weight").shape[0]
    layers = int(gf.require(f"{arch}.block_count"))
    context = int(gf.get(f"{arch}.context_length", 2048))
    settings = dict(
        vocab_size=vocab, d_model=d, n_layers=layers, n_heads=heads, n_kv_heads=kv_heads, head_dim=head_dim,
        d_ff=int(gf.require(f"{arch}.feed_forward_length")), ffn=a.ffn, norm="rms",
        positions="rope", rope_pairs=a.rope_pairs,
        rope_base=float(gf.get(f"{arch}.rope.freq_base", 10000.0)),
        norm_eps=float(gf.get(f"{arch}.attention.layer_norm_rms_epsilon", 1e-5)),
        output_bias=False, tied_output="output.weight" not in gf.tensors,
        kept_rows=1)     # the last position's logits choose a token: 49,152 numbers a position
    settings["rope_scaling"], settings["context_length"] = rotary_scaling(gf, arch, head_dim, context)
    if arch in ("gemma2", "gemma3"):
        settings.update(_gemma_settings(gf, a, layers, d, heads, head_dim))
    return DecoderConfig(**settings)


def rotary_scaling(gf: GGUFFile, arch: str, head_dim: int, context: int) -> tuple[RotaryScaling, int]:
    """(how the file stretches its rotary positions, the context it is used for), as
    llama.cpp reads them: a `rope_freqs` tensor (Llama 3.x) or Phi-3's short factors
    divide each pair's angle; `rope.scaling.type` "linear" (llama.cpp's default when the
    key is absent) multiplies the angles by 1 / `rope.scaling.factor`, "none" never
    does; `rope.scaling.attn_factor` multiplies cos and sin. Phi-3's long factors
    serve a context beyond `rope.scaling.original_context_length`: the context is
    capped there, where its short ones hold (llama.cpp picks by its context size)."""
    kind = gf.get(f"{arch}.rope.scaling.type", "linear")
    if kind not in ROPE_SCALINGS:
        raise GGUFError(f"{gf.path}: {arch}.rope.scaling.type = {_shown(kind)} is not supported "
                        f"(Token Explorer implements: {', '.join(ROPE_SCALINGS)})")
    factor = float(gf.get(f"{arch}.rope.scaling.factor", 0.0) or 0.0)
    freq_scale = 1.0 if kind == "none" or factor == 0 else 1.0 / factor
    names = [name for name in ("rope_freqs.weight", "rope_factors_short.weight") if name in gf.tensors]
    if kind == "longrope" and not names:
        raise GGUFError(f"{gf.path}: {arch}.rope.scaling.type = 'longrope' but the file has no "
                        "rope_factors_short tensor")
    factors = ()
    if names:
        info = gf.info(names[0])
        if info.shape != (head_dim // 2,):
            raise GGUFError(f"{gf.path}: tensor {names[0]} has shape {list(info.shape)}, expected "
                            f"[{head_dim // 2}] (one factor per rotary pair)")
        values = gf.tensor(names[0])
        if not (np.isfinite(values).all() and (values > 0).all()):
            raise GGUFError(f"{gf.path}: tensor {names[0]} holds factors that are not finite numbers > 0")
        factors = tuple(float(v) for v in values)
    if "rope_factors_long.weight" in gf.tensors:
        context = min(context, int(gf.get(f"{arch}.rope.scaling.original_context_length", context)))
    mscale = float(gf.get(f"{arch}.rope.scaling.attn_factor", 1.0))
    scaling = RotaryScaling(freq_scale, factors, mscale)
    return (NO_SCALING if scaling == NO_SCALING else scaling), context


def _gemma_settings(gf: GGUFFile, a: Architecture, layers: int, d: int, heads: int, head_dim: int) -> dict:
    """What Gemma 2 and 3 add to a llama configuration (see the module doc). Gemma's
    norms multiply by (1 + w); the converter stored 1 + w, so they are plain RMSNorms."""
    arch, gemma2 = a.key, a.key == "gemma2"
    window = int(gf.get(f"{arch}.attention.sliding_window", GEMMA2_WINDOW) if gemma2
                 else gf.require(f"{arch}.attention.sliding_window"))
    if window <= 0:
        raise GGUFError(f"{gf.path}: {arch}.attention.sliding_window = {window}, expected a positive number")
    pattern = gf.get(f"{arch}.attention.sliding_window_pattern", GEMMA2_PATTERN if gemma2 else GEMMA3_PATTERN)
    if np.ndim(pattern):          # one flag per layer
        local = [bool(x) for x in pattern]
        if len(local) != layers:
            raise GGUFError(f"{gf.path}: {arch}.attention.sliding_window_pattern has {len(local)} "
                            f"entries for {layers} layers")
    else:                         # a period: the last layer of every period is global
        local = [int(pattern) == 0 or i % int(pattern) < int(pattern) - 1 for i in range(layers)]
    rope_base = float(gf.get(f"{arch}.rope.freq_base", 10000.0))
    settings = dict(embed_scale=float(np.sqrt(np.float32(d))), windows=tuple(window if lo else 0 for lo in local),
                    queries_scaled_first=True,
                    local_rope_base=float(gf.get(f"{arch}.rope.freq_base_swa",
                                                 rope_base if gemma2 else GEMMA3_LOCAL_ROPE_BASE)))
    if gemma2:
        settings.update(attn_softcap=float(gf.get("gemma2.attn_logit_softcapping", GEMMA2_ATTN_CAP)),
                        final_softcap=float(gf.get("gemma2.final_logit_softcapping", GEMMA2_FINAL_CAP)))
        if layers == GEMMA2_27B_LAYERS:
            settings["attn_scale"] = 1 / float(np.sqrt(np.float32(d // heads)))
    return settings
