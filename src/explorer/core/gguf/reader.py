"""A GGUF reader in numpy: header, metadata, tensor table, and dequantised tensors."""

from __future__ import annotations

import mmap
import re
import struct
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .quant_types import BY_ID, DOWNLOADS, TYPES, QuantType, type_name
from ..errors import ExplorerError
from ..limits import MAX_GGUF_BYTES, MAX_NESTING
from ..userfile import open_regular

MAGIC = b"GGUF"
VERSIONS = (2, 3)            # version 1 used 32-bit counts and is long gone
DEFAULT_ALIGNMENT = 32       # when general.alignment is absent

# metadata value types
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
_SCALARS = {UINT8: "<B", INT8: "<b", UINT16: "<H", INT16: "<h", UINT32: "<I", INT32: "<i",
            FLOAT32: "<f", BOOL: "<?", UINT64: "<Q", INT64: "<q", FLOAT64: "<d"}
_NUMPY = {UINT8: "<u1", INT8: "<i1", UINT16: "<u2", INT16: "<i2", UINT32: "<u4", INT32: "<i4",
          FLOAT32: "<f4", BOOL: "?", UINT64: "<u8", INT64: "<i8", FLOAT64: "<f8"}


# llama.cpp's gguf-split names part k (from 1) of n "PREFIX-0000k-of-0000n.gguf"; every part is
# a GGUF file with split.no (k - 1), split.count (n) and split.tensors.count (all parts' tensors)
SPLIT_NAME = re.compile(r"^(?P<prefix>.+)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$")

_U64 = struct.Struct("<Q")   # a string's length
MIN_METADATA = 8 + 4 + 1     # bytes of the smallest metadata entry: key length, type, a uint8
MIN_TENSOR_INFO = 8 + 4 + 4 + 8   # ... of the smallest tensor entry: name length, n_dims, type, offset


def shown_value(value) -> str:
    """A metadata value in a message: short (an array by its length)."""
    if isinstance(value, (list, np.ndarray)):
        return f"an array of {len(value)}"
    return repr(value)[:40]


class GGUFError(ExplorerError):
    """A GGUF file this reader cannot use; the message names the file and what is wrong."""


@dataclass(frozen=True)
class TensorInfo:
    name: str
    ne: tuple[int, ...]      # dimensions as GGUF lists them, fastest-varying first
    ggml_type: int
    offset: int              # absolute byte offset of the data in the file (a split model's
                             # parts addressed one after another: `_JoinedMaps`)

    @property
    def shape(self) -> tuple[int, ...]:  # numpy shape (row-major): ne reversed
        return tuple(reversed(self.ne))

    @property
    def n_elements(self) -> int:
        return int(np.prod(self.ne, dtype=np.int64)) if self.ne else 1

    @property
    def type_name(self) -> str:
        return type_name(self.ggml_type)

    @property
    def quant_type(self) -> QuantType | None:  # None: a type this reader does not read
        return BY_ID.get(self.ggml_type)

    @property
    def nbytes(self) -> int:
        return self.n_elements // self.quant_type.block * self.quant_type.block_bytes


