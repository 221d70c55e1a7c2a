"""The numbers in a GGUF file's metadata, checked (file, key, what was expected) before a
model is built from them."""

from __future__ import annotations

import math
import re

import numpy as np

from .reader import GGUFError, GGUFFile, shown_value

MAX_SIZE = 1 << 24       # a dimension or count above 16 million is a damaged file, not a model
# `{arch}.` + key: sizes and counts, each a whole number >= 1 where present
COUNT_KEYS = ("block_count", "embedding_length", "feed_forward_length", "context_length",
              "attention.head_count", "attention.head_count_kv", "attention.key_length",
              "attention.value_length", "attention.sliding_window", "rope.dimension_count",
              "rope.scaling.original_context_length")
# `{arch}.` + key: real numbers > 0 where present
POSITIVE_KEYS = ("rope.freq_base", "rope.freq_scale", "attention.layer_norm_rms_epsilon",
                 "attention.layer_norm_epsilon", "rope.freq_base_swa", "rope.scaling.attn_factor",
                 "attn_logit_softcapping", "final_logit_softcapping")
# keys that name something: text where present (`{arch}.` + key, or the whole key)
TEXT_KEYS = ("rope.scaling.type",)
TOKENIZER_TEXT_KEYS = ("tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.chat_template")
_LAYER = re.compile(r"blk\.(\d+)\.")


def check_model_metadata(gf: GGUFFile) -> None:
    """GGUFError unless the architecture's sizes are whole numbers in 1..MAX_SIZE, its
    float settings finite and positive, and `block_count` matches the layers the file
    has tensors for. Cheap: it reads the metadata and the tensor names, nothing else."""
    arch = gf.require("general.architecture")
    if not isinstance(arch, str):
        raise GGUFError(f"{gf.path}: general.architecture = {shown_value(arch)}, expected a name such as 'llama'")
    for key in COUNT_KEYS:
        value = gf.get(f"{arch}.{key}")
        if value is not None and not (_is_int(value) and 1 <= value <= MAX_SIZE):
            raise GGUFError(f"{gf.path}: {arch}.{key} = {shown_value(value)}, expected a whole number "
                            f"from 1 to {MAX_SIZE}")
    for key in POSITIVE_KEYS:
        value = gf.get(f"{arch}.{key}")
        if value is not None and not (_is_real(value) and math.isfinite(value) and value > 0):
            raise GGUFError(f"{gf.path}: {arch}.{key} = {shown_value(value)}, expected a finite number > 0")
    factor = gf.get(f"{arch}.rope.scaling.factor")
    if factor is not None and not (_is_real(factor) and math.isfinite(factor) and factor >= 0):
        raise GGUFError(f"{gf.path}: {arch}.rope.scaling.factor = {shown_value(factor)}, expected a finite "
                        "number >= 0 (0: no scaling)")
    for key in [f"{arch}.{k}" for k in TEXT_KEYS] + list(TOKENIZER_TEXT_KEYS):
        value = gf.get(key)
        if value is not None and not isinstance(value, str):
            raise GGUFError(f"{gf.path}: {key} = {shown_value(value)}, expected a text (a name)")
    _check_heads(gf, arch)
    _check_window_pattern(gf, arch)
    _check_tokenizer(gf)
    layers = {int(m.group(1)) for name in gf.tensors if (m := _LAYER.match(name))}
    count = gf.get(f"{arch}.block_count")
    if count is not None and layers != set(range(count)):
        held = f"blk.0 to blk.{max(layers)}" if layers else "no blk.N tensors"
        raise GGUFError(f"{gf.path}: {arch}.block_count = {count}, but the file holds the tensors of "
                        f"{len(layers)} layers ({held})")


def _check_heads(gf: GGUFFile, arch: str) -> None:
    """Query heads share K/V heads in equal groups (grouped-query attention): the count of
    K/V heads divides the count of query heads; without a key length the embedding splits
    evenly into the heads."""
    heads, kv = gf.get(f"{arch}.attention.head_count"), gf.get(f"{arch}.attention.head_count_kv")
    if heads is not None and kv is not None and heads % kv:
        raise GGUFError(f"{gf.path}: {arch}.attention.head_count_kv = {kv} for {heads} query heads, expected a "
                        f"count that divides {heads} (each K/V head serves an equal group of query heads)")
    d = gf.get(f"{arch}.embedding_length")
    if heads is not None and d is not None and gf.get(f"{arch}.attention.key_length") is None and d % heads:
        raise GGUFError(f"{gf.path}: {arch}.embedding_length = {d} does not split into {heads} heads and the "
                        f"file gives no {arch}.attention.key_length")


def _check_window_pattern(gf: GGUFFile, arch: str) -> None:
    """`attention.sliding_window_pattern`: a period (a whole number: the last layer of each
    period reads every position) or one true/false per layer, as llama.cpp reads it."""
    key = f"{arch}.attention.sliding_window_pattern"
    value = gf.get(key)
    if value is None:
        return
    if _is_int(value) and 0 <= value <= MAX_SIZE:
        return
    if isinstance(value, np.ndarray) and value.dtype.kind == "b" and value.ndim == 1:
        return
    raise GGUFError(f"{gf.path}: {key} = {shown_value(value)}, expected a whole number from 0 to {MAX_SIZE} "
                    "(a period of layers) or an array of true/false, one per layer")


def _check_tokenizer(gf: GGUFFile) -> None:
    """The tokenizer's lists are lists of the right kind and length, its ids whole numbers."""
    tokens = gf.get("tokenizer.ggml.tokens")
    for key in ("tokenizer.ggml.tokens", "tokenizer.ggml.merges"):
        value = gf.get(key)
        if value is not None and not (isinstance(value, list) and set(map(type, value)) <= {str}):
            raise GGUFError(f"{gf.path}: {key} = {shown_value(value)}, expected an array of strings")
    for key in ("tokenizer.ggml.token_type", "tokenizer.ggml.scores"):
        value = gf.get(key)
        if value is None:
            continue
        if not (isinstance(value, np.ndarray) and value.dtype.kind in "iuf" and value.ndim == 1):
            raise GGUFError(f"{gf.path}: {key} = {shown_value(value)}, expected an array of numbers")
        if tokens is not None and len(value) != len(tokens):
            raise GGUFError(f"{gf.path}: {key} has {len(value)} entries, expected one per token ({len(tokens)})")
    for key, value in gf.metadata.items():
        if key.startswith("tokenizer.ggml.") and key.endswith("_token_id") and not _is_int(value):
            raise GGUFError(f"{gf.path}: {key} = {shown_value(value)}, expected a token id (a whole number)")


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_real(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))

