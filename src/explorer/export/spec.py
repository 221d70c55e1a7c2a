"""What an export should produce, parsed and checked before any Qt is loaded."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import ExplorerError

FORMATS = ("png", "pdf", "svg", "pptx", "csv", "json")
THEMES = ("light", "high-contrast")
STYLES = ("slide", "window")   # a slide composed for a projector | the whole window, as on the desk
MAX_SIDE = 8192            # pixels of one side of a slide, scale included
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


def parse_size(text: str, scale: int = 1) -> tuple[int, int]:
    """'1920x1080' -> (1920, 1080); each side times `scale` at most MAX_SIDE pixels."""
    m = re.fullmatch(r"\s*(\d+)\s*[xX×]\s*(\d+)\s*", text)
    if not m or not (320 <= int(m[1]) <= MAX_SIDE and 240 <= int(m[2]) <= MAX_SIDE):
        raise ExplorerError(f"--size {text!r}: expected WIDTHxHEIGHT such as 1920x1080 "
                            f"(320..{MAX_SIDE} by 240..{MAX_SIDE})")
    width, height = int(m[1]), int(m[2])
    if max(width, height) * scale > MAX_SIDE:
        raise ExplorerError(f"--size {text!r} with --scale {scale}: the picture would be {width * scale}x"
                            f"{height * scale} pixels; at most {MAX_SIDE} on a side, the scale included "
                            f"(at --scale {scale}, up to {MAX_SIDE // scale} on a side)")
    return width, height


def parse_frames(text: str, count: int) -> tuple[int, ...]:
    """'1-4,7' (1-based, as the player counts) -> 0-based indexes, checked against `count`."""
    out: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        m = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", part)
        if not m:
            raise ExplorerError(f"--frames {text!r}: {part!r} is not a frame number or range like 1-4")
        first, last = int(m[1]), int(m[2] or m[1])
        if not 1 <= first <= last <= count:
            raise ExplorerError(f"--frames {text!r}: {part!r} is outside 1..{count} "
                                f"(this lesson has {count} frames)")
        out.extend(range(first - 1, last))
    return tuple(dict.fromkeys(out))
