"""A lesson as one web page for students: every frame's slide (a lossless WebP picture with the
narration as its alt text), its explanation, the self-checks, and a live sampling chart on recorded
logits, all inlined in one HTML file that fetches nothing (a Content-Security-Policy
forbids it) and reads its state from the URL fragment. Qt-free: the slides come in as picture
bytes (`ui/slides/student_slides.py` draws them)."""

from __future__ import annotations

import base64
import io
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..core.decode.sampling import ORDER_PRESETS, STAGE_NAMES, TOP_P_TOLERANCE
from ..i18n import LANGS, add_messages, tr
from ..resources import resources_dir
from .page_logits import REST_BIN, SMALL_VOCAB, TOP_CANDIDATES

PAGE_FONT = "TokenExplorerCJK-SC-Regular.otf"   # the slides' bundled CJK face (the page's one font)
TEMPLATE_DIR = Path(__file__).with_name("page_template")
MARKS = {"↵": "\\n", "⇥": "\\t"}     # the app's marks of a line break and a tab (the face has neither)
UI_KEYS = ("prev", "next", "show_answer", "hide_answer", "before", "after", "live", "live_note", "rest_note",
           "temperature", "top_k", "top_p", "min_p", "repetition_penalty", "order", "reset", "removed", "others",
           "question", "language", "logit", "recorded", "picked")

add_messages({
    "page.prev": {"en": "Previous", "zh": "上一步"},
    "page.next": {"en": "Next", "zh": "下一步"},
    "page.show_answer": {"en": "Show answer", "zh": "显示答案"},
    "page.hide_answer": {"en": "Hide answer", "zh": "隐藏答案"},
    "page.before": {"en": "Self-check before class", "zh": "课前自测"},
    "page.after": {"en": "Self-check after class", "zh": "课后自测"},
    "page.live": {"en": "Try the sampling settings on this step's recorded logits",
                  "zh": "在这一步记录下来的 logits 上试试采样设置"},
    "page.live_note": {"en": "The page cannot run the model: the logits are the ones recorded for this step, "
                             "and the tokens after it are the recorded ones.",
                       "zh": "网页无法运行模型：这里的 logits 是这一步记录下来的，之后的词元也是记录下来的。"},
    "page.rest_note": {"en": "This model has {vocab} tokens. The page carries the {top} most likely and every token "
                             "already seen exactly; the other {rest} hold {mass} of the probability at temperature 1, "
                             "kept in groups of nearly equal logits (within {bin}), so away from temperature 1 their "
                             "share is approximate.",
                       "zh": "这个模型有 {vocab} 个词元。网页精确保存了最可能的 {top} 个和所有已出现过的词元；其余 {rest} "
                             "个在温度 1 时共占 {mass} 的概率，按 logit 几乎相等（相差不到 {bin}）分组保存，"
                             "所以温度不是 1 时它们的份额是近似值。"},
    "page.temperature": {"en": "Temperature", "zh": "温度"},
    "page.top_k": {"en": "Top-k (0 = off)", "zh": "top-k（0 = 关闭）"},
    "page.top_p": {"en": "Top-p (1 = off)", "zh": "top-p（1 = 关闭）"},
    "page.min_p": {"en": "Min-p (0 = off)", "zh": "min-p（0 = 关闭）"},
    "page.repetition_penalty": {"en": "Repetition penalty (1 = off)", "zh": "重复惩罚（1 = 关闭）"},
    "page.order": {"en": "Order", "zh": "顺序"},
    "page.reset": {"en": "The recorded settings", "zh": "恢复记录的设置"},
    "page.removed": {"en": "removed by {stage}", "zh": "被{stage}去掉"},
    "page.others": {"en": "the other {n} tokens", "zh": "其余 {n} 个词元"},
    "page.question": {"en": "Question", "zh": "问题"},
    "page.language": {"en": "中文", "zh": "English"},
    "page.logit": {"en": "logit", "zh": "logit"},
    "page.recorded": {"en": "Recorded: {settings}", "zh": "记录的设置：{settings}"},
    "page.picked": {"en": "picked in the recording", "zh": "记录中选中的"},
})


@dataclass(frozen=True)
class PageFrame:
    """One frame of the page, in every language it is shown in."""
    kind: str
    texts: dict            # lang -> {"title", "question" (None: not a question frame), "alt", "explain": [[h, t]]}
    slides: dict           # lang -> WebP bytes (lossless: the slide's pixels)
    dist: int | None       # index of its live distribution in the page's list (None: no distribution)


