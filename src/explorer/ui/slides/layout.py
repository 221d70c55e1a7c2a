"""Where things go on a slide: the title above, the caption strip below, the body between,
split among one to three panels. Sizes are in slide pixels and scale with the slide's
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
MAX_TIMELINE = 0.42       # of the body's height, for a timeline above other panels
MAX_SHARE = 0.58          # of the body's width, for a table or grid beside a chart (the chart keeps the rest)


@dataclass(frozen=True)
class SlideGeometry:
    width: int
    height: int
    caption: bool         # whether the caption strip is drawn

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
    def caption_strip(self) -> QRectF:
        h = self.px(CAPTION_PX * 4) if self.caption else 0.0
        return QRectF(0, self.height - h, self.width, h)

    @property
    def body(self) -> QRectF:
        m = self.px(MARGIN_PX)
        top = self.title.bottom() + self.px(12)
        bottom = self.caption_strip.top() - self.px(20 if self.caption else MARGIN_PX)
        return QRectF(m, top, self.width - 2 * m, bottom - top)

    def panel_rects(self, panels: tuple[str, ...], wants: dict[str, QSizeF | None],
                    widths_for: dict[str, Callable[[float], float]] | None = None) -> list[QRectF]:
        """One rectangle per panel, in `panels` order. One panel takes the whole body. The
        timeline (a wide, short table) spans the body's width above the others, as tall as
        its content (`wants`: the content's size at the body type) within a quarter and
        MAX_TIMELINE of the body. The others share the width side by side: a panel with a
        fixed content size (a table, the cache grid) gets what it wants, or what its
        `widths_for` asks for its height (the width its wrapped text needs to keep the body
        type there), up to MAX_SHARE of the width; a chart (want None) stretches over the rest."""
        body, gap = self.body, self.px(GAP_PX)
        if len(panels) == 1:
            return [whole_pixels(body)]
        rects: dict[str, QRectF] = {}
        rest = [p for p in panels if p != "timeline"]
        if "timeline" in panels:
            want = wants.get("timeline")
            share = min(MAX_TIMELINE, max(0.25, (want.height() * 1.1 if want else 0) / body.height()))
            rects["timeline"] = QRectF(body.left(), body.top(), body.width(), body.height() * share)
            body = QRectF(body.left(), body.top() + body.height() * share + gap, body.width(),
                          body.height() * (1 - share) - gap)
        room = body.width() - gap * (len(rest) - 1)
        widths_for = widths_for or {}
        fixed = {p: min(MAX_SHARE * room, max(wants[p].width() * 1.1, widths_for[p](body.height()) if p in widths_for
                                              else 0)) for p in rest if wants.get(p) is not None}
        charts = [p for p in rest if p not in fixed]
        if charts:
            widths = {**fixed, **{p: (room - sum(fixed.values())) / len(charts) for p in charts}}
        else:
            total = sum(fixed.values())
            widths = {p: room * w / total for p, w in fixed.items()}
        x = body.left()
        for p in rest:
            rects[p] = QRectF(x, body.top(), widths[p], body.height())
            x += widths[p] + gap
        return [whole_pixels(rects[p]) for p in panels]


def whole_pixels(rect: QRectF) -> QRectF:
    """`rect` with its edges on whole pixels: a panel drawn at its own size fills it exactly
    and lands on the image's pixel grid."""
    left, top = round(rect.left()), round(rect.top())
    return QRectF(left, top, round(rect.right()) - left, round(rect.bottom()) - top)
