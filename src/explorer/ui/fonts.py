"""The shipped CJK font ("Token Explorer CJK", a Noto Sans CJK SC subset): registered at
start-up as the fallback for Chinese; a missing font file is an error, never tofu."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QFont, QFontDatabase, QFontInfo, QGuiApplication

from explorer.resources import resources_dir

CJK_FAMILY = "Token Explorer CJK"
MIN_POINT_SIZE = 11.0          # the smallest type a panel draws: readable from the back of a classroom
FONT_SUFFIXES = (".ttf", ".otf")

# path of each font file Qt has loaded -> its application font id
_loaded: dict[Path, int] = {}


class FontError(RuntimeError):
    """A shipped font is missing or Qt cannot load it: Chinese would draw as boxes."""


def fonts_dir() -> Path:
    return resources_dir() / "fonts"


def _still_loaded(font_id: int) -> bool:
    return bool(QFontDatabase.applicationFontFamilies(font_id))


def load_font_files(folder: Path) -> list[str]:
    """Load every .ttf/.otf in `folder` once; return the families they hold, sorted.

    Raises FontError naming the folder or the file when something is missing or unreadable.
    """
    if QGuiApplication.instance() is None:
        raise FontError("fonts can be registered only after the QApplication is created")
    if not folder.is_dir():
        raise FontError(f"the font folder {folder} is missing: Chinese text cannot be drawn")
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in FONT_SUFFIXES)
    if not files:
        raise FontError(f"no .ttf or .otf font in {folder}: Chinese text cannot be drawn")

    families: set[str] = set()
    for path in files:
        key = path.resolve()
        font_id = _loaded.get(key)
        if font_id is None or not _still_loaded(font_id):
            font_id = QFontDatabase.addApplicationFont(str(path))
            if font_id < 0:
                raise FontError(f"Qt could not load the font file {path} (missing, unreadable or not a font)")
            _loaded[key] = font_id
        families.update(QFontDatabase.applicationFontFamilies(font_id))
    return sorted(families)


def register_fonts() -> str:
    """Register the shipped fonts with Qt (once) and return the CJK family name.

    Safe to call any number of times: a file already registered is not added again.
    Call after the QApplication exists.
    """
    folder = fonts_dir()
    families = load_font_files(folder)
    if CJK_FAMILY not in families:
        raise FontError(f"the fonts in {folder} hold {families}, not the family {CJK_FAMILY!r}")
    return CJK_FAMILY


def latin_family() -> str:
    """The platform's UI font (Segoe UI, San Francisco, DejaVu Sans, ...), for Latin text.

    Resolved to a real family: a generic alias such as "Sans Serif" (what the offscreen
    platform reports) is skipped in a family list, which would leave Latin text to the
    CJK font.
    """
    system = QFontDatabase.systemFont(QFontDatabase.SystemFont.GeneralFont)
    return QFontInfo(system).family() or system.family()


def app_font(point_size: float | None = None, base: QFont | None = None) -> QFont:
    """A font whose family list is [platform Latin face, shipped CJK face].

    Qt picks each character's glyph from the first family in the list that has it, so
    English keeps the platform's Latin face and Chinese falls back to ours.
    """
    cjk = register_fonts()
    font = QFont(base) if base is not None else QFont()
    latin = latin_family()
    font.setFamilies([latin, cjk] if latin and latin != cjk else [cjk])
    if point_size is not None:
        font.setPointSizeF(float(point_size))
    return font


def apply_app_font(app: QGuiApplication, point_size: float | None = None) -> QFont:
    """Register the shipped fonts and make [Latin, CJK] the application's default font.

    `point_size` None keeps the application's current size. Returns the font set.
    """
    font = app_font(point_size, base=app.font())
    app.setFont(font)
    return font


def readable_font(font: QFont) -> QFont:
    """`font` at least MIN_POINT_SIZE points; larger sizes (presentation mode) are kept."""
    out = QFont(font)
    if out.pointSizeF() < MIN_POINT_SIZE:
        out.setPointSizeF(MIN_POINT_SIZE)
    return out
