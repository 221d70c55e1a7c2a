"""The application icon as Qt wants it: one QIcon holding every shipped PNG size."""

from __future__ import annotations

from PySide6.QtGui import QIcon

from ..desktop.icons import PNG_SIZES, png_path


def app_icon() -> QIcon:
    """Token Explorer's icon (window, task bar, dialogs); Qt picks the size nearest each use."""
    icon = QIcon()
    for size in PNG_SIZES:
        icon.addFile(str(png_path(size)))
    return icon
