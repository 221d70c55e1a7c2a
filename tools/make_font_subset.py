"""Build the CJK fonts shipped in `resources/fonts/` from Noto Sans CJK SC.

The app must draw Chinese on a machine that has no CJK font at all, so it ships a
subset of an OFL font and registers it at start-up (`explorer.ui.fonts`).

Source: Noto Sans CJK, version 2.004, from Debian's package `fonts-noto-cjk`
(1:20220127+repack1-1, bookworm; upstream https://github.com/notofonts/noto-cjk),
SIL Open Font License 1.1. The package ships `.ttc` collections; this script takes the
"Noto Sans CJK SC" face (Simplified Chinese glyph forms) out of one and subsets it.
Get the collections without installing them system-wide (an installed CJK font would
hide missing glyphs from the app's tests):

    apt-get update && apt-get download fonts-noto-cjk
    dpkg-deb -x fonts-noto-cjk_*.deb /tmp/noto-cjk
    pip install fonttools        # build-time tool only, not an app dependency
    python tools/make_font_subset.py \\
        /tmp/noto-cjk/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc \\
        /tmp/noto-cjk/usr/share/fonts/opentype/noto/NotoSansCJK-Bold.ttc

Characters kept: ASCII, Latin-1, General Punctuation (U+2000-206F), CJK Symbols and
Punctuation (U+3000-303F), Halfwidth and Fullwidth Forms (U+FF00-FFEF), the 3,755
GB2312 level-1 hanzi (the common-use set), plus every non-ASCII character found in the
text files under `src/`, `resources/` (except `resources/fonts/`) and `params/` that the
source font has. Re-run the script after adding Chinese UI strings. A CJK character the
app uses that the source font lacks is an error.

The OFL lets a modified font keep no Reserved Font Name ("Source", for the Adobe-made
Noto/Source Han glyphs) and "Noto" is a Google trademark, so the subset is renamed
to the family "Token Explorer CJK".

Output: OpenType with the source's CFF (PostScript) outlines and hints, `.otf`, which
Qt loads directly; nothing is converted to TrueType curves. The build is deterministic:
the same source files and the same repository text give the same bytes (head.modified
is kept from the source, not set to the build time).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import unicodedata
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTCollection, TTFont

REPO = Path(__file__).resolve().parent.parent
FAMILY = "Token Explorer CJK"
PS_FAMILY = "TokenExplorerCJK"
FILE_STEM = "TokenExplorerCJK-SC"
SOURCE_FACE = "Noto Sans CJK SC"

# Fixed blocks (inclusive ranges).
BLOCKS = [
    (0x0020, 0x007E),   # ASCII printable
    (0x00A0, 0x00FF),   # Latin-1 Supplement
    (0x2000, 0x206F),   # General Punctuation
    (0x3000, 0x303F),   # CJK Symbols and Punctuation
    (0xFF00, 0xFFEF),   # Halfwidth and Fullwidth Forms
]

# What counts as CJK when scanning the repository: a character in these ranges that
# the source font lacks stops the build.
CJK_RANGES = [
    (0x2E80, 0x2FDF),   # CJK radicals, Kangxi radicals
    (0x3000, 0x303F),   # CJK symbols and punctuation
    (0x3400, 0x4DBF),   # CJK Unified Ideographs Extension A
    (0x4E00, 0x9FFF),   # CJK Unified Ideographs
    (0xF900, 0xFAFF),   # CJK Compatibility Ideographs
    (0xFE30, 0xFE4F),   # CJK Compatibility Forms
    (0xFF00, 0xFFEF),   # Halfwidth and Fullwidth Forms
    (0x20000, 0x3134F),  # Extensions B-G
]

IDEOGRAPH_RANGES = [(0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x3134F)]

SCAN_DIRS = ("src", "resources", "params")
SKIP_DIRS = {"__pycache__", ".git", ".pytest_cache", ".hypothesis"}

# Layout features kept. Not `locl`: it would pull in the Japanese, Korean and
# Traditional glyph variants of every kept character; the SC face's default glyphs
# are already the Simplified Chinese forms. No vertical-writing features either: the
# app writes horizontally, and the vertical tables are dropped below.
LAYOUT_FEATURES = [
    "ccmp", "liga", "calt", "clig", "rlig", "mark", "mkmk", "kern", "palt", "halt",
    "fwid", "hwid", "pwid",
]

# name IDs kept: 0 copyright, 1-6 names and version, 7 trademark, 8-12 credits,
# 13-14 licence. The family and PostScript names are rewritten below.
NAME_IDS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]


def in_ranges(cp: int, ranges) -> bool:
    return any(lo <= cp <= hi for lo, hi in ranges)


def gb2312_level1() -> list[str]:
    """The 3,755 level-1 hanzi of GB2312: rows 16-55, bytes 0xB0-0xD7 x 0xA1-0xFE."""
    chars = []
    for hi in range(0xB0, 0xD8):
        for lo in range(0xA1, 0xFF):
            try:
                ch = bytes((hi, lo)).decode("gb2312")
            except UnicodeDecodeError:   # row 55 ends at 0xF9
                continue
            chars.append(ch)
    assert len(chars) == 3755, len(chars)
    return chars


def repo_text_files(repo: Path):
    fonts_dir = (repo / "resources" / "fonts").resolve()
    for top in SCAN_DIRS:
        base = repo / top
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if not path.is_file() or SKIP_DIRS.intersection(path.parts):
                continue
            if path.resolve().is_relative_to(fonts_dir):
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue   # binary file: no strings to cover
            yield path, text


def scanned_chars(repo: Path) -> dict[str, Path]:
    """Every non-ASCII printable character in the repository's text files -> first file."""
    found: dict[str, Path] = {}
    for path, text in repo_text_files(repo):
        for ch in text:
            if ord(ch) < 0x80 or ch in found:
                continue
            if unicodedata.category(ch)[0] in "CZ" and ch != "\u3000":
                continue   # controls, format characters, separators
            found[ch] = path
    return found


