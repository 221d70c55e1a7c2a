"""Weight matrices kept in a GGUF file's own 4- and 8-bit blocks and multiplied in them
(`BlockMatrix`), with the loading of the compiled loops (`prepare`)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from .quant_types import BY_ID, LAYOUTS, TYPES, Layout, QuantType
from .unpack import BLOCK
# numba's fallback thread pool ("workqueue") aborts when two threads launch parallel
# loops at once; the window computes on a worker thread and the UI thread, so launches
# take turns (a lock costs well under a microsecond next to a product's milliseconds)
_LAUNCH = threading.Lock()


def _kernels():
    from . import kernels   # numba: only once a quantised model is loaded
    return kernels


def _mapped_kernels():
    from . import mapped_kernels
    return mapped_kernels


@dataclass(frozen=True, eq=False)
class BlockMatrix:
    """A float32 matrix [rows, cols] stored in 32-element blocks along each row.

    `BlockMatrix` keeps a matrix [rows, cols] (GGUF's [out, in]) in its blocks; its
    transpose `m.T` is what a layer multiplies by:

        x @ m.T     x [n, cols] float32 -> [n, rows] float32, by compiled loops that unpack
                    the blocks where they are used (`kernels`)
        m[ids]      dequantised rows (the embedding lookup)
        m.dense()   the whole matrix as float32, equal to `gguf.dequantize` bit for bit"""

    q: np.ndarray                  # [rows, cols/2] uint8 (4-bit) or [rows, cols] int8 (8-bit)
    scale: np.ndarray              # [rows, cols/group] float32
    offset: np.ndarray | None      # [rows, cols/group] float32, None for rows without offsets
    layout: Layout                 # its type's (`quant_types`): bits, group, offset, the loops
                                   # and llama.cpp's product
    k_parts: tuple | None = None   # a K-quant's scales before they were multiplied, which
                                   # llama.cpp's integer products apply separately: Q4_K's and
                                   # Q5_K's (d, dmin [rows, cols/256], sc, m [rows, cols/32]
                                   # uint8), Q2_K's (the same, sc and m [rows, cols/16]),
                                   # Q3_K's and Q6_K's (d [rows, cols/256], sc [rows, cols/16]
                                   # int8)

    __array_ufunc__ = None         # numpy must not turn it into an object array
    dtype = np.dtype(np.float32)
    ndim = 2

    @classmethod
    def from_gguf(cls, raw: np.ndarray, ggml_type: int, shape: tuple[int, int]) -> "BlockMatrix":
        """From a tensor's raw bytes (GGUFFile.raw) of one of the `quant_types.QUANTISED`
        types (by its ggml id), numpy shape [rows, cols]; copies out of the file, which may
        then close. Q4_K becomes 4-bit rows, Q5_0, Q5_1 and the other K-quants 8-bit ones
        (`unpack`)."""
        return cls.from_gguf_rows([(raw, ggml_type, shape)])

    @classmethod
    def from_gguf_rows(cls, tensors) -> "BlockMatrix":
        """The rows of several tensors [(raw bytes, ggml type, [rows, cols])] of one
        `quant_types.Layout` and width, one after another (a layer's Q, K and V): each
        copied out of the file once, straight into its rows of the whole."""
        types = [BY_ID[t] for _, t, _ in tensors]
        layouts = {t.layout for t in types}
        widths = {shape[1] for _, _, shape in tensors}
        if len(layouts) != 1 or len(widths) != 1:
            raise ValueError(f"cannot stack tensors of kinds {sorted(lo.kind for lo in layouts)} "
                             f"and widths {sorted(widths)}")
        layout, cols = layouts.pop(), widths.pop()
        q, scale, offset = layout.empty(sum(shape[0] for _, _, shape in tensors), cols)
        k_parts, start = [], 0
        for (raw, _, (n, _)), qtype in zip(tensors, types):
            part = slice(start, start + n)
            k_parts.append(_copy_rows(np.asarray(raw, np.uint8), qtype, n, cols, q[part], scale[part],
                                      None if offset is None else offset[part]))
            start += n
        return cls(q, scale, offset, layout,
                   None if k_parts[0] is None else tuple(map(np.concatenate, zip(*k_parts))))

    @property
    def bits(self) -> int:
        return self.layout.bits

    @property
    def shape(self) -> tuple[int, int]:
        return self.q.shape[0], self.q.shape[1] * (2 if self.bits == 4 else 1)

    @property
    def group(self) -> int:
        """Elements per scale: 32, or 16 (Q2_K's, Q3_K's, Q6_K's)."""
        return self.layout.group

    @property
    def activations(self) -> str:
        """How llama.cpp rounds the rows it multiplies: "q8_0", "q8_1" or "q8_K"."""
        return self.layout.activations

    @property
    def kind(self) -> tuple:
        """Its layout's `kind`: matrices of one kind can be stacked and multiplied by one
        loop, in either arithmetic."""
        return self.layout.kind

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.q, self.scale, self.offset, *(self.k_parts or ())) if a is not None)

    @property
    def T(self) -> "_Transposed":
        return _Transposed(self)

    def stacks(self, parts) -> bool:
        """True if `parts` (BlockMatrix) are this matrix's rows, in order, as views of it."""
        address, step = _address(self.q), self.q.strides[0]
        for part in parts:
            if type(part) is not BlockMatrix or part.q.strides != self.q.strides or _address(part.q) != address:
                return False
            address += part.shape[0] * step
        return address == _address(self.q) + self.shape[0] * step

    def row_block(self, start: int, stop: int) -> "BlockMatrix":
        """Rows start..stop-1 as a view (the Q, K and V parts of a stacked matrix)."""
        return BlockMatrix(self.q[start:stop], self.scale[start:stop],
                           None if self.offset is None else self.offset[start:stop], self.layout,
                           None if self.k_parts is None else tuple(a[start:stop] for a in self.k_parts))

    def __getitem__(self, rows) -> np.ndarray:  # ids [n] -> [n, cols] float32
        """Rows unpacked by numpy, as the loops unpack them: an integer times its scale is
        exact in float32, so the value rounds once (by the offset) either way. (Through
        `dense`, a Decode step's one embedding row cost a product by a [cols, cols] identity.)"""
        q, scale = self.q[rows], self.scale[rows][..., None]           # [n, cols/2 or cols], [n, blocks, 1]
        n, blocks = scale.shape[0], scale.shape[1]
        if self.bits == 8:                                             # q * scale (+ offset)
            values = q.reshape(n, blocks, -1).astype(np.float32) * scale
            return (values if self.offset is None else values + self.offset[rows][..., None]).reshape(n, -1)
        packed = q.reshape(n, blocks, BLOCK // 2)                      # [n, blocks, 16] bytes
        nibbles = np.concatenate([packed & 15, packed >> 4], axis=-1)  # [n, blocks, 32]: low, then high
        return (nibbles.astype(np.float32) * scale + self.offset[rows][..., None]).reshape(n, -1)

    def dense(self) -> np.ndarray:  # -> [rows, cols] float32
        """Every weight, through the products' own unpacking (of several rows, as a
        Prefill's): row c of the identity times the matrix is column c, and 1 * w plus
        zeros is exactly w."""
        return self.times_rows(np.eye(self.shape[1], dtype=np.float32)).T.copy()

    @cached_property
    def _loops(self):  # -> (rows, cols, the loops' arguments after x, matvec, matmul)
        """What every product of this matrix needs, looked up once: a Decode step makes
        120 products of SmolLM2, and finding its loops anew cost a tenth of the step."""
        k = _kernels()
        rows, cols = self.shape
        weights = (self.q, self.scale) if self.offset is None else (self.q, self.scale, self.offset)
        if self.bits == 8:
            return rows, cols, weights, *k.EIGHT_BIT[self.group, self.offset is not None]
        return rows, cols, weights, k.matvec_4bit, k.matmul_4bit

    def times_rows(self, x: np.ndarray) -> np.ndarray:  # x [n, cols] -> x @ self.T [n, rows]
        rows, cols, weights, matvec, matmul = self._loops
        if x.ndim != 2 or x.shape[1] != cols:
            raise ValueError(f"cannot multiply {x.shape} by a [{cols}, {rows}] matrix")
        x = np.ascontiguousarray(x, np.float32)
        if self.bits == 4:
            x = nibble_order(x)
        out = np.empty((x.shape[0], rows), np.float32)
        with _LAUNCH:
            if x.shape[0] == 1:                          # a decode step
                matvec(x[0], *weights, out[0])
            else:
                matmul(x, *weights, out)
        return out


# the types a `MappedMatrix` multiplies in place (`mapped_kernels.LOOPS`): those of the
# Q4_K_M and Q8_0 downloads. A model is read in place only when asked (`llama.load_llama`'s
# `in_place`): it then needs about the file's size (Qwen2.5-0.5B Q4_K_M: 650 MB resident
# after a 500-token prompt instead of 820) and loads in a third of the time, but its
# Decode steps take about three times as long (these loops unpack the file's blocks more
# slowly than `kernels` read the rewritten rows)
MAPPED_TYPES = ("Q8_0", "Q5_0", "Q4_K", "Q6_K")


class MappedMatrix(BlockMatrix):
    """A quantised matrix [rows, cols] read in place from the mapped GGUF file, in the
    file's own blocks (`mapped_kernels`, for the types of MAPPED_TYPES): nothing is copied
    at load, the pages stay in the page cache (shared with any other program reading the
    file), and a product reads the file's bits per weight. Its rows are those of `parts`,
    one after another: several tensors of one type and width (a layer's Q, K and V) are
    one matrix, multiplied by one loop, without being copied together.

    It is a BlockMatrix to every reader: `x @ m.T`, `m[ids]` and `m.dense()` give the same
    values; llama.cpp's integer products (`times_int8`), which read the rewritten rows (q,
    scale, offset, k_parts), have them made once, on first use (`rewritten`)."""

    def __init__(self, parts, qtype: QuantType, cols: int):  # parts: raw [rows_i, row bytes] uint8
        object.__setattr__(self, "parts", tuple(parts))
        object.__setattr__(self, "qtype", qtype)
        object.__setattr__(self, "layout", qtype.layout)
        object.__setattr__(self, "cols", cols)

    def __repr__(self) -> str:
        return f"MappedMatrix({self.qtype.name}, {list(self.shape)}, {len(self.parts)} part(s))"

    @property
    def shape(self) -> tuple[int, int]:
        return sum(len(part) for part in self.parts), self.cols

    @property
    def nbytes(self) -> int:  # the file's bytes (mapped, not copied)
        return sum(part.nbytes for part in self.parts)

    def stacks(self, parts) -> bool:
        """True if `parts` (MappedMatrix) are this matrix's rows, in order, as views of its bytes."""
        return (all(isinstance(m, MappedMatrix) for m in parts)
                and _runs(self.parts) == _runs([p for m in parts for p in m.parts]))

    @cached_property
    def rewritten(self) -> BlockMatrix:
        """The rows rewritten into their layout (`BlockMatrix.from_gguf_rows`, a copy)."""
        return BlockMatrix.from_gguf_rows([(p.reshape(-1), self.qtype.ggml_id, (len(p), self.cols))
                                           for p in self.parts])

    q = property(lambda self: self.rewritten.q)
    scale = property(lambda self: self.rewritten.scale)
    offset = property(lambda self: self.rewritten.offset)
    k_parts = property(lambda self: self.rewritten.k_parts)

    def row_block(self, start: int, stop: int) -> "MappedMatrix":
        """Rows start..stop-1 as a view (one part of a stacked matrix)."""
        parts, at = [], 0
        for part in self.parts:
            lo, hi = max(start - at, 0), min(stop - at, len(part))
            if lo < hi:
                parts.append(part[lo:hi])
            at += len(part)
        return MappedMatrix(parts, self.qtype, self.cols)

    def __getitem__(self, rows) -> np.ndarray:  # ids [n] -> [n, cols] float32
        """Rows unpacked as the rewritten rows unpack them (the same values, bit for bit)."""
        ids = np.arange(self.shape[0])[rows].reshape(-1)                   # [n]
        picked = np.empty((len(ids), self.parts[0].shape[1]), np.uint8)    # [n, row bytes]
        at = 0
        for part in self.parts:
            mine = (ids >= at) & (ids < at + len(part))
            picked[mine] = part[ids[mine] - at]
            at += len(part)
        return BlockMatrix.from_gguf(picked.reshape(-1), self.qtype.ggml_id, (len(ids), self.cols))[:]

    def dense(self) -> np.ndarray:  # -> [rows, cols] float32
        return self[:]

    @cached_property
    def _loops(self):  # -> (rows, cols, the Decode loop, the Prefill loop's kind, nibble order?)
        matvec, kind, nibbles = _mapped_kernels().LOOPS[self.qtype.name]
        return *self.shape, matvec, kind, nibbles

    def times_rows(self, x: np.ndarray) -> np.ndarray:  # x [n, cols] -> x @ self.T [n, rows]
        rows, cols, matvec, kind, nibbles = self._loops
        if x.ndim != 2 or x.shape[1] != cols:
            raise ValueError(f"cannot multiply {x.shape} by a [{cols}, {rows}] matrix")
        k = _mapped_kernels()
        x = np.ascontiguousarray(x, np.float32)
        out = np.empty((x.shape[0], rows), np.float32)
        with _LAUNCH:
            if x.shape[0] == 1:
                matvec(x[0], self.parts, k.HALF, k.RUN, out[0])
            else:                           # Q4_K: unpacked in the 4-bit rows' order, summed as theirs
                k.matmul(nibble_order(x) if nibbles else x, self.parts, k.HALF, kind, k.RUN, out)
        return out


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _runs(arrays) -> list[list[int]]:  # -> [start address, end address, row stride] of each run
    """The byte runs of consecutive row arrays, those that continue one another merged."""
    runs = []
    for a in arrays:
        start, stride = _address(a), a.strides[0]
        if runs and runs[-1][1] == start and runs[-1][2] == stride:
            runs[-1][1] = start + len(a) * stride
        else:
            runs.append([start, start + len(a) * stride, stride])
    return runs


def stored_matrix(raw: np.ndarray, ggml_type: int, shape: tuple[int, int], in_place: bool = False) -> BlockMatrix:
    """A quantised tensor's raw bytes (GGUFFile.raw) as the model keeps it: rewritten
    (`BlockMatrix.from_gguf`), or with `in_place`, for the types of MAPPED_TYPES, read in
    place (`MappedMatrix`)."""
    return stored_rows([(raw, ggml_type, shape)], in_place)


def stored_rows(tensors, in_place: bool = False) -> BlockMatrix:
    """The rows of several tensors [(raw bytes, ggml type, [rows, cols])] of one layout and
    width as one matrix (a layer's Q, K and V): rewritten (`BlockMatrix.from_gguf_rows`), or
    with `in_place`, when they are all of one type of MAPPED_TYPES, read in place
    (`MappedMatrix`)."""
    types = {BY_ID[t] for _, t, _ in tensors}
    widths = {shape[1] for _, _, shape in tensors}
    if in_place and len(types) == 1 and len(widths) == 1 and (qtype := types.pop()).name in MAPPED_TYPES:
        return MappedMatrix([np.asarray(raw, np.uint8).reshape(shape[0], -1) for raw, _, shape in tensors],
                            qtype, widths.pop())
    return BlockMatrix.from_gguf_rows(tensors)


def _copy_rows(raw: np.ndarray, qtype: QuantType, rows: int, cols: int, q, scale, offset):
    """A tensor's raw bytes [rows * cols / block * bytes] of `qtype` rewritten into q,
    scale and offset (its rows of a `BlockMatrix`'s arrays); -> a K-quant's `k_parts`,
    else None."""
    qtype.rewrite(raw, rows, cols, q, scale, offset)
    return None if qtype.k_parts is None else qtype.k_parts(raw, rows, cols)


@dataclass(frozen=True, eq=False)
class _Transposed:
    """A BlockMatrix [rows, cols] read as [cols, rows]: the right operand of `x @`."""

    T: BlockMatrix

    __array_ufunc__ = None         # `x @ m.T` asks this object, not numpy
    dtype = np.dtype(np.float32)
    ndim = 2

    @property
    def shape(self) -> tuple[int, int]:
        return self.T.shape[::-1]

    def __rmatmul__(self, x) -> np.ndarray:  # [n, cols] -> [n, rows]
        return self.T.times_rows(x)

    def times_int8(self, x, batch: int | None = None) -> np.ndarray:  # [n, cols] -> [n, rows]
        """`x @ self` as llama.cpp computes it: x rounded to 8 bits, integer products
        summed as it sums them for a batch of `batch` rows (default: x's)."""
        from . import int8_products     # numba: only once a quantised model multiplies
        return int8_products.times_rows(self.T, x, _LAUNCH, batch)


def prepare(layouts=None) -> None:
    """Compile the block loops of these layouts, `quant_types.Layout.loops` (None: all of
    them), now, or read them from numba's cache (about 4 s the first time, 0.3 s after).
    Loading a quantised model does it for the layouts it holds, so that its first
    Prefill's time (which the timeline shows) is the model's, and `explorer model install`
    does it, so that the first load does not wait for the compiler. (The loops depend on
    bits, group and offset only: the activations and product a layout names matter to
    llama.cpp's arithmetic, `int8_products`.)"""
    for loops, layout in {lo.loops: lo for lo in LAYOUTS.values()}.items():
        if layouts is not None and loops not in layouts:
            continue                   # SmolLM2 has no 8-bit rows with a scale per 16
        q, scale, offset = layout.empty(1, BLOCK)                              # a matrix [1, 32]
        m = BlockMatrix(np.zeros_like(q), np.ones_like(scale), None if offset is None else np.ones_like(offset),
                        layout)
        for rows in (1, 2):                                                    # Decode, Prefill
            m.times_rows(np.ones((rows, BLOCK), np.float32))


def prepare_mapped(kinds) -> None:
    """Compile (or read from numba's cache) the loops of matrices read in place, one per
    (type name, number of parts) in `kinds` (`mapped_kinds`): numba compiles a loop for
    each number of parts it is given."""
    for name, count in set(kinds):
        qtype = TYPES[name]
        m = MappedMatrix([np.zeros((1, qtype.block_bytes), np.uint8)] * count, qtype, qtype.block)
        for rows in (1, 2):                                                    # Decode, Prefill
            m.times_rows(np.ones((rows, qtype.block), np.float32))


def mapped_kinds(matrices) -> set[tuple[str, int]]:
    """(type name, number of parts) of the matrices read in place among `matrices`."""
    return {(m.qtype.name, len(m.parts)) for m in matrices if isinstance(m, MappedMatrix)}


def layouts_of(ggml_types) -> set[tuple[int, int, bool]]:
    """The loops' layouts (`prepare`) that tensors of these ggml types are multiplied in."""
    return {t.layout.loops for t in map(BY_ID.get, ggml_types) if t is not None and t.layout is not None}


def nibble_order(x: np.ndarray) -> np.ndarray:  # [n, cols] -> [n, cols] as 4-bit rows unpack
    """Elements 0-15 of every block first, then elements 16-31 of every block, the order
    in which `kernels` unpacks a 4-bit row (low nibbles, then high ones)."""
    n, cols = x.shape
    if n == 1:                                    # a decode step: one gather (a third of the time)
        return x[:, _nibble_index(cols)]
    return np.ascontiguousarray(x.reshape(n, cols // BLOCK, 2, 16).transpose(0, 2, 1, 3)).reshape(n, cols)


@lru_cache(maxsize=None)
def _nibble_index(cols: int) -> np.ndarray:  # -> [cols] the columns of x in nibble order
    return np.arange(cols).reshape(cols // BLOCK, 2, 16).transpose(1, 0, 2).reshape(-1)
