"""What an export should produce, parsed and checked before any Qt is loaded."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..core.errors import ExplorerError, SettingError
from ..core.limits import Whole, shown_text

FORMATS = ("png", "pdf", "svg", "pptx", "csv", "json", "html")   # html: the student page (export.student_page)
SLIDE_FORMATS = ("png", "pdf", "svg", "pptx", "html")            # a slide per frame (a student page too)
THEMES = ("light", "high-contrast")
STYLES = ("slide", "window")   # a slide composed for a projector | the whole window, as on the desk
MAX_SIDE = 8192            # pixels of one side of a slide, scale included
# The shapes the slide layout handles (measured over the lessons: every panel drawn at least at
# the composer's smallest drawing, 0.6 of its least size). Type scales with the height: below
# 480 the distribution chart and the cache grid get 0.5 of what they need (at 640x360, 0.3 at
# 426x240); narrower than 6:5 the timeline does (0.55 at 1080x1080, 0.3 at 540x1080). Wider
# slides lay out well (up to 17:1 at 8192x480); a deck has its own bound (`pptx_deck`).
MIN_HEIGHT = 480
MIN_RATIO = 1.2            # width / height, at least
CANCELLED = "export cancelled, nothing was written"
HANDOUT_TOP = 20           # candidates per step in the CSV and JSON handouts


class ExportCancelled(ExplorerError):
    """The teacher (or Ctrl+C) cancelled; nothing was written."""


@dataclass(frozen=True)
class ExportSpec:
    out_dir: Path
    formats: tuple[str, ...] = ("png", "pdf")   # a picture per frame and the deck
    width: int = 1920                            # a 16:9 slide
    height: int = 1080
    scale: int = 1                               # 2 for high-DPI projectors
    lang: str = "en"
    theme: str = "light"
    frames: tuple[int, ...] | None = None        # 0-based frame indexes; None = every frame
    panel: str | None = None                     # one panel filling the slide's body
    style: str = "slide"                         # see STYLES
    caption: bool = True                         # lesson title, frame title, counter, one line
    intermediates: bool = False                  # every value of every forward in the JSON
    top: int = HANDOUT_TOP                       # candidates per step in the handouts


def parse_formats(text: str) -> tuple[str, ...]:
    items = tuple(dict.fromkeys(t.strip().lower() for t in text.split(",") if t.strip()))
    bad = [f for f in items if f not in FORMATS]
    if bad or not items:
        raise ExplorerError(f"--format {text!r}: unknown format {bad[0]!r}; expected a comma list of "
                            f"{', '.join(FORMATS)}" if bad else f"--format {text!r}: expected at least one format")
    return items


def size_range(scale: int = 1) -> str:
    """The slide sizes --size takes, in words."""
    top = MAX_SIDE // scale
    return (f"WIDTHxHEIGHT with HEIGHT from {MIN_HEIGHT} to {int(top / MIN_RATIO)} and WIDTH from {MIN_RATIO:g} x HEIGHT "
            f"to {top}" + (f" (at --scale {scale}: {MAX_SIDE} pixels on a side at most, the scale included)"
                           if scale > 1 else "") + ", e.g. 1920x1080")


def parse_size(text: str, scale: int = 1) -> tuple[int, int]:
    """'1920x1080' -> (1920, 1080): a shape the layout handles (MIN_HEIGHT, MIN_RATIO), each
    side times `scale` at most MAX_SIDE pixels; otherwise an ExplorerError stating the range."""
    width_text, sep, height_text = text.strip().lower().replace("×", "x").partition("x")
    expected = size_range(scale)
    if not sep:
        raise ExplorerError(f"--size {shown_text(text)}: expected {expected}")
    side = Whole(1, MAX_SIDE)
    try:
        width, height = side.parse(width_text, "WIDTH"), side.parse(height_text, "HEIGHT")
    except SettingError as exc:
        raise ExplorerError(f"--size {shown_text(text)}: {exc} (--size takes {expected})") from None
    if max(width, height) * scale > MAX_SIDE:
        raise ExplorerError(f"--size {text.strip()} with --scale {scale}: the picture would be {width * scale}x"
                            f"{height * scale} pixels; at most {MAX_SIDE} on a side, the scale included "
                            f"(at --scale {scale}, up to {MAX_SIDE // scale} on a side)")
    if height < MIN_HEIGHT:
        raise ExplorerError(f"--size {text.strip()}: {height} pixels high is too low for the slide layout (its type "
                            f"scales with the height; the charts no longer fit); expected {expected}")
    if width < MIN_RATIO * height:
        raise ExplorerError(f"--size {text.strip()}: too narrow for the slide layout ({width / height:.2f} times as wide "
                            f"as high; the timeline no longer fits); expected {expected}")
    return width, height


def deck_slides(session, indexes) -> list[tuple[int, bool]]:
    """(frame index, asking) of every slide: a question frame is two slides, the question
    (its panels hidden) and then the answer, as Next steps through them in the window."""
    return [(i, asking) for i in indexes for asking in ((True, False) if session.frames[i].ask else (False,))]


def planned_slides(plans) -> int:
    """How many slides `deck_slides` makes of a lesson's every frame, from its frame plans (a
    question frame is two), before any run is computed."""
    return sum(2 if plan.extras.get("ask") else 1 for plan in plans)


def frame_ranges(indexes) -> str:
    """0-based frame indexes as the player counts them, in ranges: (0, 1, 2, 3, 6) -> '1-4,7'."""
    out, run = [], []
    for i in sorted(set(indexes)):
        if run and i != run[-1] + 1:
            out.append(run)
            run = []
        run.append(i)
    out += [run] if run else []
    return ",".join(f"{r[0] + 1}" if len(r) == 1 else f"{r[0] + 1}-{r[-1] + 1}" for r in out)


def parse_frames(text: str, count: int) -> tuple[int, ...]:
    """'1-4,7' (1-based, as the player counts) -> 0-based indexes, checked against `count`."""
    frame, out = Whole(1, count), []
    expected = f"frame numbers from 1 to {count} or ranges such as 1-4, separated by commas"
    parts = text.split(",")
    for i, part in enumerate(parts, 1):
        item = part.strip()
        dash = item.find("-", 1)                    # a leading minus is a sign: "-1" is a number out of range
        first_text, sep, last_text = (item, "", "") if dash < 0 else (item[:dash], "-", item[dash + 1:])
        try:
            if not item:
                raise SettingError(f"item {i} of {len(parts)} is empty; expected {expected}")
            label = f"item {i}:" if len(parts) > 1 else ""
            first = frame.parse(first_text, label)
            last = frame.parse(last_text, label) if sep else first
        except SettingError as exc:
            raise ExplorerError(f"--frames {shown_text(text)}: {exc} (this lesson has {count} frames)") from None
        if last < first:
            raise ExplorerError(f"--frames {shown_text(text)}: item {i}, {part.strip()!r}, runs backwards; expected "
                                f"FIRST-LAST with FIRST at most LAST, e.g. {last}-{first}")
        out.extend(range(first - 1, last))
    return tuple(dict.fromkeys(out))
