"""What a GGUF header says (core/gguf/summary): checked against the tensors written, llama.cpp's
`gguf` package's names, and how the loader really keeps each type; every kind of file that is
not a runnable model gets its own sentence."""

from __future__ import annotations

import gguf
import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q, GGUFValueType as V, quants

from explorer.core.gguf import summary
from explorer.core.gguf.architectures import ARCHITECTURES
from explorer.core.gguf.quant_types import TYPES
from explorer.core.gguf.summary import CONTEXT, FILE_TYPES, kept_bytes, summarize_file
from gguf_files import HEAD_DIM, KV_HEADS, LAYERS, VOCAB, llama_tensors, qtype_of, write_llama
from gguf_splits import write_split_llama


@pytest.fixture(scope="module")
def tensors():
    return llama_tensors(np.random.default_rng(3))


def kept(tensors) -> float:
    """Bytes the loader keeps for the tiny file's tensors, by the types they were written in."""
    return sum(a.size * BY_HAND[qtype_of(name).name] for name, a in tensors.items())


def test_a_runnable_tiny_file_is_described_from_its_header(tmp_path, tensors):
    path = write_llama(tmp_path / "m.gguf", tensors)
    s = summarize_file(path)
    assert s.supported and s.problem is None and not s.not_a_model
    assert s.architecture == "llama" and s.family == summary.family_name("llama")
    assert s.parameters == sum(a.size for a in tensors.values())
    assert s.file_size == path.stat().st_size
    assert s.quantisation == "Q8_0"       # no general.file_type: the type holding most weights (the embedding's)
    context = min(CONTEXT, 128)           # the file's context_length is 128
    assert s.memory == (round(kept(tensors)) + LAYERS * 2 * KV_HEADS * HEAD_DIM * 4 * context
                        + summary.LOADER_BYTES + VOCAB * summary.TOKEN_BYTES)


def test_the_file_type_is_named_as_llama_cpp_names_it(tmp_path, tensors):
    for ftype in gguf.LlamaFileType:
        if ftype.name.startswith("MOSTLY_") or ftype.name == "ALL_F32":
            name = ftype.name.removeprefix("MOSTLY_").removeprefix("ALL_")
            assert FILE_TYPES.get(ftype.value, name) == name
    path = write_llama(tmp_path / "m.gguf", tensors, extra_kv={"general.file_type": (15, V.UINT32)})
    assert summarize_file(path).quantisation == "Q4_K_M"


# bytes per weight as each layout is described (quant_types): 4-bit rows a nibble, a float32
# scale and offset per 32; 8-bit rows an int8 and a float32 scale (and offset) per group;
# K-quants also their unmultiplied scales (Q4_K/Q5_K: d, dmin per 256 and a byte each of
# scale and min per 32; Q6_K: d per 256, a byte per 16; Q2_K: d, dmin per 256, two bytes
# per 16; Q3_K: d per 256, a byte per 16)
BY_HAND = {"F32": 4, "F16": 4, "BF16": 4, "Q4_0": 0.5 + 8 / 32, "Q4_1": 0.5 + 8 / 32, "Q5_0": 1 + 4 / 32,
           "Q5_1": 1 + 8 / 32, "Q8_0": 1 + 4 / 32, "Q4_K": 0.5 + 8 / 32 + 8 / 256 + 2 / 32,
           "Q5_K": 1 + 8 / 32 + 8 / 256 + 2 / 32, "Q6_K": 1 + 4 / 16 + 4 / 256 + 1 / 16,
           "Q2_K": 1 + 8 / 16 + 8 / 256 + 2 / 16, "Q3_K": 1 + 4 / 16 + 4 / 256 + 1 / 16}


@pytest.mark.parametrize("name", list(TYPES))
def test_the_bytes_kept_per_weight_are_what_each_layout_keeps(name):
    assert kept_bytes(name) == pytest.approx(BY_HAND[name])


def test_a_split_model_counts_all_its_parts(tmp_path, tensors):
    parts = write_split_llama(tmp_path / "m.gguf", tensors, max_tensors=6)
    s = summarize_file(parts[0])
    assert s.supported and s.parameters == sum(a.size for a in tensors.values())
    assert s.file_size == sum(p.stat().st_size for p in parts)


def test_a_split_model_with_a_part_missing_names_it(tmp_path, tensors):
    parts = write_split_llama(tmp_path / "m.gguf", tensors, max_tensors=6)
    parts[-1].unlink()
    s = summarize_file(parts[0])
    assert not s.supported and f"part {parts[-1]} of this {len(parts)}-part model is missing" in s.problem


def test_an_architecture_not_run_names_the_families_that_are(tmp_path, tensors):
    s = summarize_file(write_llama(tmp_path / "m.gguf", tensors, arch="rwkv6"))
    assert s.architecture == "rwkv6" and s.problem.startswith("Architecture 'rwkv6' is not one this explorer runs")
    for arch in ARCHITECTURES:
        assert summary.family_name(arch) in s.problem


def test_a_tensor_type_not_read_is_named_with_its_tensor(tmp_path, tensors):
    def types(name):
        return Q.IQ4_NL if name == "blk.1.ffn_up.weight" else qtype_of(name)
    real = quants.quantize
    path = tmp_path / "m.gguf"
    # IQ4_NL's blocks are 18 bytes per 32 weights: any bytes of that size make a valid table
    quants.quantize = lambda a, qt: (np.zeros((a.shape[0], a.shape[1] // 32 * 18), np.uint8) if qt == Q.IQ4_NL
                                     else real(a, qt))
    try:
        write_llama(path, tensors, types=types)
    finally:
        quants.quantize = real
    s = summarize_file(path)
    assert s.problem.startswith("Tensor blk.1.ffn_up.weight is stored as IQ4_NL") and "Q8_0" in s.problem


@pytest.mark.parametrize("extra, says", [
    ({"general.type": ("adapter", V.STRING), "adapter.type": ("lora", V.STRING)}, "A LoRA adapter"),
    ({"adapter.lora.alpha": (16.0, V.FLOAT32)}, "A LoRA adapter"),
    ({"llama.pooling_type": (1, V.UINT32)}, "An embedding model"),
    ({"general.type": ("mmproj", V.STRING)}, "A vision projector"),
])
def test_a_file_that_is_not_a_language_model_says_what_it_is(tmp_path, tensors, extra, says):
    s = summarize_file(write_llama(tmp_path / "m.gguf", tensors, extra_kv=extra))
    assert s.problem.startswith(says) and s.not_a_model


def test_a_vocabulary_only_file_says_so(tmp_path, tensors):
    s = summarize_file(write_llama(tmp_path / "vocab.gguf", tensors, skip=set(tensors)))
    assert s.parameters == 0 and s.problem.startswith("A vocabulary-only file") and s.not_a_model


def test_a_damaged_count_keeps_the_checks_message(tmp_path, tensors):
    path = write_llama(tmp_path / "m.gguf", tensors)
    data = bytearray(path.read_bytes())
    key = b"llama.block_count"
    at = data.index(key) + len(key) + 4               # after the key and its value type: the uint32
    data[at:at + 4] = (2**32 - 1).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    assert "llama.block_count = 4294967295, expected a whole number" in summarize_file(path).problem


def test_a_file_that_is_not_a_gguf_keeps_the_readers_message(tmp_path):
    path = tmp_path / "notes.gguf"
    path.write_bytes(b"PK\x03\x04 a zip file")
    s = summarize_file(path)
    assert not s.supported and "not a GGUF file" in s.problem and s.file_size == path.stat().st_size