def open_face(source: Path, face: str) -> TTFont:
    """The face named `face` from a .ttc, or the font in a single-face file."""
    if source.suffix.lower() in (".ttc", ".otc"):
        collection = TTCollection(str(source), recalcTimestamp=False)
        for font in collection.fonts:
            if font["name"].getDebugName(1) == face:
                return font
        names = [f["name"].getDebugName(1) for f in collection.fonts]
        raise SystemExit(f"{source}: no face {face!r}; it has {names}")
    return TTFont(str(source), recalcTimestamp=False)


def style_of(font: TTFont) -> str:
    return "Bold" if font["OS/2"].usWeightClass >= 600 else "Regular"


def rename(font: TTFont, style: str, source_desc: str) -> None:
    """Give the subset its own family name (the OFL forbids a modified font the RFN)."""
    name = font["name"]
    ps_name = f"{PS_FAMILY}-{style}"
    version = name.getDebugName(5) or "Version ?"
    src_ps = name.getDebugName(6) or "?"
    name.names = [r for r in name.names if r.nameID not in (1, 2, 3, 4, 6, 10, 16, 17, 18, 21, 22)]
    for name_id, value in [
        (1, FAMILY),
        (2, style),
        (3, f"{ps_name};{version.split(';')[0].replace('Version ', '')};subset"),
        (4, f"{FAMILY} {style}" if style != "Regular" else FAMILY),
        (6, ps_name),
        (10, f"Subset of {src_ps} ({version.split(';')[0]}, {source_desc}) made by "
             "tools/make_font_subset.py for Token Explorer. Licensed under the "
             "SIL Open Font License 1.1."),
    ]:
        name.setName(value, name_id, 3, 1, 0x409)
    name.names.sort(key=lambda r: (r.platformID, r.platEncID, r.langID, r.nameID))

    if "CFF " in font:
        cff = font["CFF "].cff
        old_ps = cff.fontNames[0]
        cff.fontNames = [ps_name]
        top = cff.topDictIndex[0]
        top.FullName = f"{FAMILY} {style}"
        top.FamilyName = FAMILY
        if hasattr(top, "FDArray"):
            for fd in top.FDArray:
                if getattr(fd, "FontName", "").startswith(old_ps):
                    fd.FontName = ps_name + fd.FontName[len(old_ps):]
    if "post" in font:
        font["post"].formatType = 3.0   # no glyph names needed; CFF carries its own