class _Cursor:
    """Reads little-endian values from a buffer and names the file when it runs out."""

    def __init__(self, buf, path: Path):
        self.buf, self.pos, self.path, self.size = buf, 0, path, len(buf)

    def need(self, n: int, what: str) -> None:
        if self.pos + n > self.size:
            raise GGUFError(f"{self.path}: truncated: {what} at byte {self.pos} needs {n} bytes, "
                            f"but the file has only {self.size} bytes")

    def scalar(self, fmt: str, what: str):
        n = struct.calcsize(fmt)
        self.need(n, what)
        value = struct.unpack_from(fmt, self.buf, self.pos)[0]
        self.pos += n
        return value

    def string(self, what: str) -> str:
        n = self.scalar("<Q", what)
        self.need(n, what)
        raw = self.buf[self.pos:self.pos + n]
        self.pos += n
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise GGUFError(f"{self.path}: {what} is not valid UTF-8 ({exc})") from None

    def strings(self, count: int, what: str) -> list[str]:
        """`count` strings in a row (a vocabulary: tens of thousands, so one tight loop,
        and the end of the file checked once, after it)."""
        buf, pos, n, out = self.buf, self.pos, 0, []
        length, append = _U64.unpack_from, out.append
        try:
            for _ in range(count):
                n, = length(buf, pos)
                pos += 8
                append(buf[pos:pos + n].decode("utf-8"))   # one past the end comes out short: below
                pos += n
        except struct.error:                               # no room left for a length
            pass
        except UnicodeDecodeError as exc:
            if pos + n <= self.size:
                raise GGUFError(f"{self.path}: {what}[{len(out)}] is not valid UTF-8 ({exc})") from None
            out.append("")                                 # cut off inside a character: past the end
            pos += n
        if pos > self.size:                                # the last string ran past the end
            out.pop()
            pos -= n + 8
        if len(out) < count:
            raise GGUFError(f"{self.path}: truncated: {what}[{len(out)}] at byte {pos} runs past "
                            f"the end of the file ({self.size} bytes)")
        self.pos = pos
        return out

    def value(self, vtype: int, what: str):
        if vtype in _SCALARS:
            return self.scalar(_SCALARS[vtype], what)
        if vtype == STRING:
            return self.string(what)
        if vtype == ARRAY:
            etype = self.scalar("<I", what)
            count = self.scalar("<Q", what)
            if etype in _NUMPY:                       # numeric arrays in one read
                dt = np.dtype(_NUMPY[etype])
                self.need(count * dt.itemsize, what)
                arr = np.frombuffer(self.buf, dt, count, self.pos).copy()
                self.pos += count * dt.itemsize
                return arr
            if etype == STRING:
                return self.strings(count, what)
            if etype == ARRAY:
                if what.count("[") >= MAX_NESTING:          # arrays of arrays of …: the stack would overflow
                    raise GGUFError(f"{self.path}: {what}: arrays nested more than {MAX_NESTING} deep")
                return [self.value(ARRAY, f"{what}[{i}]") for i in range(count)]
            raise GGUFError(f"{self.path}: {what}: unknown array element type {etype}")
        raise GGUFError(f"{self.path}: {what}: unknown metadata value type {vtype}")


