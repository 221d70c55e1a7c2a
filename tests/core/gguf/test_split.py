"""Models split by gguf-split (NAME-00001-of-00003.gguf): opened from part 1, every tensor
read from its part as the `gguf` package reads it, and a missing or stray part named."""

from __future__ import annotations

import gguf
import numpy as np
import pytest
from gguf import quants

from explorer.core.gguf.llama import load_llama
from explorer.core.gguf.reader import GGUFError, GGUFFile
from gguf_files import llama_tensors, write_llama
from gguf_splits import write_split_llama


@pytest.fixture(scope="module")
def tensors():
    return llama_tensors(np.random.default_rng(11))


@pytest.fixture
def parts(tmp_path, tensors):
    return write_split_llama(tmp_path / "tiny.gguf", tensors, max_tensors=7)


def test_the_parts_are_named_and_keyed_as_gguf_split_writes_them(parts, tensors):
    n = len(parts)
    assert n >= 3 and [p.name for p in parts] == [f"tiny-{k:05d}-of-{n:05d}.gguf" for k in range(1, n + 1)]
    second = gguf.GGUFReader(parts[1])
    assert "general.architecture" not in second.fields            # metadata only in part 1
    assert int(second.fields["split.no"].parts[-1][0]) == 1
    assert int(second.fields["split.tensors.count"].parts[-1][0]) == len(tensors)


def test_every_tensor_of_every_part_reads_as_the_gguf_package_reads_it(parts, tensors):
    gf = GGUFFile(parts[0])
    assert set(gf.tensors) == set(tensors) and gf.paths == tuple(parts)
    assert gf.file_size == sum(p.stat().st_size for p in parts)
    for part in parts:
        for t in gguf.GGUFReader(part).tensors:
            theirs = quants.dequantize(t.data, t.tensor_type).reshape(gf.info(t.name).shape)
            np.testing.assert_array_equal(gf.tensor(t.name), theirs)


def test_a_split_model_computes_as_the_same_model_in_one_file(tmp_path, parts, tensors):
    whole = load_llama(write_llama(tmp_path / "whole.gguf", tensors))
    split = load_llama(parts[0])
    ids = [5, 60, 200, 7]
    np.testing.assert_array_equal(split.full_forward(ids).logits, whole.full_forward(ids).logits)


def test_a_missing_part_is_named(parts):
    parts[1].unlink()
    with pytest.raises(GGUFError, match=f"part {parts[1]} of this {len(parts)}-part model is missing"):
        GGUFFile(parts[0])


def test_a_later_part_names_the_first(parts):
    with pytest.raises(GGUFError, match=f"part 2 of {len(parts)} of a split model: open its first part "
                                        f"\\({parts[0]}\\)"):
        GGUFFile(parts[1])


def test_a_renamed_split_says_its_parts_cannot_be_found(parts):
    renamed = parts[0].rename(parts[0].with_name("model.gguf"))
    with pytest.raises(GGUFError, match="the name does not end in -00001-of-"):
        GGUFFile(renamed)


def test_a_part_from_another_split_is_refused(tmp_path, parts, tensors):
    (tmp_path / "other").mkdir()
    other = write_split_llama(tmp_path / "other" / "x.gguf", tensors, max_tensors=5)
    parts[2].unlink()
    other[1].rename(parts[2])                 # split.no 1, where part 3 (split.no 2) belongs
    with pytest.raises(GGUFError, match=f"{parts[2]}: split.no = 1 and split.count = {len(other)}, expected 2 and"):
        GGUFFile(parts[0])
