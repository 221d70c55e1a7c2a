"""Colours and type sizes. Colour-blind-safe (Okabe–Ito) by default, a high-contrast
option, and every colour always comes with a text label in the panels."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QPainter, QPalette, QPen
from PySide6.QtWidgets import QApplication, QProxyStyle, QStyle


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
    muted: str         # secondary text (hints such as "0 = off"), still readable on `background`
    error: str         # a problem's text on `background`

    def color(self, role: str) -> QColor:
        return QColor(getattr(self, role))


THEMES = {
    "light": Theme("light", background="#ffffff", text="#1a1a1a", grid="#d0d0d0",
                   processed="#0072B2", selected="#E69F00", pending="#d9d9d9",
                   removed="#c8c8c8", kept="#56B4E9", chosen="#D55E00",
                   masked="#f0f0f0", accent="#009E73",
                   muted="#595959", error="#C00000"),
    "high-contrast": Theme("high-contrast", background="#000000", text="#ffffff", grid="#808080",
                           processed="#00A0FF", selected="#FFD700", pending="#5a5a5a",
                           removed="#404040", kept="#7FDBFF", chosen="#FF6A00",
                           masked="#1e1e1e", accent="#00FF9C",
                           muted="#c8c8c8", error="#FF7070"),
}


def tint_text(widget, colour: str | QColor) -> None:
    """`widget`'s text in `colour`, by palette, not style sheet (a styled widget keeps the font
    it was built with and stops following zoom). Both text roles: a label in a tool bar
    paints with ButtonText."""
    palette = QPalette()
    for role in (QPalette.ColorRole.WindowText, QPalette.ColorRole.ButtonText):
        palette.setColor(role, QColor(colour))
    widget.setPalette(palette)


def text_on(background: str) -> str:
    """Black or white, whichever reads better on `background` (WCAG relative luminance)."""
    c = QColor(background)

    def channel(v):
        v /= 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    lum = 0.2126 * channel(c.red()) + 0.7152 * channel(c.green()) + 0.0722 * channel(c.blue())
    return "#000000" if lum > 0.179 else "#ffffff"


FRAME_ROLE = QPalette.ColorRole.Dark      # the colour `FramedStyle` draws the frames of fields in
_FRAMED_PRIMITIVES = {QStyle.PrimitiveElement.PE_FrameLineEdit: 2.0,       # element -> corner radius
                      QStyle.PrimitiveElement.PE_IndicatorCheckBox: 0.0}
_FRAMED_CONTROLS = (QStyle.ComplexControl.CC_SpinBox, QStyle.ComplexControl.CC_ComboBox)


class FramedStyle(QProxyStyle):
    """The platform's style, with the frames of line edits, spin boxes, combo boxes and check
    boxes drawn again in the palette's FRAME_ROLE colour. Fusion draws them in the window
    colour made darker, which on black is black: in high contrast the fields vanished. A
    focused field keeps the style's own (highlighted) frame."""

    def drawPrimitive(self, element, option, painter, widget=None) -> None:
        super().drawPrimitive(element, option, painter, widget)
        if element in _FRAMED_PRIMITIVES:
            _frame(painter, option, _FRAMED_PRIMITIVES[element])

    def drawComplexControl(self, control, option, painter, widget=None) -> None:
        super().drawComplexControl(control, option, painter, widget)
        if control in _FRAMED_CONTROLS and getattr(option, "frame", True):
            _frame(painter, option, 2.0)


def _frame(painter: QPainter, option, radius: float) -> None:
    if option.state & QStyle.StateFlag.State_HasFocus:
        return
    painter.save()
    painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    painter.setPen(QPen(option.palette.color(FRAME_ROLE), 1.0))
    painter.setBrush(QColor(0, 0, 0, 0))
    painter.drawRoundedRect(QRectF(option.rect).adjusted(0.5, 0.5, -0.5, -0.5), radius, radius)
    painter.restore()


_platform_style: list[str] = []             # the application's style's name before a theme first changed it
_in_use: list[QStyle] = []                  # the FramedStyle the application uses (kept from Python's collector)


def framed_style_in_use() -> bool:
    return isinstance(QApplication.style(), FramedStyle)


def use_framed_style(framed: bool) -> None:
    """The application's style: the platform's, with the fields' frames drawn (`FramedStyle`) or not."""
    if not _platform_style:
        _platform_style.append(QApplication.style().name())
    if framed_style_in_use() != framed:          # a new style repolishes every widget
        # by name: Qt makes (and alone deletes) the platform style, also the one the proxy wraps;
        # a style made here and handed over would be deleted twice, by its proxy and by Python
        if framed:
            _in_use[:] = [FramedStyle(_platform_style[0])]
            QApplication.setStyle(_in_use[0])
        else:
            QApplication.setStyle(_platform_style[0])
            _in_use.clear()


def apply_widget_theme(theme: Theme) -> None:
    """The application's style and palette in `theme` (every widget, floating docks and
    dialogs too): the platform's own for "light"; for "high-contrast" the theme's colours
    and the platform's style with the fields' frames drawn visible (`FramedStyle`)."""
    use_framed_style(theme.name != "light")
    palette = widget_palette(theme)
    if palette != QApplication.palette():          # a new palette does too
        QApplication.setPalette(palette)


_platform_palette: list[QPalette] = []      # the application's palette before a theme first changed it


def widget_palette(theme: Theme) -> QPalette:
    """The colours of every widget (labels, buttons, boxes, menus, tooltips) in `theme`: the
    platform's own palette for "light", the theme's colours for "high-contrast", so the
    whole window, not only the painted panels, turns white on black."""
    if not _platform_palette:
        _platform_palette.append(QPalette(QApplication.palette()))
    if theme.name == "light":
        return QPalette(_platform_palette[0])
    r, palette = QPalette.ColorRole, QPalette()
    background, text, raised = QColor(theme.background), QColor(theme.text), QColor(theme.masked)
    for role, color in ((r.Window, background), (r.Base, background), (r.AlternateBase, raised),
                        (r.Button, raised), (r.ToolTipBase, background),
                        (r.WindowText, text), (r.Text, text), (r.ButtonText, text), (r.ToolTipText, text),
                        (r.BrightText, text), (r.PlaceholderText, QColor(theme.muted)),
                        (r.Highlight, QColor(theme.selected)), (r.HighlightedText, QColor(text_on(theme.selected))),
                        (r.Link, QColor(theme.kept)), (r.LinkVisited, QColor(theme.kept)),
                        (r.Light, QColor(theme.grid)), (r.Midlight, QColor(theme.pending)),
                        (r.Mid, QColor(theme.pending)), (FRAME_ROLE, QColor(theme.grid)), (r.Shadow, text)):
        palette.setColor(role, color)
    for role in (r.WindowText, r.Text, r.ButtonText):      # greyed, still readable on black
        palette.setColor(QPalette.ColorGroup.Disabled, role, QColor(theme.muted).darker(125))
    return palette
