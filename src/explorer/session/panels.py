"""The Qt-free registry of panels: every panel of the window by id (the ids lesson files
name), its title, and which of them draw the run on a slide."""

from __future__ import annotations

from ..i18n import add_messages, tr

# every panel of the window, by id, in the window's order, with its title (message "<id>.title")
PANEL_TITLES = {
    "player": {"en": "Player", "zh": "播放器"},
    "timeline": {"en": "Timeline", "zh": "时间线"},
    "kv": {"en": "KV cache", "zh": "KV缓存"},
    "attention": {"en": "Attention", "zh": "注意力"},
    "distribution": {"en": "Next-token distribution", "zh": "下一个Token的概率分布"},
    "controls": {"en": "Sampling", "zh": "抽样设置"},
    "explanation": {"en": "Explanation", "zh": "讲解"},
    "lesson": {"en": "Lesson", "zh": "课程"},
    "glossary": {"en": "Glossary", "zh": "术语表"},
    "beam": {"en": "Beam search", "zh": "束搜索"},
    "lens": {"en": "Logit lens", "zh": "逐层预测"},        # the panel's caption says it is the raw lens
    "transcript": {"en": "Transcript", "zh": "文字概率"},   # ... and that its colours are probabilities
    "versus": {"en": "A/B", "zh": "A/B对比"},               # two runs stepped together
}
PANELS = tuple(PANEL_TITLES)
add_messages({f"{pid}.title": texts for pid, texts in PANEL_TITLES.items()})


def panel_title(pid: str, lang: str) -> str:
    """A panel's title (its dock's, a lesson's list of panels) in `lang`."""
    return tr(f"{pid}.title", lang)


# the panels that draw the run (a slide shows these; the others are controls or text)
SLIDE_PANELS = ("timeline", "kv", "attention", "distribution", "beam", "lens", "transcript", "versus")
# what a slide shows for a frame that names none of SLIDE_PANELS, by frame kind
DEFAULT_SLIDE_PANELS = {"input": ("timeline", "kv"), "prefill": ("timeline", "attention", "kv"),
                        "decode": ("timeline", "attention", "kv"), "pick": ("distribution", "timeline"),
                        "stop": ("timeline", "kv")}
