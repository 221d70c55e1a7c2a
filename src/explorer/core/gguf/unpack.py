"""Each GGUF tensor type's own code (`quant_types` lists them): its blocks read as float32
values, and its quantised blocks rewritten, at load and without losing a bit, as the 4-
and 8-bit rows the block loops (`kernels`) read.

A rewrite takes a tensor's raw bytes, its numpy shape [rows, cols], and the arrays of its
rows in a `BlockMatrix` (q, scale, offset: `quant_types.Layout.empty`), and fills them."""

from __future__ import annotations

import numpy as np

# Kept as they are, read in place: a float16 scale d (and Q4_1's float16 minimum m), then
# the quants, copied out whole (a byte at a time took 3x as long); 32 elements a block
#     Q8_0  f16 d | 32 x int8 q               value = q * d                 -> 8-bit
#     Q4_0  f16 d | 16 bytes                  value = (nibble - 8) * d      -> 4-bit, offset -8d
#     Q4_1  f16 d | f16 m | 16 bytes          value = nibble * d + m        -> 4-bit, offset m
# where byte j holds element j in its low nibble and element j + 16 in its high nibble.
_FIELDS = {"Q4_0": np.dtype([("d", "<f2"), ("q", "V16")]),
           "Q4_1": np.dtype([("d", "<f2"), ("m", "<f2"), ("q", "V16")]),
           "Q8_0": np.dtype([("d", "<f2"), ("q", "V32")])}
# Rewritten:
#     Q5_0  f16 d | uint32 qh | 16 bytes qs   (32 elements)
#           element j: (low nibble of qs[j] | bit j of qh << 4) - 16, j + 16: the high
#           nibble and bit j + 16; value = q * d                  -> 8-bit, scale per 32
#     Q4_K  f16 d | f16 dmin | 12 bytes of 6-bit scales and minimums | 128 bytes qs
#           (256 elements in 8 sub-blocks of 32); 32 bytes of qs hold two sub-blocks, the
#           first in the low nibbles; value = q * (d * sc) - dmin * m
#                                                                 -> 4-bit, offset -(dmin * m)
#     Q6_K  128 bytes ql (low 4 bits) | 64 bytes qh (high 2 bits) | 16 int8 scales | f16 d
#           (256 elements, a scale per 16); value = (q - 32) * (d * sc)
#                                                                 -> 8-bit, scale per 16
#     Q5_1  f16 d | f16 m | uint32 qh | 16 bytes qs: Q5_0's bits, value = q * d + m
#                                                                 -> 8-bit, offset m
#     Q5_K  Q4_K's d, dmin, scales | 32 bytes qh | 128 bytes qs: element 32b + l takes bit b
#           of qh[l] as its fifth bit; value = q * (d * sc) - dmin * m
#                                                                 -> 8-bit, offset -(dmin * m)
#     Q3_K  32 bytes hmask | 64 bytes qs (2 bits) | 12 bytes of 6-bit scales | f16 d: element
#           128h + 32s + l has bits 2s, 2s+1 of qs[32h + l] and bit 4h + s of hmask[l] (clear:
#           minus 4); value = q * (d * (sc - 32)), a scale per 16   -> 8-bit, scale per 16
#     Q2_K  16 bytes of 4-bit scale and minimum | 64 bytes qs (2 bits) | f16 d | f16 dmin:
#           element 128h + 32s + l has bits 2s, 2s+1 of qs[32h + l]; per 16,
#           value = q * (d * sc) - dmin * m             -> 8-bit, offset -(dmin * m) per 16
# A 2- to 6-bit integer times a float16 scale times a 4- to 8-bit scale fits a float32
# exactly, so each value is rounded at most once (by the offset), as in the `gguf`
# package's dequantiser.

BLOCK = 32       # elements per Q5_0 block and per 4-bit row block of the loops
SUPER = 256      # elements per K-quant block


