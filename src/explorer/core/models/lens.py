"""The raw logit lens: what a model "would say" after each of its layers.

For one step, the position whose logits choose the next token: the final norm and the
output head applied to the residual stream leaving every layer (no trained translators:
the head the model has, read early). The last layer's row is the step's own logits. Only
the `TOP` best candidates of each layer are kept (and the selected token's place), so a
lens of every step of a long run stays small beside the run itself.

Shapes: L = layers, k = candidates kept per layer, V = vocabulary size."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..errors import ExplorerError

TOP = 20   # candidates kept per layer: a table row a class can read, 20 x L numbers a step


class LensError(ExplorerError):
    """A lens asked of a model that has no layers to read (a table model)."""


@dataclass(frozen=True, eq=False)
class Lens:
    """The per-layer prediction of one step (arrays best candidate first, ties lower id first)."""

    step: int                   # the Run step (0 = Prefill)
    position: int               # the position whose logits chose the next token
    selected_id: int            # the token the step finally selected
    ids: np.ndarray             # [L, k] the k most likely ids after each layer
    probs: np.ndarray           # [L, k] their probabilities (softmax of the layer's logits, float64 but for
                                #        the denominators' exponentials: see `logit_lens`)
    logits: np.ndarray          # [L, k] their logits (the teaching model's h·Wout + b numbers)
    selected_probs: np.ndarray  # [L] the selected token's probability after each layer
    selected_ranks: np.ndarray  # [L] its rank after each layer (1 = top-1)
    arithmetic: str = "float64"  # what the head computed in ("float32", "llama.cpp", ...)
    vocab: object = None        # the model's Vocabulary: `pieces` reads it when asked

    @cached_property
    def pieces(self) -> tuple:  # [L][k]
        """The candidates' pieces as text (`Vocabulary.piece_text`), read when first asked (a
        window showing the table draws its own; JSON and the trace ask), interned: the lenses
        of a long run share them (", " and "." in every row)."""
        return tuple(tuple(sys.intern(self.vocab.piece_text(int(t))) for t in row) for row in self.ids)

    @property
    def n_layers(self) -> int:
        return len(self.ids)

    @property
    def commit_layer(self) -> int | None:
        """The first layer from which the selected token stays top-1 to the last layer;
        None when it is not top-1 at the last layer (sampled or forced away from the top)."""
        top1 = self.selected_ranks == 1                                       # [L]
        if not top1[-1]:
            return None
        below = np.flatnonzero(~top1)
        return int(below[-1]) + 1 if below.size else 0


def has_lens(model, trace) -> bool:
    """Whether `model` can read a lens from `trace`: it has layers and a head to apply to them."""
    return bool(trace.layers) and hasattr(model, "layer_logits")


def logit_lens(model, step, top: int = TOP) -> Lens:
    """The lens of Run step `step` of `model` (the model that computed it)."""
    if not has_lens(model, step.trace):
        raise LensError(f"model {model.name!r} has no layers to show in a logit lens: its next-token "
                        f"scores do not come from a residual stream through layers (a table model's "
                        f"come from its table)")
    logits = model.layer_logits(step.trace)                                   # [L, V]
    top_logit = logits.max(axis=1, keepdims=True)                             # [L, 1]
    # the softmax's denominators: exponentials in the logits' own type (float32 for a GGUF
    # file's model: a quarter of float64's time over 30 x 49,152 numbers), summed in float64
    shifted = np.subtract(logits, top_logit)                                  # [L, V], exponentiated in place
    totals = np.exp(shifted, out=shifted).sum(axis=1, dtype=np.float64)       # [L]
    ids = _top_ids(logits, min(top, logits.shape[1]))                         # [L, k]
    rows = np.arange(len(logits))[:, None]
    selected = int(step.selected_id)
    chosen = logits[:, selected:selected + 1]                                 # [L, 1]
    ranks = (1 + np.count_nonzero(logits > chosen, axis=1)
             + np.count_nonzero(logits[:, :selected] == chosen, axis=1))      # [L]

    def probs(z):  # [L, j] logits of this step -> [L, j] float64 probabilities
        return np.exp(np.asarray(z, np.float64) - top_logit) / totals[:, None]

    return Lens(step.index, int(step.logits_position), selected, ids, probs(logits[rows, ids]),
                np.asarray(logits[rows, ids], np.float64), probs(chosen)[:, 0], ranks,
                getattr(model, "arithmetic_label", "float64"), model.vocab)


def _top_ids(logits: np.ndarray, k: int) -> np.ndarray:  # [L, V] -> [L, k]
    """Each row's k most likely ids, best first, the lower id first on ties. A strided
    sample's k-th largest value is a lower bound of the row's: only the few ids at or above
    it are sorted (a full partition of 30 x 49,152 logits takes 15 ms)."""
    stride = max(1, logits.shape[1] // (64 * k))
    sample = logits[:, ::stride]                                                # [L, V/stride]
    bounds = np.partition(sample, -k, axis=1)[:, -k]                           # [L]
    out = np.empty((len(logits), k), np.int64)
    for row, (z, bound) in enumerate(zip(logits, bounds)):
        near = np.flatnonzero(z >= bound)                                      # [>= k] ascending ids
        values = z[near]
        kth = np.partition(values, -k)[-k]                                     # the row's k-th largest
        top = near[values >= kth]                                              # [>= k]: ties at kth too
        out[row] = top[np.argsort(-z[top], kind="stable")][:k]                 # ties: the lower id first
    return out


def lens_dict(lens: Lens) -> dict:
    """The lens as JSON carries it: {"lens": [{"layer", "top": [{"id", "piece", "prob"}]}], "commit_layer"}."""
    return {"lens": [{"layer": layer,
                      "top": [{"id": int(i), "piece": piece, "prob": float(p)}
                              for i, piece, p in zip(lens.ids[layer], lens.pieces[layer], lens.probs[layer])]}
                     for layer in range(lens.n_layers)],
            "commit_layer": lens.commit_layer}


class LensMemo:
    """The lenses of the last `size` steps asked for (a window stepping back and forth
    computes each once), keyed by the step's forward trace, index and selected token: a
    slider drag's rerun reuses the traces (new Step records, the same forwards), and a held
    trace keeps its id from being reused."""

    def __init__(self, size: int = 64):
        self.size = size
        self._lenses: dict[tuple, tuple] = {}    # key -> (the trace, the model, its lens): held, so ids stay theirs

    def of(self, model, step) -> Lens | None:
        """The lens of `step` (None for no step, or a model without layers)."""
        if step is None or not has_lens(model, step.trace):
            return None
        key = (id(step.trace), id(model), step.index, int(step.selected_id))
        held = self._lenses.pop(key, None)
        lens = held[-1] if held is not None else logit_lens(model, step)
        self._lenses[key] = (step.trace, model, lens)           # the newest last
        while len(self._lenses) > self.size:
            del self._lenses[next(iter(self._lenses))]
        return lens
