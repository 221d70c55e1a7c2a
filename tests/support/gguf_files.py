"""A small llama-family GGUF file written with llama.cpp's own `gguf` package, for the reader's
tests and for any test that needs a real-model file without the 350 MB of real models."""

from __future__ import annotations

import hashlib

import gguf
import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q

from explorer.catalog import registry as model_registry
from tiny_gguf import CONTROL, MERGES, TOKENS, VOCAB, add_tensor, write_out


D, FF, HEADS, KV_HEADS, LAYERS = 64, 96, 4, 2, 2   # head size 16; rows multiples of 32
HEAD_DIM = D // HEADS
# tensor name -> quantisation: every supported type appears
LAYER_TYPES = {"attn_q": Q.Q4_0, "attn_k": Q.Q4_1, "attn_v": Q.F16, "attn_output": Q.Q8_0,
               "ffn_gate": Q.Q4_1, "ffn_up": Q.Q4_0, "ffn_down": Q.Q8_0}


def llama_tensors(rng, tied=False) -> dict[str, np.ndarray]:
    """Random weights in numpy order ([out, in] for matrices), float32."""
    q, kv = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    t = {"token_embd.weight": rng.standard_normal((VOCAB, D)),
         "output_norm.weight": 1 + 0.1 * rng.standard_normal(D)}
    if not tied:
        t["output.weight"] = rng.standard_normal((VOCAB, D)) / np.sqrt(D)
    shapes = {"attn_q": (q, D), "attn_k": (kv, D), "attn_v": (kv, D), "attn_output": (D, q),
              "ffn_gate": (FF, D), "ffn_up": (FF, D), "ffn_down": (D, FF)}
    for i in range(LAYERS):
        t[f"blk.{i}.attn_norm.weight"] = 1 + 0.1 * rng.standard_normal(D)
        t[f"blk.{i}.ffn_norm.weight"] = 1 + 0.1 * rng.standard_normal(D)
        for k, shape in shapes.items():
            t[f"blk.{i}.{k}.weight"] = rng.standard_normal(shape) / np.sqrt(shape[1])
    return {k: v.astype(np.float32) for k, v in t.items()}


def qtype_of(name: str):
    if name == "token_embd.weight":
        return Q.Q8_0
    for key, qt in LAYER_TYPES.items():
        if f".{key}." in name:
            return qt
    return Q.F32


def write_llama(path, tensors, arch="llama", skip=(), types=qtype_of, alignment=None,
                extra_kv=None):
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(LAYERS)
    w.add_context_length(128)
    w.add_embedding_length(D)
    w.add_feed_forward_length(FF)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(HEAD_DIM)
    if alignment:
        w.add_custom_alignment(alignment)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(TOKENS)
    w.add_token_types([3] * len(CONTROL) + [1] * (VOCAB - len(CONTROL)))
    w.add_token_merges(MERGES)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    for key, (value, vtype) in (extra_kv or {}).items():
        w.add_key_value(key, value, vtype)
    for name, a in tensors.items():
        if name not in skip:
            add_tensor(w, name, a, types(name))
    return write_out(w, path)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(path, float32 tensors as written) of a small untied llama file."""
    tensors = llama_tensors(np.random.default_rng(7))
    return write_llama(tmp_path_factory.mktemp("gguf") / "tiny.gguf", tensors), tensors


# ---------------------------------------------------------------- the reader


@pytest.fixture
def fake_model(monkeypatch, tmp_path, tiny, fake_pip):
    """MODELS['tiny']: the tiny file inside a wheel published on the stand-in PyPI, with its
    real size and checksum."""
    data = tiny[0].read_bytes()
    wheel = fake_pip.publish("tiny-pkg", "1.0", {"tiny_pkg/tiny.gguf": data})
    spec = model_registry.ModelSpec(name="tiny", description="a test model", licence="MIT",
                            parts=(model_registry.Member("tiny-pkg", "1.0", "tiny_pkg/tiny.gguf", len(data)),),
                            filename="tiny.gguf", size=len(data), sha256=hashlib.sha256(data).hexdigest(),
                            language="en")
    monkeypatch.setitem(model_registry.MODELS, "tiny", spec)
    monkeypatch.setenv(model_registry.CACHE_ENV, str(tmp_path / "cache"))
    return spec, wheel
