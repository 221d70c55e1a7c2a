"""Usage: the tokens a generation is billed for, counted apart (prompt, reasoning, output)
as serving APIs report them."""

from __future__ import annotations

from dataclasses import dataclass

from ..tokens.vocab import Vocabulary


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    reasoning_tokens: int
    output_tokens: int
    answer_ids: tuple[int, ...]     # the generated ids outside reasoning segments, in order

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.reasoning_tokens + self.output_tokens

    def as_dict(self) -> dict:
        return {"prompt_tokens": self.prompt_tokens, "reasoning_tokens": self.reasoning_tokens,
                "output_tokens": self.output_tokens, "total_tokens": self.total_tokens}


def count_usage(prompt_ids, output_ids, vocab: Vocabulary) -> Usage:
    """The usage of a prompt and the tokens generated after it (so far).

    Reasoning tokens are tokens like any other (selected, processed, cached, paid for); they
    are only shown differently. A reasoning segment runs from an opening marker to its
    closing marker (both included), e.g. `<think> … </think>`; the markers are the
    vocabulary's own (`Vocabulary.reasoning_markers`). A prompt that ends inside an open
    segment makes the output start inside it; a segment the budget cut before its closing
    marker counts as reasoning to the end."""
    prompt, output = tuple(int(t) for t in prompt_ids), tuple(int(t) for t in output_ids)
    flags = reasoning_flags(prompt, output, vocab)
    reasoning = sum(flags)
    answer = tuple(t for t, inside in zip(output, flags) if not inside)
    return Usage(len(prompt), reasoning, len(output) - reasoning, answer)


def reasoning_flags(prompt_ids, output_ids, vocab: Vocabulary) -> tuple[bool, ...]:
    """Per token of `output_ids`, whether it belongs to a reasoning segment (see `count_usage`)."""
    markers = vocab.reasoning_markers
    if markers is None:
        return (False,) * len(output_ids)
    open_id, close_id = markers
    inside = _open_at_end(tuple(int(t) for t in prompt_ids), open_id, close_id)
    flags = []
    for t in output_ids:
        t = int(t)
        if t == open_id:
            inside = True
        flags.append(inside)
        if t == close_id:
            inside = False
    return tuple(flags)


def _open_at_end(ids: tuple[int, ...], open_id: int, close_id: int) -> bool:
    """True when the last marker in `ids` opens a segment (the output continues inside it)."""
    for t in reversed(ids):
        if t in (open_id, close_id):
            return t == open_id
    return False
