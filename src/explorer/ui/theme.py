"""Colours and type sizes. Colour-blind-safe (Okabe–Ito) by default, a high-contrast
option, and every colour always comes with a text label in the panels."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QColor


@dataclass(frozen=True)
class Theme:
    name: str
    background: str
    text: str
    grid: str
    processed: str     # token in the KV cache
    selected: str      # chosen, not yet processed
    pending: str       # known input, not yet processed
    removed: str       # candidate removed by a sampling stage
    kept: str          # candidate still in the running
    chosen: str        # the selected candidate's bar
    masked: str        # causally masked attention cell
    accent: str        # rulers, markers

    def color(self, role: str) -> QColor:
        return QColor(getattr(self, role))


THEMES = {
    "light": Theme("light", background="#ffffff", text="#1a1a1a", grid="#d0d0d0",
                   processed="#0072B2", selected="#E69F00", pending="#d9d9d9",
                   removed="#c8c8c8", kept="#56B4E9", chosen="#D55E00",
                   masked="#f0f0f0", accent="#009E73"),
    "high-contrast": Theme("high-contrast", background="#000000", text="#ffffff", grid="#808080",
                           processed="#00A0FF", selected="#FFD700", pending="#5a5a5a",
                           removed="#404040", kept="#7FDBFF", chosen="#FF6A00",
                           masked="#1e1e1e", accent="#00FF9C"),
}


def text_on(background: str) -> str:
    """Black or white, whichever reads better on `background` (WCAG relative luminance)."""
    c = QColor(background)

    def channel(v):
        v /= 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    lum = 0.2126 * channel(c.red()) + 0.7152 * channel(c.green()) + 0.0722 * channel(c.blue())
    return "#000000" if lum > 0.179 else "#ffffff"
