"""The shipped CJK font: registered once, covers the app's Chinese, and really draws it.

This machine (like CI) has no CJK font of its own, so every check here fails with boxes
if the shipped subset is missing a character or is not registered.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint
from PySide6.QtGui import QColor, QFont, QFontDatabase, QFontInfo, QFontMetrics, QImage, QPainter, QRawFont

import explorer.i18n
from explorer.ui import fonts
from explorer.ui.fonts import CJK_FAMILY, FontError, apply_app_font, register_fonts
from paths import REPO

SAMPLE = "我爱学习你！结束原因缓存可见预填充解码温度采样"
CJK_CHAR = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")
NOT_IN_FONT = "\U0010FFFD"   # a private-use code point no font ships


def i18n_cjk_chars() -> list[str]:
    text = Path(explorer.i18n.__file__).read_text(encoding="utf-8")
    return sorted(set(CJK_CHAR.findall(text)))


def repo_cjk_chars() -> dict[str, Path]:
    """Every CJK character in the text files the font script scans -> a file using it."""
    repo = REPO
    found: dict[str, Path] = {}
    for top in ("src", "resources", "params"):
        for path in sorted((repo / top).rglob("*")):
            if not path.is_file() or "fonts" in path.relative_to(repo).parts or "__pycache__" in path.parts:
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            for ch in CJK_CHAR.findall(text):
                found.setdefault(ch, path.relative_to(repo))
    return found


def render(font: QFont, text: str, size=(240, 80)) -> QImage:
    image = QImage(size[0], size[1], QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    painter.setFont(font)
    painter.setPen(QColor("black"))
    painter.drawText(QPoint(8, size[1] - 20), text)
    painter.end()
    return image


def ink(image: QImage) -> int:
    """How many pixels are not the white background."""
    white = QColor("white").rgb()
    return sum(1 for y in range(image.height()) for x in range(image.width()) if image.pixel(x, y) != white)


@pytest.fixture
def family(qapp) -> str:
    return register_fonts()


def test_register_returns_the_cjk_family(family):
    assert family == CJK_FAMILY
    assert family in QFontDatabase.families()
    assert set(QFontDatabase.styles(family)) >= {"Regular", "Bold"}
    # The family resolves to the shipped file itself, not to a substitute.
    assert QFontInfo(QFont(family)).family() == family


def test_register_twice_is_harmless(family):
    loaded = dict(fonts._loaded)
    assert register_fonts() == family
    assert register_fonts() == family
    assert fonts._loaded == loaded
    assert QFontDatabase.families().count(family) == 1
    for font_id in loaded.values():
        assert QFontDatabase.applicationFontFamilies(font_id) == [family]


def test_i18n_has_chinese_to_check():
    assert len(i18n_cjk_chars()) > 50


@pytest.mark.parametrize("bold", [False, True], ids=["regular", "bold"])
def test_font_covers_sample_and_every_i18n_character(family, bold):
    font = QFont(family)
    font.setBold(bold)
    metrics = QFontMetrics(font)
    raw = QRawFont.fromFont(font)   # the shipped file itself, no fallback fonts
    assert raw.isValid() and raw.familyName() == family
    chars = sorted(set(SAMPLE) | set(i18n_cjk_chars()))
    missing = [c for c in chars if not metrics.inFontUcs4(ord(c))]
    assert not missing, f"{family} lacks {''.join(missing)}"
    missing_raw = [c for c in chars if not raw.supportsCharacter(ord(c))]
    assert not missing_raw, f"{family} file lacks {''.join(missing_raw)}"
    assert not raw.supportsCharacter(ord(NOT_IN_FONT))


def test_font_covers_every_cjk_character_in_the_repository(family):
    """A new Chinese string needs `python tools/make_font_subset.py ...` re-run (see
    resources/fonts/README.md) if it uses a hanzi outside GB2312 level 1."""
    raw = QRawFont.fromFont(QFont(family))
    missing = {ch: path for ch, path in repo_cjk_chars().items() if not raw.supportsCharacter(ord(ch))}
    assert not missing, "re-run tools/make_font_subset.py; the shipped font lacks " + ", ".join(
        f"{ch} (U+{ord(ch):04X}, {path})" for ch, path in sorted(missing.items()))


def test_chinese_draws_glyphs_not_boxes(family):
    font = QFont(family)
    font.setPixelSize(40)
    notdef = render(font, NOT_IN_FONT)   # the missing-glyph box (.notdef)
    glyph_ids = QRawFont.fromFont(font).glyphIndexesForString("我爱学习")
    assert all(g != 0 for g in glyph_ids), glyph_ids    # glyph 0 is .notdef
    images = [render(font, ch) for ch in "我爱学习"]
    for ch, image in zip("我爱学习", images):
        assert ink(image) > 50, f"{ch} drew nothing"
        assert image != notdef, f"{ch} drew the same as the missing-glyph box"
    assert len({image.bits().tobytes() for image in images}) == 4   # four different glyphs
    assert ink(render(font, "我爱学习", size=(260, 80))) > ink(images[0])


def test_apply_app_font_puts_latin_first_and_cjk_as_fallback(qapp):
    before = QFont(qapp.font())
    try:
        font = apply_app_font(qapp, 24)
        assert qapp.font().families() == font.families()
        assert font.families()[-1] == CJK_FAMILY
        assert font.pointSizeF() == 24
        if len(font.families()) == 2:
            latin = font.families()[0]
            assert latin != CJK_FAMILY
            assert QFontInfo(font).family() == latin   # Latin text keeps the Latin face
        metrics = QFontMetrics(qapp.font())
        assert all(metrics.inFontUcs4(ord(c)) for c in SAMPLE + "Token Explorer")
        image = render(qapp.font(), "Prefill 预填充", size=(400, 80))
        assert ink(image) > 100
        # Point size None keeps the current size.
        assert apply_app_font(qapp).pointSizeF() == 24
    finally:
        qapp.setFont(before)


def test_missing_font_folder_is_a_clear_error(qapp, tmp_path):
    with pytest.raises(FontError, match=re.escape(str(tmp_path / "nope"))):
        fonts.load_font_files(tmp_path / "nope")
    with pytest.raises(FontError, match="no .ttf or .otf"):
        fonts.load_font_files(tmp_path)


def test_unreadable_font_file_is_named(qapp, tmp_path):
    bad = tmp_path / "Broken-Regular.ttf"
    bad.write_bytes(b"not a font at all")
    with pytest.raises(FontError, match="Broken-Regular.ttf"):
        fonts.load_font_files(tmp_path)


def test_register_names_the_folder_when_fonts_are_missing(qapp, tmp_path, monkeypatch):
    monkeypatch.setattr(fonts, "fonts_dir", lambda: tmp_path / "fonts")
    with pytest.raises(FontError, match="font folder"):
        register_fonts()
