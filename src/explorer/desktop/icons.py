"""The application icon: the drawing (`resources/icons/token-explorer.svg`), the PNG sizes
made from it by `tools/make_icons.py`, and the containers Windows (.ico) and macOS (.icns)
want, packed from those PNGs. Qt-free: the launcher files are written without a display."""

from __future__ import annotations

import struct
from pathlib import Path

from ..resources import resources_dir

ICON_NAME = "token-explorer"       # the freedesktop icon name, also the files' stem
# px: the freedesktop hicolor sizes (16-512), Windows' (16-256) and macOS's (16-512)
PNG_SIZES = (16, 22, 24, 32, 48, 64, 128, 256, 512)
ICO_SIZES = (16, 24, 32, 48, 64, 256)            # Explorer's list, task bar and large icons
# ICNS element type -> px: every one holds a PNG (macOS 10.7+); the @2x types reuse a larger PNG
ICNS_TYPES = (("icp4", 16), ("icp5", 32), ("icp6", 64), ("ic07", 128), ("ic08", 256), ("ic09", 512),
              ("ic11", 32), ("ic12", 64), ("ic13", 256), ("ic14", 512))


def icons_dir() -> Path:
    return resources_dir() / "icons"


def svg_path() -> Path:
    return icons_dir() / f"{ICON_NAME}.svg"


def png_path(size: int) -> Path:
    return icons_dir() / f"{ICON_NAME}-{size}.png"


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) of a PNG file's bytes, from its IHDR chunk."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise ValueError("not a PNG file")
    return struct.unpack(">II", data[16:24])


def pack_ico(pngs: dict[int, bytes]) -> bytes:
    """A Windows .ico holding each PNG as it is (PNG entries: Windows Vista and later).
    pngs: size in px -> PNG bytes, square."""
    sizes = sorted(pngs)
    header = struct.pack("<HHH", 0, 1, len(sizes))          # reserved, type 1 = icon, count
    offset = 6 + 16 * len(sizes)
    entries, images = b"", b""
    for size in sizes:
        data = pngs[size]
        side = 0 if size >= 256 else size                     # 0 means 256 in the directory
        entries += struct.pack("<BBBBHHII", side, side, 0, 0, 1, 32, len(data), offset + len(images))
        images += data
    return header + entries + images


def pack_icns(pngs: dict[int, bytes]) -> bytes:
    """A macOS .icns with one PNG element per type in ICNS_TYPES. pngs: size in px -> PNG bytes."""
    body = b"".join(kind.encode("ascii") + struct.pack(">I", 8 + len(pngs[size])) + pngs[size]
                    for kind, size in ICNS_TYPES)
    return b"icns" + struct.pack(">I", 8 + len(body)) + body


def shipped_pngs(sizes=PNG_SIZES) -> dict[int, bytes]:
    """size -> the shipped PNG's bytes."""
    return {size: png_path(size).read_bytes() for size in sizes}
