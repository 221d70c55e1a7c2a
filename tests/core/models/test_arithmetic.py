"""The arithmetic a DecoderModel holds: float's and llama.cpp's objects both give the
`Arithmetic` interface, and the forward computes through it without asking which one it has."""

from __future__ import annotations

import ast
import inspect
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from explorer.core.gguf.ggml_arithmetic import LLAMA_CPP
from explorer.core.gguf.llama import ARITHMETICS, arithmetic_named
from explorer.core.models import decoder
from explorer.core.models.arithmetic import FLOAT, Arithmetic
from explorer.core.models.decoder import DecoderConfig, DecoderModel, fused_layer, random_params
from explorer.core.tokens.vocab import Vocabulary

OPERATIONS = sorted(name for name, member in vars(Arithmetic).items()
                    if inspect.isfunction(member) and not name.startswith("_"))
# Gemma 3's shape, small: every operation of the interface has a part in its forward
GEMMA = DecoderConfig(vocab_size=13, d_model=16, n_layers=2, n_heads=4, n_kv_heads=1, head_dim=4,
                      d_ff=12, ffn="geglu", norm="rms", positions="rope", output_bias=False,
                      tied_output=True, embed_scale=4.0, rope_pairs="halves", windows=(3, 0),
                      local_rope_base=10.0)


@pytest.mark.parametrize("arithmetic", [FLOAT, LLAMA_CPP], ids=lambda a: a.name)
def test_float_and_llama_cpps_arithmetic_give_the_whole_interface(arithmetic):
    assert isinstance(arithmetic, Arithmetic)
    assert {"matmul", "rms_norm", "gelu", "rope_tables", "rope", "queries", "cached", "attention"} <= set(OPERATIONS)
    for name in OPERATIONS:
        want = inspect.signature(getattr(Arithmetic, name)).parameters
        assert list(inspect.signature(getattr(type(arithmetic), name)).parameters) == list(want), name


def test_the_arithmetics_are_found_by_the_names_the_command_line_offers():
    assert [arithmetic_named(name).name for name in ARITHMETICS] == ["float", "llama.cpp"]
    assert arithmetic_named("llama.cpp") is LLAMA_CPP and arithmetic_named("float") is FLOAT
    with pytest.raises(ValueError, match="arithmetic = 'float16': expected one of"):
        arithmetic_named("float16")


def recording(inner: Arithmetic, calls: Counter):
    """An arithmetic that does what `inner` does and counts each operation asked of it."""
    def operation(name):
        def call(self, *args, **kwargs):
            calls[name] += 1
            return getattr(inner, name)(*args, **kwargs)
        return call
    return type("Recording", (), {"name": "recording", **{name: operation(name) for name in OPERATIONS}})()


def test_the_forward_computes_every_rounded_operation_through_the_arithmetic():
    """A model holding an arithmetic that only counts and passes on to the float one
    computes the float model's numbers bit for bit, and asked it for every operation."""
    params = random_params(GEMMA, np.random.default_rng(0), dtype=np.float32)
    params = replace(params, layers=tuple(fused_layer(lp) for lp in params.layers))
    vocab = Vocabulary(tuple(f"t{i}" for i in range(GEMMA.vocab_size)))
    plain = DecoderModel(GEMMA, params, vocab, dtype=np.float32)
    calls = Counter()
    counted = replace(plain, arithmetic=recording(FLOAT, calls))
    ids = [3, 1, 4, 1, 5, 9]
    (a, cache_a), (b, cache_b) = plain.prefill(ids), counted.prefill(ids)
    np.testing.assert_array_equal(a.logits, b.logits)
    np.testing.assert_array_equal(plain.decode(2, cache_a)[0].logits, counted.decode(2, cache_b)[0].logits)
    assert set(calls) == set(OPERATIONS) - {"label"}          # the label is for the run's record


def test_the_decoder_never_branches_on_its_arithmetic():
    """No test in the decoder's code (if, a conditional expression, a comparison, a
    boolean operation) looks at the arithmetic."""
    tree = ast.parse(inspect.getsource(decoder))
    tests = [node.test for node in ast.walk(tree) if isinstance(node, (ast.If, ast.IfExp, ast.While))]
    tests += [node for node in ast.walk(tree) if isinstance(node, (ast.Compare, ast.BoolOp))]
    for test in tests:
        names = {n.attr if isinstance(n, ast.Attribute) else getattr(n, "id", None) for n in ast.walk(test)}
        assert "arithmetic" not in names, ast.unparse(test)
    assert "llama.cpp" not in {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