def half(pairs: np.ndarray) -> np.ndarray:  # [..., 2] uint8 little-endian float16 -> [...] float32
    # read in place as float16 (the pair's two bytes are adjacent): copying the [..., 2]
    # bytes out first cost five times as long (a tenth of a SmolLM2 load)
    return pairs.view("<f2")[..., 0].astype(np.float32)


def f32_values(raw):  # [nbytes] uint8 -> [n] float32
    return raw.view("<f4").astype(np.float32)           # a copy: the file may be closed


def f16_values(raw):  # [nbytes] uint8 -> [n] float32
    return raw.view("<f2").astype(np.float32)


def bf16_values(raw):  # [nbytes] uint8 -> [n] float32
    """bfloat16 is the top half of a float32: its 16 bits shifted up are the value."""
    return (raw.view("<u2").astype(np.uint32) << 16).view(np.float32)


def _blocks(raw, size: int):  # [nbytes] uint8 -> blocks [nb, size], d [nb, 1] float32
    """The blocks of a 32-element type and their float16 scales, which come first."""
    blocks = raw.reshape(-1, size)
    return blocks, blocks[:, 0:2].copy().view("<f2").astype(np.float32)


def _nibbles(blocks):  # [nb, bytes] uint8 -> [nb, 32] float32
    out = np.empty((blocks.shape[0], BLOCK), np.float32)
    qs = blocks[:, -16:]                                     # [nb, 16] packed nibbles
    out[:, :16] = qs & 0x0F                                  # elements 0..15: low nibbles
    out[:, 16:] = qs >> 4                                    # elements 16..31: high nibbles
    return out


def q8_0_values(raw):  # [nbytes] uint8 -> [n] float32
    blocks, d = _blocks(raw, 34)
    return (blocks[:, 2:].view(np.int8) * d).reshape(-1)


def q4_0_values(raw):  # [nbytes] uint8 -> [n] float32
    blocks, d = _blocks(raw, 18)
    out = _nibbles(blocks)
    out -= 8
    out *= d
    return out.reshape(-1)


def q4_1_values(raw):  # [nbytes] uint8 -> [n] float32
    blocks, d = _blocks(raw, 20)
    out = _nibbles(blocks)
    out *= d
    out += blocks[:, 2:4].copy().view("<f2").astype(np.float32)   # [nb, 1] minimum
    return out.reshape(-1)


