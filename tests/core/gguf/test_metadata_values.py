"""A GGUF file's metadata is outside input: a text, an array or a nested array where a number
belongs, a pattern of words, a period that is negative or fractional, K/V heads that do not
divide the query heads, are each refused naming the key, the value and what was expected,
before anything is built (never a traceback in the forward). A prompt or an output longer
than the model's context_length is refused or stops the run with the reason "context"."""

from __future__ import annotations

import gguf
import numpy as np
import pytest

from explorer.core.decode.generate import generate
from explorer.core.decode.sampling import SamplingConfig
from explorer.core.decode.speculative import speculative_generate
from explorer.core.errors import PromptError
from explorer.core.gguf.llama import load_llama
from explorer.core.gguf.reader import GGUFError
from gguf_files import llama_tensors, write_llama

V = gguf.GGUFValueType

CASES = [  # (key, value, its type, what the message says was expected)
    ("llama.attention.sliding_window_pattern", "six", V.STRING, "expected a whole number from 0"),
    ("llama.attention.sliding_window_pattern", ["no", "no"], V.ARRAY, "or an array of true/false"),
    ("llama.attention.sliding_window_pattern", [[1, 0], [1]], V.ARRAY, "or an array of true/false"),
    ("llama.attention.sliding_window_pattern", -2, V.INT32, "expected a whole number from 0"),
    ("llama.attention.sliding_window_pattern", 2.5, V.FLOAT32, "expected a whole number from 0"),
    ("llama.rope.freq_base_swa", "ten thousand", V.STRING, "expected a finite number > 0"),
    ("llama.rope.freq_base_swa", [1.0, 2.0], V.ARRAY, "expected a finite number > 0"),
    ("llama.rope.scaling.attn_factor", float("nan"), V.FLOAT32, "expected a finite number > 0"),
    ("llama.rope.scaling.factor", -4.0, V.FLOAT32, "expected a finite number >= 0"),
    ("llama.rope.scaling.type", ["linear"], V.ARRAY, "expected a text"),
    ("llama.rope.scaling.original_context_length", "8k", V.STRING, "expected a whole number from 1"),
    ("tokenizer.ggml.pre", ["smollm"], V.ARRAY, "expected a text"),
    ("tokenizer.ggml.pre", 7, V.UINT32, "expected a text"),
    ("tokenizer.chat_template", [1, 2], V.ARRAY, "expected a text"),
    ("llama.attention.head_count_kv", 3, V.UINT32, "expected a count that divides 4"),
    ("llama.attention.head_count_kv", 8, V.UINT32, "expected a count that divides 4"),
]


@pytest.mark.parametrize("key, value, vtype, expected", CASES, ids=[f"{c[0]}={c[1]!r}" for c in CASES])
def test_a_value_of_the_wrong_kind_is_refused_naming_the_key(tmp_path, key, value, vtype, expected):
    path = write_llama(tmp_path / "odd.gguf", llama_tensors(np.random.default_rng(3)), extra_kv={key: (value, vtype)})
    with pytest.raises(GGUFError) as caught:
        load_llama(path)
    said = str(caught.value)
    assert str(path) in said and f"{key} = " in said and expected in said, said


def context_model(tmp_path, context: int):
    extra = {"llama.context_length": (context, V.UINT32)}
    return load_llama(write_llama(tmp_path / "short.gguf", llama_tensors(np.random.default_rng(3)), extra_kv=extra))


def test_a_prompt_longer_than_the_context_is_refused_with_both_numbers(tmp_path):
    model = context_model(tmp_path, 8)
    assert model.context_length == 8
    with pytest.raises(PromptError, match=r"prompt: 9 tokens, more than the model's context of 8 positions"):
        generate(model, [5] * 9, SamplingConfig(max_new_tokens=2))
    with pytest.raises(PromptError, match="more than the model's context of 8 positions"):
        speculative_generate(model, [5] * 9, SamplingConfig(max_new_tokens=2))


@pytest.mark.parametrize("decoding", [generate, speculative_generate])
def test_a_run_that_fills_the_context_stops_there_with_the_reason_context(tmp_path, decoding):
    model = context_model(tmp_path, 8)
    run = decoding(model, [5, 6, 7], SamplingConfig(max_new_tokens=50, seed=1, mode="greedy"))
    assert run.finish_reason == "context" and run.incomplete
    assert len(run.prompt_ids) + len(run.output_ids) - 1 == 8        # every position 0..7 processed, one selected
    assert max(p for s in run.steps for p in s.positions) == 7
    again = generate(model, [5, 6, 7], SamplingConfig(max_new_tokens=6, mode="greedy"))
    assert again.finish_reason == "length"                           # the limit reached first is the one said