@dataclass(frozen=True)
class StudentPage:
    lesson_id: str
    title: dict                          # lang -> the lesson's title
    langs: tuple[str, ...]               # the first is shown first
    frames: tuple[PageFrame, ...]
    dists: tuple[dict, ...] = ()         # `page_logits.page_entry` of each live distribution
    checks: tuple[dict, ...] = ()        # {"when", "question": {lang: text}, "answer": {lang: text}}


def page_data(page: StudentPage) -> dict:
    """Everything the script reads, JSON-able (the slides as data: URLs)."""
    ui = {lang: {key: tr(f"page.{key}", lang) for key in UI_KEYS} for lang in page.langs}
    for lang in page.langs:
        ui[lang]["stages"] = {name: tr(f"stage.{name}", lang) for name in ("raw", *STAGE_NAMES)}
    return {
        "lesson": page.lesson_id, "title": page.title, "langs": list(page.langs), "ui": ui,
        "frames": [{"kind": f.kind, "texts": f.texts, "dist": f.dist,
                    "slides": {lang: "data:image/webp;base64," + base64.b64encode(picture).decode("ascii")
                               for lang, picture in f.slides.items()}} for f in page.frames],
        "dists": list(page.dists), "checks": list(page.checks),
        "orders": ORDER_PRESETS, "stages": list(STAGE_NAMES), "top_p_tolerance": TOP_P_TOLERANCE,
        "carried": {"small_vocab": SMALL_VOCAB, "top": TOP_CANDIDATES, "bin": REST_BIN},
    }


def page_text(data: dict) -> str:
    """Every character the page can show (for the font subset): its texts, the tokens and
    the script's own words."""
    parts: list[str] = []

    def walk(value) -> None:
        if isinstance(value, str):
            if not value.startswith("data:"):
                parts.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk({k: v for k, v in data.items() if k not in ("orders", "stages")})
    # the script writes numbers and a few signs of its own (θ, →, ·)
    return "".join(parts) + _template("page.js") + "0123456789.,:;/%·–—-+=()[]… "


def font_subset(text: str) -> bytes:
    """The bundled CJK face cut down to the glyphs `text` uses (fontTools' subsetter, the
    standard one), bytes equal for equal text (the font's own date is kept)."""
    from fontTools import subset
    from fontTools.ttLib import TTFont

    font = TTFont(str(resources_dir() / "fonts" / PAGE_FONT), recalcTimestamp=False)
    options = subset.Options()
    options.name_IDs = ["*"]             # the copyright and licence records travel with the glyphs (OFL)
    options.name_languages = ["*"]
    subsetter = subset.Subsetter(options)
    subsetter.populate(text="".join(sorted(set(text))))
    subsetter.subset(font)
    out = io.BytesIO()
    font.save(out)
    return out.getvalue()


def page_piece(piece: str) -> str:
    """A token as the page writes it: a character the bundled face lacks would be drawn
    from whatever font the student's browser has, or as a box, so it is written as its
    code instead (the line-break and tab marks as \\n and \\t, an emoji as <U+1F600>)."""
    cmap = _font_cmap()
    return "".join(c if ord(c) in cmap or c.isspace() else MARKS.get(c, f"<U+{ord(c):04X}>") for c in piece)


@lru_cache(maxsize=1)
def _font_cmap() -> frozenset[int]:
    from fontTools.ttLib import TTFont
    return frozenset(TTFont(str(resources_dir() / "fonts" / PAGE_FONT), lazy=True).getBestCmap())


def _template(name: str) -> str:
    return (TEMPLATE_DIR / name).read_text(encoding="utf-8")


def _script_json(data: dict) -> str:
    """JSON safe inside a <script> element: no "</" can end it early."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")


def page_html(page: StudentPage) -> bytes:
    """The whole page, one file."""
    data = page_data(page)
    lang = page.langs[0]
    values = {"LANG": "zh-Hans" if lang == "zh" else "en", "TITLE": _escape(page.title[lang]),
              "FONT": base64.b64encode(font_subset(page_text(data))).decode("ascii"),
              "STYLE": _template("page.css"), "DATA": _script_json(data), "SCRIPT": _template("page.js")}
    # one pass over the template: a lesson's text that happens to read {{SCRIPT}} stays text
    return re.sub(r"\{\{([A-Z]+)\}\}", lambda m: values[m.group(1)], _template("page.html")).encode("utf-8")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def page_langs(first: str, written: dict[str, bool]) -> tuple[str, ...]:
    """The export's language first, then every other language the lesson is written in."""
    return (first, *(lang for lang in LANGS if lang != first and written.get(lang, True)))
