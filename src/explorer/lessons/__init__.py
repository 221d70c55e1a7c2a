"""Lessons: a model, a prompt, settings and the frames to play, with a title per language.

`lesson_names()` lists the lessons shipped with the app; `load_lesson(name)` opens one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.errors import ExplorerError
from ..core.sampling import SamplingConfig
from ..core.teaching import load_teaching_model
from ..session import Session


@dataclass(frozen=True)
class Lesson:
    id: str
    title: dict[str, str]                 # lang -> title
    summary: dict[str, str]               # lang -> one paragraph
    prompt_text: str
    config: SamplingConfig = field(default_factory=lambda: SamplingConfig(max_new_tokens=8))

    def title_in(self, lang: str) -> str:
        return self.title.get(lang) or self.title["en"]

    def build_session(self, config: SamplingConfig | None = None) -> Session:
        model = load_teaching_model()
        return Session(model, model.vocab.encode(self.prompt_text), config or self.config)


DEFAULT = Lesson(
    id="default",
    title={"en": "From 我爱 to EOS", "zh": "从“我爱”到EOS"},
    summary={"en": "The teaching model continues 我爱 one token at a time until it selects the end token.",
             "zh": "教学模型从“我爱”出发，一次生成一个Token，直到选出结束Token。"},
    prompt_text="我爱")

_LESSONS = {DEFAULT.id: DEFAULT}


def lesson_names() -> list[str]:
    return list(_LESSONS)


def load_lesson(name: str) -> Lesson:
    try:
        return _LESSONS[name]
    except KeyError:
        raise ExplorerError(f"lesson {name!r} not found (known: {', '.join(_LESSONS)})") from None
