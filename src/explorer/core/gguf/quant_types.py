"""The GGML tensor types this explorer reads, one entry each (`QuantType`): its name and
id, its block, how its values are read, how its blocks are rewritten for the block loops
and which of llama.cpp's integer products multiplies them (its `Layout`). The reader, the
loader, `blocks.BlockMatrix`, the loops (`kernels`) and the products (`int8_products`)
all look a type up here: a new type is an entry in TYPES (its block code in `unpack`; a
layout of its own, if it needs one, beside the others, with its product)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import unpack


@dataclass(frozen=True)
class Layout:
    """How the weights of a quantised type are kept (`blocks.BlockMatrix`) and multiplied.
    Tensors of one layout are stacked into one matrix and share the loops, in either
    arithmetic."""

    bits: int          # 4: two weights a byte (uint8); 8: one weight a byte (int8)
    group: int         # elements per scale (and offset): 32, or 16 (Q2_K's, Q3_K's, Q6_K's)
    offset: bool       # value = q * scale + offset (always, for 4-bit rows), else q * scale
    activations: str   # how llama.cpp rounds the rows it multiplies them by (its vec_dot type):
                       # "q8_0", "q8_1" or "q8_K" (`int8_products.quantize_rows`)
    product: str       # the `int8_products` function multiplying them as llama.cpp does (a
                       # name: that module loads numba, reading a file must not)

    @property
    def kind(self) -> tuple[int, int, bool, str, str]:
        return self.bits, self.group, self.offset, self.activations, self.product

    @property
    def loops(self) -> tuple[int, int, bool]:
        """(bits, group, offset): what the float loops (`kernels`) of its rows depend on."""
        return self.bits, self.group, self.offset

    def empty(self, rows: int, cols: int):  # -> q, scale, offset (None without offsets)
        """The arrays a matrix [rows, cols] of this layout is kept in, unfilled."""
        q = np.empty((rows, cols // 2), np.uint8) if self.bits == 4 else np.empty((rows, cols), np.int8)
        scale = np.empty((rows, cols // self.group), np.float32)
        return q, scale, np.empty_like(scale) if self.offset else None


@dataclass(frozen=True)
class QuantType:
    """One GGML tensor type."""

    name: str                        # as GGUF files and llama.cpp name it
    ggml_id: int                     # its number in a GGUF file's tensor table
    block: int                       # elements per block
    block_bytes: int                 # bytes per block
    values: Callable | None = None   # raw [nbytes] uint8 -> [n] float32 of its own; None: every
                                     # value of its rewritten rows (`unpack.dense`)
    layout: Layout | None = None     # None: a float type, read as float32 at load
    rewrite: Callable | None = None  # (raw, rows, cols, q, scale, offset): its blocks written
                                     # into `layout.empty(rows, cols)` (`unpack`)
    k_parts: Callable | None = None  # (raw, rows, cols) -> a K-quant's scales before they are
                                     # multiplied (`BlockMatrix.k_parts`); None for the others

    def dequantise(self, raw: np.ndarray) -> np.ndarray:  # [nbytes] uint8 -> [n] float32
        """Every value of a tensor's raw bytes, in element order (a new array)."""
        if self.values is not None:
            return self.values(raw)
        n = raw.size // self.block_bytes * self.block          # one row of all the elements
        q, scale, offset = self.layout.empty(1, n)
        self.rewrite(raw, 1, n, q, scale, offset)
        return unpack.dense(self.layout.bits, q, scale, offset).reshape(-1)


# The layouts, with the bits each keeps per weight: q, and float32 scales (and offsets)
# per group; a K-quant's `k_parts` add 0.75 (Q4_K, Q5_K), 0.625 (Q3_K, Q6_K) or 1.25
# (Q2_K). The file's own bits per weight in brackets.
_8_BIT = Layout(8, 32, False, "q8_0", "times_8bit_lanes")     # Q8_0 (8.5), Q5_0 (5.5): 9
_Q4_0 = Layout(4, 32, True, "q8_0", "times_q4_0")            # 6 (4.5)
_Q4_1 = Layout(4, 32, True, "q8_1", "times_q4_1")            # 6 (5)
_Q5_1 = Layout(8, 32, True, "q8_1", "times_q5_1")            # 10 (6)
_Q2_K = Layout(8, 16, True, "q8_K", "times_q2_k")            # 12 (2.625)
_Q3_K = Layout(8, 16, False, "q8_K", "times_q3_k")           # 10 (3.4375)
_Q4_K = Layout(4, 32, True, "q8_K", "times_q4_k")            # 6 (4.5)
_Q5_K = Layout(8, 32, True, "q8_K", "times_q5_k")            # 10 (5.5)
_Q6_K = Layout(8, 16, False, "q8_K", "times_q6_k")           # 10 (6.5625)

TYPES = {t.name: t for t in (            # name -> type, in ggml id order
    # name, id, elements and bytes per block, values, layout, rewrite, k_parts
    QuantType("F32", 0, 1, 4, unpack.f32_values),
    QuantType("F16", 1, 1, 2, unpack.f16_values),
    QuantType("Q4_0", 2, 32, 18, unpack.q4_0_values, _Q4_0, unpack.q4_0_rows),
    QuantType("Q4_1", 3, 32, 20, unpack.q4_1_values, _Q4_1, unpack.q4_1_rows),
    QuantType("Q5_0", 6, 32, 22, None, _8_BIT, unpack.q5_0_rows),
    QuantType("Q5_1", 7, 32, 24, None, _Q5_1, unpack.q5_1_rows),
    QuantType("Q8_0", 8, 32, 34, unpack.q8_0_values, _8_BIT, unpack.q8_0_rows),
    QuantType("Q2_K", 10, 256, 84, None, _Q2_K, unpack.q2_k_rows, unpack.q2_k_parts),
    QuantType("Q3_K", 11, 256, 110, None, _Q3_K, unpack.q3_k_rows, unpack.q3_k_parts),
    QuantType("Q4_K", 12, 256, 144, None, _Q4_K, unpack.q4_k_rows, unpack.q4_k_parts),
    QuantType("Q5_K", 13, 256, 176, None, _Q5_K, unpack.q5_k_rows, unpack.q5_k_parts),
    QuantType("Q6_K", 14, 256, 210, None, _Q6_K, unpack.q6_k_rows, unpack.q6_k_parts),
    QuantType("BF16", 30, 1, 2, unpack.bf16_values),
)}
BY_ID = {t.ggml_id: t for t in TYPES.values()}
QUANTISED = tuple(t for t in TYPES.values() if t.layout is not None)
LAYOUTS = {t.layout.kind: t.layout for t in QUANTISED}   # `Layout.kind` -> its layout

# names of the ggml types this explorer does not read, for messages (a type in TYPES is
# named by its entry)
OTHER_NAMES = {9: "Q8_1", 15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL",
               21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64",
               29: "IQ1_M", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4", 40: "NVFP4", 41: "Q1_0"}
# the downloads whose files hold only types of TYPES (llama.cpp's names for its mixes)
DOWNLOADS = ("Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0")


def type_name(ggml_id: int) -> str:
    """A ggml type's name, read or not ("type 99" for an id ggml does not have)."""
    return BY_ID[ggml_id].name if ggml_id in BY_ID else OTHER_NAMES.get(ggml_id, f"type {ggml_id}")