class GGUFFile:
    """One GGUF file, memory-mapped: `metadata`, `tensors` (name -> TensorInfo), `tensor(name)`.

    GGUF (llama.cpp's model file) is little-endian:

        magic "GGUF" | uint32 version | uint64 tensor count | uint64 metadata count
        metadata:   key (uint64 length + UTF-8) | uint32 value type | value
        tensors:    name | uint32 n_dims | uint64 ne[n_dims] | uint32 ggml type | uint64 offset
        padding to `general.alignment` (default 32), then the tensor data; each offset is
        relative to the start of that data.

    `ne` lists dimensions fastest-first: a weight with ne = [in, out] is stored row-major as
    numpy [out, in]. `tensor(name)` returns that numpy shape (ne reversed), as float32. The
    file is memory-mapped; only the tensors asked for are read.

    A model split by llama.cpp's gguf-split (`NAME-00001-of-00003.gguf`, metadata in the
    first part) is opened from its first part: the other parts are mapped beside it and
    their tensors read as if they were this file's (`paths` lists them all)."""

    def __init__(self, path, _part: bool = False):
        self.path = Path(path)
        # a regular file only (a FIFO would block, a device has no end), of a size a model may have
        with open(open_regular(self.path, MAX_GGUF_BYTES, "GGUF model file", GGUFError), "rb") as fh:
            try:
                self._mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            except ValueError:                   # an empty file cannot be mapped
                raise GGUFError(f"{self.path}: empty file, expected a GGUF model") from None
        self._map = np.frombuffer(self._mm, np.uint8)   # [file size] read-only view
        cur = _Cursor(self._mm, self.path)
        cur.need(4, "magic")
        magic = bytes(self._map[:4])
        if magic != MAGIC:
            raise GGUFError(f"{self.path}: not a GGUF file (starts with {magic!r}, expected {MAGIC!r})")
        cur.pos = 4
        self.version = cur.scalar("<I", "version")
        if self.version not in VERSIONS:
            raise GGUFError(f"{self.path}: GGUF version {self.version} is not supported "
                            f"(this reader reads versions {', '.join(map(str, VERSIONS))})")
        n_tensors = cur.scalar("<Q", "tensor count")
        n_kv = cur.scalar("<Q", "metadata count")
        if n_tensors * MIN_TENSOR_INFO + n_kv * MIN_METADATA > len(self._mm):   # before reading any of them
            raise GGUFError(f"{self.path}: truncated or damaged: the header announces {n_tensors} tensors and "
                            f"{n_kv} metadata entries, more than a file of {len(self._mm)} bytes can describe")
        self.metadata: dict = {}
        for i in range(n_kv):
            key = cur.string(f"metadata key {i}")
            vtype = cur.scalar("<I", f"type of {key}")
            self.metadata[key] = cur.value(vtype, key)
        self.alignment = self.metadata.get("general.alignment", DEFAULT_ALIGNMENT)
        if (not isinstance(self.alignment, int) or isinstance(self.alignment, bool) or self.alignment <= 0
                or self.alignment & (self.alignment - 1)):
            raise GGUFError(f"{self.path}: general.alignment = {shown_value(self.alignment)}, "
                            "expected a power of two (an integer such as 32)")
        infos = []
        for i in range(n_tensors):
            name = cur.string(f"name of tensor {i}")
            n_dims = cur.scalar("<I", f"dimension count of {name}")
            if n_dims > 4:
                raise GGUFError(f"{self.path}: tensor {name} has {n_dims} dimensions (at most 4)")
            ne = tuple(cur.scalar("<Q", f"dimensions of {name}") for _ in range(n_dims))
            gtype = cur.scalar("<I", f"type of {name}")
            offset = cur.scalar("<Q", f"offset of {name}")
            infos.append((name, ne, gtype, offset))
        self.data_offset = -(-cur.pos // self.alignment) * self.alignment
        self.tensors: dict[str, TensorInfo] = {}
        for name, ne, gtype, offset in infos:
            info = TensorInfo(name, ne, gtype, self.data_offset + offset)
            if offset % self.alignment:
                raise GGUFError(f"{self.path}: tensor {name} starts at offset {offset}, "
                                f"not a multiple of the alignment {self.alignment}")
            if info.quant_type is not None:
                block = info.quant_type.block
                if ne and ne[0] % block:
                    raise GGUFError(f"{self.path}: tensor {name} ({info.type_name}) has a row of "
                                    f"{ne[0]} elements, not a multiple of its block size {block}")
                end = info.offset + info.nbytes
                if end > len(self._map):
                    raise GGUFError(f"{self.path}: truncated: tensor {name} ends at byte {end}, "
                                    f"but the file has only {len(self._map)} bytes")
            self.tensors[name] = info
        self.paths: tuple[Path, ...] = (self.path,)       # the parts of a split model, in order
        self.file_size = len(self._map)                    # bytes of all of them
        self._parts: tuple[GGUFFile, ...] = ()            # the other parts, mapped while this is
        if not _part and split_count(self) > 1:
            self._join_parts()

    def _join_parts(self) -> None:
        """Map the other parts of a split model and take in their tensors. Part k's bytes
        are addressed after the parts before it (`_JoinedMaps`), so a tensor's offset
        still names its bytes in one address space; nothing is copied."""
        count, no = split_count(self), self.get("split.no", 0)
        named = SPLIT_NAME.match(self.path.name) is not None
        if no != 0:
            first = split_paths(self.path, count)[0] if named else "its first part"
            raise GGUFError(f"{self.path}: part {no + 1} of {count} of a split model: open its first part "
                            f"({first}), which holds the model's metadata")
        if not named:
            raise GGUFError(f"{self.path}: split.count = {count}, but the name does not end in "
                            f"-00001-of-{count:05d}.gguf, so its other parts cannot be found")
        paths = split_paths(self.path, count)
        missing = [p for p in paths[1:] if not p.exists()]
        if missing:
            many = len(missing) > 1
            raise GGUFError(f"{self.path}: part{'s' if many else ''} {', '.join(str(p) for p in missing)} of this "
                            f"{count}-part model {'are' if many else 'is'} missing")
        parts = tuple(GGUFFile(p, _part=True) for p in paths[1:])
        maps, tensors = [self._map], dict(self.tensors)
        for k, part in enumerate(parts, start=1):
            if part.get("split.no") != k or part.get("split.count") != count:
                raise GGUFError(f"{part.path}: split.no = {shown_value(part.get('split.no'))} and split.count = "
                                f"{shown_value(part.get('split.count'))}, expected {k} and {count} (part {k + 1} "
                                f"of {self.path.name}'s model)")
            base = sum(len(m) for m in maps)
            for name, info in part.tensors.items():
                if name in tensors:
                    raise GGUFError(f"{part.path}: tensor {name} is also in an earlier part of the model")
                tensors[name] = TensorInfo(name, info.ne, info.ggml_type, base + info.offset)
            maps.append(part._map)
        expected = self.get("split.tensors.count")
        if expected is not None and expected != len(tensors):
            raise GGUFError(f"{self.path}: split.tensors.count = {shown_value(expected)}, but its {count} parts "
                            f"hold {len(tensors)} tensors")
        self.tensors, self._parts, self.paths = tensors, parts, tuple(paths)
        self._map = _JoinedMaps(maps)
        self.file_size = len(self._map)

    def __repr__(self) -> str:
        return f"GGUFFile({str(self.path)!r}, version {self.version}, {len(self.tensors)} tensors)"

    def get(self, key: str, default=None):
        return self.metadata.get(key, default)

    def require(self, key: str):
        """A metadata value the caller cannot do without; GGUFError naming it if absent."""
        if key not in self.metadata:
            raise GGUFError(f"{self.path}: metadata key {key!r} is missing")
        return self.metadata[key]

    def info(self, name: str) -> TensorInfo:
        if name not in self.tensors:
            raise GGUFError(f"{self.path}: tensor {name!r} is missing "
                            f"(the file has {len(self.tensors)} tensors)")
        return self.tensors[name]

    def raw(self, name: str) -> np.ndarray:  # -> [nbytes] uint8 view into the mapped file
        info = self.info(name)
        if info.quant_type is None:
            raise GGUFError(f"{self.path}: tensor {name} is {info.type_name}, which Token Explorer does not "
                            f"read (it reads {', '.join(TYPES)}); download a {', '.join(DOWNLOADS[:-1])} "
                            f"or {DOWNLOADS[-1]} file of this model instead")
        return self._map[info.offset:info.offset + info.nbytes]

    def tensor(self, name: str) -> np.ndarray:  # -> float32, numpy shape = ne reversed
        info = self.info(name)
        return dequantize(self.raw(name), info.ggml_type).reshape(info.shape)

    def release_pages(self) -> None:
        """Let go of the file's pages this process has read (madvise MADV_DONTNEED): they
        stay in the page cache, and a view of the map (`mapped`, `blocks.MappedMatrix`)
        reads them back when it is used. After a load has read the vocabulary and copied
        out the weights it rewrites, their pages would otherwise count in the process's
        resident memory beside the copies."""
        if hasattr(mmap, "MADV_DONTNEED"):
            for part in (self, *self._parts):
                part._mm.madvise(mmap.MADV_DONTNEED)

    def mapped(self, name: str) -> np.ndarray:  # -> float32, numpy shape = ne reversed
        """An F32 tensor as a read-only view of the mapped file (no copy: the weights stay
        in the page cache, shared with any other program reading the file); any other
        type as `tensor` makes it. The view keeps the file mapped while it lives."""
        info = self.info(name)
        if info.type_name != "F32":
            return self.tensor(name)
        return self.raw(name).view("<f4").reshape(info.shape)


def split_count(gf: GGUFFile) -> int:
    """How many files the model is split into (1: not split); GGUFError if split.count is no count."""
    count = gf.get("split.count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise GGUFError(f"{gf.path}: split.count = {shown_value(count)}, expected a whole number >= 1")
    return count


def split_paths(part: Path, count: int) -> list[Path]:
    """The paths of the `count` parts of the split model `part` (named as gguf-split names
    them) belongs to, part 1 first."""
    prefix = SPLIT_NAME.match(part.name)["prefix"]
    return [part.with_name(f"{prefix}-{k:05d}-of-{count:05d}.gguf") for k in range(1, count + 1)]


class _JoinedMaps:
    """The mapped bytes of a split model's parts as one address space: part k's bytes
    start after parts 1..k-1's. A slice never spans two parts (each part checked that its
    tensors end inside it): it is a view into one part's map."""

    def __init__(self, maps):
        self.maps = maps
        self.starts = [sum(len(m) for m in maps[:k]) for k in range(len(maps))]

    def __len__(self) -> int:
        return self.starts[-1] + len(self.maps[-1])

    def __getitem__(self, s: slice) -> np.ndarray:  # -> [stop - start] uint8 view into one part
        k = bisect_right(self.starts, s.start) - 1
        base = self.starts[k]
        return self.maps[k][s.start - base:s.stop - base]


def dequantize(raw: np.ndarray, ggml_type: int) -> np.ndarray:  # [nbytes] uint8 -> [n] float32
    """Raw tensor bytes of one of `quant_types.TYPES` (by its ggml id) to a new float32
    array, in element order."""
    return BY_ID[ggml_type].dequantise(np.asarray(raw, np.uint8))
