"""Render the application icon's PNG sizes from its drawing.

    QT_QPA_PLATFORM=offscreen PYTHONPATH=src python tools/make_icons.py

Reads `resources/icons/token-explorer.svg` and writes `resources/icons/token-explorer-N.png`
for every N in `explorer.desktop.icons.PNG_SIZES`, drawn by Qt's own SVG renderer (QSvgRenderer)
with antialiasing onto a transparent square. Re-run it after changing the drawing and
commit the PNGs; the Windows .ico and macOS .icns are packed from them when a launcher is
installed (`token-explorer --install-launcher`).
"""

from __future__ import annotations

import sys

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

from explorer.desktop.icons import PNG_SIZES, png_path, svg_path


def render(renderer: QSvgRenderer, size: int) -> QImage:
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
    renderer.render(painter, QRectF(0, 0, size, size))
    painter.end()
    return image


def main() -> int:
    _app = QGuiApplication(sys.argv[:1])
    renderer = QSvgRenderer(str(svg_path()))
    if not renderer.isValid():
        print(f"{svg_path()}: Qt cannot read this SVG", file=sys.stderr)
        return 1
    for size in PNG_SIZES:
        path = png_path(size)
        if not render(renderer, size).save(str(path), "PNG"):
            print(f"{path}: could not write", file=sys.stderr)
            return 1
        print(f"{path} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
