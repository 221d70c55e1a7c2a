"""The registry of tensor types (core/gguf/quant_types): each entry against llama.cpp's own
`gguf` package, and every part of the engine finding what it needs of a type there."""

from __future__ import annotations

import gguf
import numpy as np
import pytest
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

from explorer.core.gguf import int8_products, kernels
from explorer.core.gguf.blocks import BlockMatrix, layouts_of
from explorer.core.gguf.reader import GGUFError, GGUFFile
from explorer.core.gguf.quant_types import BY_ID, LAYOUTS, OTHER_NAMES, QUANTISED, TYPES, type_name


@pytest.mark.parametrize("name", list(TYPES))
def test_each_type_is_llama_cpps_by_name_id_and_block(name):
    qtype, theirs = TYPES[name], GGMLQuantizationType[name]
    assert qtype.name == name and qtype.ggml_id == theirs.value
    assert (qtype.block, qtype.block_bytes) == GGML_QUANT_SIZES[theirs]
    assert BY_ID[qtype.ggml_id] is qtype and type_name(qtype.ggml_id) == name


def test_the_types_not_read_are_named_as_llama_cpp_names_them():
    for ggml_id, name in OTHER_NAMES.items():
        assert GGMLQuantizationType(ggml_id).name == name
    assert type_name(99) == "type 99"


def test_the_registry_is_in_id_order_and_every_quantised_type_has_its_parts():
    assert [t.ggml_id for t in TYPES.values()] == sorted(BY_ID)
    for qtype in TYPES.values():
        assert (qtype.layout is None) == (qtype.rewrite is None) == (qtype.block == 1)
        assert qtype.values is not None or qtype.layout is not None      # its values, one way or the other
    assert [t.name for t in QUANTISED if t.k_parts is not None] == ["Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"]


@pytest.mark.parametrize("kind", sorted(LAYOUTS))
def test_each_layout_names_its_loops_and_its_llama_cpp_product(kind):
    layout = LAYOUTS[kind]
    assert layout.kind == kind and layout.activations in int8_products.ACTIVATIONS
    assert callable(getattr(int8_products, layout.product))
    if layout.bits == 8:
        assert (layout.group, layout.offset) in kernels.EIGHT_BIT
    q, scale, offset = layout.empty(3, 256)
    assert (offset is not None) == layout.offset and scale.shape == (3, 256 // layout.group)
    m = BlockMatrix(q, scale, offset, layout)
    assert m.shape == (3, 256) and m.kind == kind and m.layout is layout


def test_the_layouts_a_file_needs_are_found_from_its_type_ids():
    ids = [TYPES[name].ggml_id for name in ("F32", "BF16", "Q8_0", "Q5_0", "Q3_K", "Q6_K")] + [16]  # IQ2_XXS, not read
    assert layouts_of(ids) == {(8, 32, False), (8, 16, False)}
    assert layouts_of([TYPES[name].ggml_id for name in ("Q4_K", "Q5_K", "Q2_K")]) == {
        (4, 32, True), (8, 32, True), (8, 16, True)}


@pytest.mark.parametrize("name", ["IQ2_XXS", "IQ4_XS", "TQ1_0", "Q8_K"])
def test_a_type_not_read_is_refused_naming_the_tensor_its_type_and_the_downloads_that_work(tmp_path, name):
    qtype = GGMLQuantizationType[name]
    block, size = GGML_QUANT_SIZES[qtype]
    path = tmp_path / "model.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tensor("blk.0.attn_q.weight", np.zeros((2, 256 // block * size), np.uint8), raw_dtype=qtype)
    w.add_tensor("output_norm.weight", np.ones(256, np.float32))
    for write in (w.write_header_to_file, w.write_kv_data_to_file, w.write_tensors_to_file):
        write()
    w.close()
    gf = GGUFFile(path)
    assert gf.raw("output_norm.weight").nbytes == 1024            # the file is fine; that tensor is not
    with pytest.raises(GGUFError) as err:
        gf.raw("blk.0.attn_q.weight")
    message = str(err.value)
    assert f"tensor blk.0.attn_q.weight is {name}, which Token Explorer does not read" in message
    assert "download a Q4_K_M, Q5_K_M, Q6_K or Q8_0 file of this model instead" in message
    assert all(t in message for t in TYPES)
