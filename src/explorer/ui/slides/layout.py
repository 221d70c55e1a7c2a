"""Where things go on a slide: the title above (and under it, once the model has written
something, the text so far), the caption strip below, the body between, split among one
to three panels, the frame's own panel (the first it names) taking the larger part. Sizes are in slide pixels and scale with the slide's
height (a 1080-high slide is the reference)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QRectF, QSizeF

REFERENCE_HEIGHT = 1080
BODY_PX = 28              # body and cell text at 1080 (labels are drawn at 0.9 of it: >= 22 px)
TITLE_PX = 46             # the frame's title
CAPTION_PX = 28           # the caption strip's two lines
MARGIN_PX = 36
GAP_PX = 28               # between panels
TEXT_LINE_PX = 50         # the text so far, under the title
MAIN_TIMELINE = (0.5, 0.62)   # of the body's height: a timeline above other panels, when the frame is about it
SECOND_TIMELINE = 0.3     # at most, for a timeline above the panel the frame is about (down to its least)
MAX_SHARE = 0.58          # of the body's width, for a table or grid beside a chart (the chart keeps the rest)
SLACK = 1.1               # a table or grid is given this much more than its content's size (rows differ in height)
WIDTH_STEP = 8            # px: how finely a panel's least width is searched


@dataclass(frozen=True)
class SlideGeometry:
    width: int
    height: int
    caption: bool         # whether the caption strip is drawn
    text_line: bool = False   # whether the text so far is drawn under the title

    @property
    def unit(self) -> float:
        """Slide pixels per reference pixel: type and spacing scale with the slide."""
        return self.height / REFERENCE_HEIGHT

    def px(self, reference: float) -> float:
        return reference * self.unit

    @property
    def title(self) -> QRectF:
        m = self.px(MARGIN_PX)
        return QRectF(m, self.px(18), self.width - 2 * m, self.px(TITLE_PX * 1.5))

    @property
    def text_line_rect(self) -> QRectF:
        """Under the title: the text so far (empty when not drawn)."""
        m = self.px(MARGIN_PX)
        return QRectF(m, self.title.bottom(), self.width - 2 * m, self.px(TEXT_LINE_PX) if self.text_line else 0.0)

    @property
    def caption_strip(self) -> QRectF:
        h = self.px(CAPTION_PX * 4) if self.caption else 0.0
        return QRectF(0, self.height - h, self.width, h)

    @property
    def body(self) -> QRectF:
        m = self.px(MARGIN_PX)
        top = self.text_line_rect.bottom() + self.px(12)
        bottom = self.caption_strip.top() - self.px(20 if self.caption else MARGIN_PX)
        return QRectF(m, top, self.width - 2 * m, bottom - top)

    def panel_rects(self, panels: tuple[str, ...], wants: dict[str, QSizeF | None],
                    least: dict[str, Callable[[float], float]] | None = None) -> list[QRectF]:
        """One rectangle per panel, in `panels` order. One panel takes the whole body. The
        timeline (a wide, short table) spans the body's width above the others, as tall as
        its content (`wants`: the content's size at the body type): within MAIN_TIMELINE of
        the body when it comes first (the frame is about it), else at most SECOND_TIMELINE
        (or its least, `least`, when that is more). The others share the width side by side: a panel with a
        fixed content size (a table, the cache grid) gets what it wants, up to MAX_SHARE of
        the width; a chart (want None) stretches over the rest.
        `least`: a panel's least height at a width, eliding all it can, at the body type.
        Before a panel would be drawn smaller than the body type, a grid beside a chart
        is made wider (its status line and legend wrap to fewer lines), up to MAX_SHARE,
        and the timeline gives up height, down to its own least, to the panels below it."""
        body, gap = self.body, self.px(GAP_PX)
        if len(panels) == 1:
            return [whole_pixels(body)]
        least = least or {}
        rest = [p for p in panels if p != "timeline"]
        top = 0.0                       # the timeline's height
        if "timeline" in panels:
            want = (wants["timeline"].height() * SLACK if wants.get("timeline") else 0) / body.height()
            if panels[0] == "timeline":
                top = body.height() * min(MAIN_TIMELINE[1], max(MAIN_TIMELINE[0], want))
            else:
                fewest = least["timeline"](body.width()) * SLACK / body.height() if "timeline" in least else 0
                top = body.height() * max(fewest, min(SECOND_TIMELINE, want))
            height = body.height() - top - gap
            widths = self._widths(rest, wants, least, height)
            need = max((least[p](widths[p]) for p in rest if p in least), default=0)
            spare = top - least["timeline"](body.width()) * SLACK if "timeline" in least else 0
            if need > height and spare > 0:
                top -= min(need - height, spare)
        height = body.height() - top - (gap if top else 0)
        widths = self._widths(rest, wants, least, height)
        rects = {"timeline": QRectF(body.left(), body.top(), body.width(), top)}
        x = body.left()
        for p in rest:
            rects[p] = QRectF(x, body.bottom() - height, widths[p], height)
            x += widths[p] + gap
        return [whole_pixels(rects[p]) for p in panels]

    def _widths(self, panels: list[str], wants, least, height: float) -> dict[str, float]:
        """The widths of `panels` side by side in the body's width, `height` tall (see `panel_rects`)."""
        room = self.body.width() - self.px(GAP_PX) * (len(panels) - 1)
        fixed = {p: min(MAX_SHARE * room, wants[p].width() * SLACK) for p in panels if wants.get(p) is not None}
        charts = [p for p in panels if p not in fixed]
        if not charts:
            total = sum(fixed.values())
            return {p: room * w / total for p, w in fixed.items()}
        for p in (p for p in fixed if p in least and least[p](fixed[p]) > height):
            fixed[p] = least_width(least[p], height, fixed[p], MAX_SHARE * room)
        return {**fixed, **{p: (room - sum(fixed.values())) / len(charts) for p in charts}}


def least_width(least: Callable[[float], float], height: float, lo: float, hi: float) -> float:
    """The least width in lo..hi at which `least` (height at a width, falling as the width
    grows) is within `height`; `hi` if none is."""
    if least(hi) > height:
        return hi
    while hi - lo > WIDTH_STEP:
        middle = (lo + hi) / 2
        lo, hi = (lo, middle) if least(middle) <= height else (middle, hi)
    return hi


def whole_pixels(rect: QRectF) -> QRectF:
    """`rect` with its edges on whole pixels: a panel drawn at its own size fills it exactly
    and lands on the image's pixel grid."""
    left, top = round(rect.left()), round(rect.top())
    return QRectF(left, top, round(rect.right()) - left, round(rect.bottom()) - top)