def build(source: Path, out_dir: Path, codepoints: set[int], face: str, source_desc: str) -> Path:
    font = open_face(source, face)
    cmap = font.getBestCmap()
    style = style_of(font)

    options = subset.Options()
    options.layout_features = list(LAYOUT_FEATURES)
    options.name_IDs = list(NAME_IDS)
    options.name_languages = [0x0409]
    options.name_legacy = False
    options.notdef_outline = True
    options.hinting = True
    options.desubroutinize = False
    options.recalc_timestamp = False
    options.drop_tables = options.drop_tables + ["BASE", "VORG", "vhea", "vmtx"]

    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(cp for cp in codepoints if cp in cmap))
    subsetter.subset(font)
    rename(font, style, source_desc)

    out = out_dir / f"{FILE_STEM}-{style}.otf"
    tmp = out.with_suffix(".otf.tmp")
    font.recalcTimestamp = False
    font.save(str(tmp), reorderTables=True)
    tmp.replace(out)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", nargs="+", type=Path,
                        help="NotoSansCJK-Regular.ttc (and -Bold.ttc) from Debian's fonts-noto-cjk")
    parser.add_argument("--face", default=SOURCE_FACE, help=f"face to take from a .ttc (default {SOURCE_FACE!r})")
    parser.add_argument("--out-dir", type=Path, default=REPO / "resources" / "fonts")
    parser.add_argument("--repo", type=Path, default=REPO, help="repository whose text is scanned")
    parser.add_argument("--source-desc", default="Debian fonts-noto-cjk 1:20220127+repack1-1",
                        help="where the source came from, recorded in the font's name table")
    args = parser.parse_args(argv)

    fixed = {cp for lo, hi in BLOCKS for cp in range(lo, hi + 1)}
    hanzi = {ord(ch) for ch in gb2312_level1()}
    scanned = scanned_chars(args.repo)

    args.out_dir.mkdir(parents=True, exist_ok=True)
    for source in args.sources:
        cmap = open_face(source, args.face).getBestCmap()
        missing_cjk = sorted(ch for ch in scanned if in_ranges(ord(ch), CJK_RANGES) and ord(ch) not in cmap)
        if missing_cjk:
            lines = [f"  U+{ord(ch):04X} {ch} (in {scanned[ch].relative_to(args.repo)})" for ch in missing_cjk]
            print(f"{source}: the app uses CJK characters the font does not have:\n" + "\n".join(lines),
                  file=sys.stderr)
            return 1
        other_missing = sorted(ch for ch in scanned if ord(ch) not in cmap)
        if other_missing:
            print(f"note: not in {source.name} (a Latin system font must draw them): "
                  + " ".join(f"U+{ord(c):04X}" for c in other_missing))

        wanted = fixed | hanzi | {ord(ch) for ch in scanned}
        out = build(source, args.out_dir, wanted, args.face, args.source_desc)
        font = TTFont(str(out))
        n_cmap = len(font.getBestCmap())
        n_han = sum(1 for cp in font.getBestCmap() if in_ranges(cp, IDEOGRAPH_RANGES))
        digest = hashlib.sha256(out.read_bytes()).hexdigest()[:16]
        extra = sorted(ch for ch in scanned if ord(ch) not in fixed | hanzi and ord(ch) in cmap)
        print(f"wrote {out.relative_to(args.repo) if out.is_relative_to(args.repo) else out}: "
              f"{out.stat().st_size:,} bytes, {font['maxp'].numGlyphs} glyphs, "
              f"{n_cmap} characters ({n_han} ideographs; "
              f"{len(extra)} from the repository beyond the fixed sets: {''.join(extra)}), sha256 {digest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
