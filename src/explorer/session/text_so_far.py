"""The text so far: a frame's visible sequence (the prompt and the tokens selected up to
this frame) decoded as the vocabulary decodes it, in parts a view can mark: the prompt,
reasoning segments, the answer, and the bytes of an incomplete last character."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby

from ..core.decode.generate import Run
from ..core.decode.usage import reasoning_flags
from ..core.tokens.vocab import Vocabulary, one_line
from ..i18n import add_messages, tr
from .frames import Frame

add_messages({
    "own_run.caption": {"en": "Own run · {model} · prompt “{prompt}”", "zh": "自由探索 · {model} · 提示“{prompt}”"},
})

KINDS = ("prompt", "reasoning", "answer", "incomplete")


@dataclass(frozen=True)
class TextPart:
    kind: str       # one of KINDS
    text: str       # decoded text ("incomplete": the held-back bytes as "<0xE7><0x88>")


def text_so_far(frame: Frame, run: Run, vocab: Vocabulary) -> tuple[TextPart, ...]:
    """The visible sequence of `frame` as text parts, in order: the prompt, then the output
    in runs of reasoning and answer tokens, then (if the last character's bytes are not all
    there yet) those bytes. A part holds the characters completed by its tokens, so a
    character whose bytes straddle two parts belongs to the later one. Empty parts (special
    tokens alone) are left out."""
    ids, n_prompt = frame.visible_ids, len(run.prompt_ids)
    flags = reasoning_flags(run.prompt_ids, ids[n_prompt:], vocab)
    kinds = ["prompt"] * n_prompt + ["reasoning" if f else "answer" for f in flags]
    parts, end, decoded = [], 0, ""
    for kind, group in groupby(kinds):
        end += len(list(group))
        text = vocab.decode(ids[:end])          # the prefix's text grows by this part's characters
        parts.append(TextPart(kind, text[len(decoded):]))
        decoded = text
    held = vocab.held_back(ids)
    if held:
        parts.append(TextPart("incomplete", held))
    return tuple(p for p in parts if p.text)


def plain_text(parts: tuple[TextPart, ...]) -> str:
    """The parts joined as one line of text (line breaks shown as ↵)."""
    return one_line("".join(p.text for p in parts))


def shows_output(frame: Frame, run: Run) -> bool:
    """Whether the frame shows any token the model selected (from the first pick on)."""
    return frame.visible_count > len(run.prompt_ids)


def own_run_caption(run: Run, model_name: str, vocab: Vocabulary, lang: str) -> str:
    """"Own run · SmolLM2-135M-Instruct · prompt “我爱”": what a slide of free exploration names."""
    return tr("own_run.caption", lang, model=model_name, prompt=one_line(vocab.decode(run.prompt_ids)))
