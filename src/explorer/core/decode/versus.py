"""Two runs of the same prompt compared step by step (the A/B view, `trace --vs`): the first
step whose chosen tokens differ and, per step both runs reached, the total variation
distance between their final distributions. Token by token only means something when both
models read the same ids as the same pieces: `tokenizer_mismatch` says why not.

Shapes: V = vocabulary size."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SettingError
from ..tokens.vocab import Vocabulary
from .generate import Run


class ComparisonError(SettingError):
    """Two runs that cannot be compared token by token (models with different tokenizers)."""


@dataclass(frozen=True, eq=False)
class Comparison:
    """Run A and run B of the same prompt, where they part and how far apart they are."""

    a: Run
    b: Run
    first_divergence: int | None     # the first step whose selected tokens differ (None: never)
    distances: tuple[float, ...]     # per step both reached: total variation of the final distributions

    def distance(self, step: int | None) -> float | None:
        """The total variation at `step` (None before any step or past the shorter run)."""
        return None if step is None or not 0 <= step < len(self.distances) else self.distances[step]


def first_divergence(a: Run, b: Run) -> int | None:
    """The first step whose selected tokens differ (or where one run has stopped); None: never."""
    for i, (x, y) in enumerate(zip(a.steps, b.steps)):
        if x.selected_id != y.selected_id:
            return i
    return None if len(a.steps) == len(b.steps) else min(len(a.steps), len(b.steps))


def distances(a: Run, b: Run) -> list[float]:
    """Per step both runs reached, the total variation 1/2 sum |p_a - p_b| of the final distributions."""
    return [0.5 * float(np.abs(x.distribution.probs - y.distribution.probs).sum())   # (V,) each
            for x, y in zip(a.steps, b.steps)]


def tokenizer_mismatch(a: Vocabulary, b: Vocabulary, name_a: str, name_b: str) -> str | None:
    """Why runs of models `name_a` and `name_b` cannot be compared token by token (None: the
    same ids are the same pieces, as Qwen2.5 0.5B and 1.5B share theirs)."""
    if len(a) != len(b):
        return (f"{name_a} and {name_b} have different tokenizers ({len(a):,} and {len(b):,} pieces): "
                f"the same prompt is other ids, so their steps cannot be compared")
    differ = next((i for i, (x, y) in enumerate(zip(a.pieces, b.pieces)) if x != y), None)
    if differ is not None:
        return (f"{name_a} and {name_b} have different tokenizers (id {differ} is {a.display_piece(differ)} in one "
                f"and {b.display_piece(differ)} in the other): their steps cannot be compared")
    return None


def compare(a: Run, b: Run, vocab_a: Vocabulary, vocab_b: Vocabulary) -> Comparison:
    """The comparison of two runs; ComparisonError when their models' tokenizers differ."""
    reason = tokenizer_mismatch(vocab_a, vocab_b, a.model_name, b.model_name)
    if reason is not None:
        raise ComparisonError(reason)
    return Comparison(a, b, first_divergence(a, b), tuple(distances(a, b)))