def _kept(raw, name: str, rows: int, cols: int, q, scale):  # -> [rows, cols/32] blocks
    """The quants and float16 scales of a type kept as it is copied into its rows."""
    blocks = raw.view(_FIELDS[name]).reshape(rows, cols // BLOCK)               # [r, c/32] blocks
    q.view(blocks.dtype["q"]).reshape(rows, cols // BLOCK)[...] = blocks["q"]
    scale[...] = blocks["d"]                                                    # float16 -> float32
    return blocks


def q8_0_rows(raw, rows: int, cols: int, q, scale, offset) -> None:  # q [rows, cols] int8, scale [rows, cols/32]
    _kept(raw, "Q8_0", rows, cols, q, scale)


def q4_0_rows(raw, rows: int, cols: int, q, scale, offset) -> None:  # q [rows, cols/2] uint8, scale, offset [rows, cols/32]
    _kept(raw, "Q4_0", rows, cols, q, scale)
    np.multiply(scale, np.float32(-8), out=offset)      # (nibble - 8) * d = nibble * d - 8d


def q4_1_rows(raw, rows: int, cols: int, q, scale, offset) -> None:  # q [rows, cols/2] uint8, scale, offset [rows, cols/32]
    offset[...] = _kept(raw, "Q4_1", rows, cols, q, scale)["m"]


def _five_bits(b):  # [r, nb, 4 + 16] uint32 qh | qs -> [r, nb, 32] uint8, 0..31
    """Q5_0's and Q5_1's quants: element j's low nibble from qs, its fifth bit bit j of qh."""
    high = np.unpackbits(b[..., 0:4], axis=-1, bitorder="little")         # [r, nb, 32]: bit j of qh
    qs = b[..., 4:]                                                       # [r, nb, 16]
    return np.concatenate([qs & 15, qs >> 4], axis=-1) | (high << 4)


def q5_0_rows(raw, rows: int, cols: int, q, scale, offset) -> None:  # q [rows, cols] int8, scale [rows, cols/32]
    b = np.asarray(raw, np.uint8).reshape(rows, cols // BLOCK, 22)        # [r, nb, 22]
    q[...] = (_five_bits(b[..., 2:]).astype(np.int8) - np.int8(16)).reshape(rows, cols)
    scale[...] = half(b[..., 0:2])


def q5_1_rows(raw, rows: int, cols: int, q, scale, offset) -> None:  # q [rows, cols] int8, scale, offset [rows, cols/32]
    b = np.asarray(raw, np.uint8).reshape(rows, cols // BLOCK, 24)        # [r, nb, 24]
    q[...] = _five_bits(b[..., 4:]).view(np.int8).reshape(rows, cols)
    scale[...] = half(b[..., 0:2])
    offset[...] = half(b[..., 2:4])


def _scales_and_minimums(s: np.ndarray):  # [..., 12] uint8 -> sc, m [..., 8] uint8
    """Q4_K's eight 6-bit scales and minimums: bytes 0-3 hold scales 0-3 (and the top
    bits of scales 4-7), bytes 4-7 minimums 0-3 (and the top bits of minimums 4-7),
    bytes 8-11 the low 4 bits of scales 4-7 (low nibble) and minimums 4-7 (high)."""
    sc_low, m_low, rest = s[..., 0:4], s[..., 4:8], s[..., 8:12]
    sc = np.concatenate([sc_low & 63, (rest & 15) | ((sc_low >> 2) & 48)], axis=-1)
    m = np.concatenate([m_low & 63, (rest >> 4) | ((m_low >> 2) & 48)], axis=-1)
    return sc, m


def q4_k_rows(raw, rows: int, cols: int, q, scale, offset) -> None:  # q [rows, cols/2] uint8, scale, offset [rows, cols/32]
    nb = cols // SUPER
    b = np.asarray(raw, np.uint8).reshape(rows, nb, 144)                  # [r, nb, 144]
    d, dmin = half(b[..., 0:2]), half(b[..., 2:4])                        # [r, nb]
    sc, m = _scales_and_minimums(b[..., 4:16])                            # [r, nb, 8]
    scale[...] = (d[..., None] * sc.astype(np.float32)).reshape(rows, cols // BLOCK)   # [r, nb * 8]
    offset[...] = (-(dmin[..., None] * m.astype(np.float32))).reshape(rows, cols // BLOCK)
    qs = b[..., 16:].reshape(rows, nb, 4, 1, 32)                          # 4 pairs of sub-blocks
    elements = (qs >> np.array([0, 4], np.uint8).reshape(2, 1)) & 15      # [r, nb, 4, 2, 32]
    elements = elements.reshape(rows, cols // BLOCK, BLOCK)               # [r, sub-blocks, 32]
    q[...] = (elements[..., :16] | (elements[..., 16:] << 4)).reshape(rows, cols // 2)   # the loops' byte order


def q5_k_rows(raw, rows: int, cols: int, q, scale, offset) -> None:  # q [rows, cols] int8, scale, offset [rows, cols/32]
    nb = cols // SUPER
    b = np.asarray(raw, np.uint8).reshape(rows, nb, 176)                  # [r, nb, 176]
    d, dmin = half(b[..., 0:2]), half(b[..., 2:4])                        # [r, nb]
    sc, m = _scales_and_minimums(b[..., 4:16])                            # [r, nb, 8]
    scale[...] = (d[..., None] * sc.astype(np.float32)).reshape(rows, cols // BLOCK)
    offset[...] = (-(dmin[..., None] * m.astype(np.float32))).reshape(rows, cols // BLOCK)
    qs = b[..., 48:].reshape(rows, nb, 4, 1, 32)                          # 4 pairs of sub-blocks
    low = ((qs >> np.array([0, 4], np.uint8).reshape(2, 1)) & 15).reshape(rows, nb, 8, 32)
    high = (b[..., 16:48].reshape(rows, nb, 1, 32) >> np.arange(8, dtype=np.uint8).reshape(8, 1)) & 1
    q[...] = (low | (high << 4)).view(np.int8).reshape(rows, cols)         # [r, nb, 8 sub-blocks, 32]


def q5_k_parts(raw, rows: int, cols: int):  # -> d, dmin [rows, cols/256] float32, sc, m [rows, cols/32] uint8
    """Q5_K's scales before they are multiplied, as Q4_K's (`q4_k_parts`)."""
    b = np.asarray(raw, np.uint8).reshape(rows, cols // SUPER, 176)       # [r, nb, 176]
    sc, m = _scales_and_minimums(b[..., 4:16])                            # [r, nb, 8]
    return half(b[..., 0:2]), half(b[..., 2:4]), sc.reshape(rows, -1), m.reshape(rows, -1)


def _two_bits(qs):  # [r, nb, 64] uint8 -> [r, nb, 256] uint8 0..3: Q2_K's and Q3_K's order
    """Element 128h + 32s + l of a block: bits 2s and 2s + 1 of qs[32h + l]."""
    r, nb = qs.shape[:2]
    shifts = np.array([0, 2, 4, 6], np.uint8).reshape(4, 1)
    return ((qs.reshape(r, nb, 2, 1, 32) >> shifts) & 3).reshape(r, nb, SUPER)


def q2_k_rows(raw, rows: int, cols: int, q, scale, offset) -> None:  # q [rows, cols] int8, scale, offset [rows, cols/16]
    nb = cols // SUPER
    b = np.asarray(raw, np.uint8).reshape(rows, nb, 84)                   # [r, nb, 84]
    d, dmin = half(b[..., 80:82]), half(b[..., 82:84])                    # [r, nb]
    sc = b[..., 0:16]                                                     # [r, nb, 16]: scale | minimum << 4
    scale[...] = (d[..., None] * (sc & 15).astype(np.float32)).reshape(rows, cols // 16)
    offset[...] = (-(dmin[..., None] * (sc >> 4).astype(np.float32))).reshape(rows, cols // 16)
    q[...] = _two_bits(b[..., 16:80]).view(np.int8).reshape(rows, cols)


def q2_k_parts(raw, rows: int, cols: int):  # -> d, dmin [rows, cols/256] float32, sc, m [rows, cols/16] uint8
    """Q2_K's scales before they are multiplied (`q2_k_rows` keeps d * sc and dmin * m)."""
    b = np.asarray(raw, np.uint8).reshape(rows, cols // SUPER, 84)        # [r, nb, 84]
    sc = b[..., 0:16].reshape(rows, -1)
    return half(b[..., 80:82]), half(b[..., 82:84]), sc & 15, sc >> 4


def _q3_k_scales(s):  # [..., 12] uint8 -> [..., 16] int8, sc - 32
    """Q3_K's sixteen 6-bit scales: the low 4 bits of scale j in byte j % 8 (low nibble for
    j < 8, high after), its top 2 bits at bits 2 * (j // 4) of byte 8 + j % 4."""
    low = np.concatenate([s[..., 0:8] & 15, s[..., 0:8] >> 4], axis=-1)
    top = np.concatenate([(s[..., 8:12] >> shift) & 3 for shift in (0, 2, 4, 6)], axis=-1)
    return (low | (top << 4)).astype(np.int8) - np.int8(32)


def q3_k_rows(raw, rows: int, cols: int, q, scale, offset) -> None:  # q [rows, cols] int8, scale [rows, cols/16]
    nb = cols // SUPER
    b = np.asarray(raw, np.uint8).reshape(rows, nb, 110)                  # [r, nb, 110]
    d, sc = q3_k_parts(raw, rows, cols)
    scale[...] = np.repeat(d, 16, axis=1) * sc.astype(np.float32)
    high = (b[..., 0:32].reshape(rows, nb, 1, 32) >> np.arange(8, dtype=np.uint8).reshape(8, 1)) & 1
    q[...] = (_two_bits(b[..., 32:96]).view(np.int8)
              - ((1 - high.reshape(rows, nb, SUPER)) << 2).view(np.int8)).reshape(rows, cols)


def q3_k_parts(raw, rows: int, cols: int):  # -> d [rows, cols/256] float32, sc [rows, cols/16] int8
    """Q3_K's scales before they are multiplied (`q3_k_rows` keeps d * sc)."""
    b = np.asarray(raw, np.uint8).reshape(rows, cols // SUPER, 110)       # [r, nb, 110]
    return half(b[..., 108:110]), _q3_k_scales(b[..., 96:108]).reshape(rows, -1)


def q4_k_parts(raw, rows: int, cols: int):  # -> d, dmin [rows, cols/256] float32, sc, m [rows, cols/32] uint8
    """Q4_K's scales before they are multiplied (`q4_k_rows` keeps d * sc and dmin * m): what
    llama.cpp's integer products scale their sums by (`int8_products`)."""
    b = np.asarray(raw, np.uint8).reshape(rows, cols // SUPER, 144)       # [r, nb, 144]
    sc, m = _scales_and_minimums(b[..., 4:16])                            # [r, nb, 8]
    return half(b[..., 0:2]), half(b[..., 2:4]), sc.reshape(rows, -1), m.reshape(rows, -1)


def q6_k_parts(raw, rows: int, cols: int):  # -> d [rows, cols/256] float32, sc [rows, cols/16] int8
    """Q6_K's scales before they are multiplied (`q6_k_rows` keeps d * sc)."""
    b = np.asarray(raw, np.uint8).reshape(rows, cols // SUPER, 210)       # [r, nb, 210]
    return half(b[..., 208:210]), np.ascontiguousarray(b[..., 192:208]).view(np.int8).reshape(rows, -1)


def q6_k_rows(raw, rows: int, cols: int, q, scale, offset) -> None:  # q [rows, cols] int8, scale [rows, cols/16]
    nb = cols // SUPER
    b = np.asarray(raw, np.uint8).reshape(rows, nb, 210)                  # [r, nb, 210]
    ql = b[..., :128].reshape(rows, nb, 2, 64)                            # two halves of 128
    qh = b[..., 128:192].reshape(rows, nb, 2, 32)
    low = np.concatenate([ql & 15, ql >> 4], axis=-1)                     # [r, nb, 2, 128]
    high = np.concatenate([(qh >> s) & 3 for s in (0, 2, 4, 6)], axis=-1)  # [r, nb, 2, 128]
    q[...] = ((low | (high << 4)).astype(np.int8) - np.int8(32)).reshape(rows, cols)
    scale[...] = (half(b[..., 208:210])[..., None] * b[..., 192:208].view(np.int8).astype(np.float32)
                  ).reshape(rows, cols // 16)


def dense(bits: int, q: np.ndarray, scale: np.ndarray, offset) -> np.ndarray:  # -> [rows, cols] float32
    """Every value of a rewritten matrix (its type's values: `reader.dequantize`)."""
    rows = q.shape[0]
    if bits == 8:
        groups = q.reshape(rows, scale.shape[1], -1).astype(np.float32) * scale[..., None]
        return (groups if offset is None else groups + offset[..., None]).reshape(rows, -1)
    blocks = q.reshape(rows, -1, 16)                                      # [r, nb, 16]
    values = np.concatenate([blocks & 15, blocks >> 4], axis=-1).astype(np.float32)   # [r, nb, 32]
    return (values * scale[..., None] + offset[..., None]).reshape(rows, -1)
