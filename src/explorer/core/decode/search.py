"""Search over candidate states with an evaluator (the third kind of extra compute, in
the manner of Tree of Thoughts): the model proposes, the evaluator judges."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from ..errors import SettingError
from ..models.layers import softmax
from ..models.protocol import LanguageModel
from ..tokens.vocab import Vocabulary

Evaluator = Callable[[tuple[int, ...]], float]      # new token ids of a state -> score


@dataclass(frozen=True)
class SearchNode:
    node_id: int                  # index in SearchResult.nodes; 0 is the root (the prompt)
    parent_id: int | None
    token_id: int | None          # the token this state adds; None for the root
    depth: int
    prob: float                   # P(token | parent state) from the model; 1 for the root
    score: float | None           # the evaluator's score; None for the root
    status: str                   # "root" | "kept" | "pruned" | "finished"


@dataclass(frozen=True)
class SearchResult:
    prompt_ids: tuple[int, ...]
    nodes: tuple[SearchNode, ...]
    width: int
    branches: int
    depth: int
    forwards: int                 # model calls that proposed children
    evaluations: int              # evaluator calls

    def path(self, node_id: int) -> tuple[int, ...]:
        """The new token ids from the root down to `node_id`."""
        return _path(self.nodes, node_id)

    @property
    def best(self) -> SearchNode:
        """The best-scored state kept (or finished) at the deepest level reached."""
        alive = [n for n in self.nodes if n.status in ("kept", "finished")]
        deepest = max(n.depth for n in alive)
        return max((n for n in alive if n.depth == deepest), key=lambda n: (n.score, n.prob, -n.node_id))

    def level(self, depth: int) -> tuple[SearchNode, ...]:
        return tuple(n for n in self.nodes if n.depth == depth)


@dataclass(frozen=True)
class SearchSpec:
    """A search a lesson asks for: its evaluator's scores, the width, branches and depth."""

    evaluator: str                           # the evaluator's name (the lesson says what judge it stands for)
    scores: tuple[tuple[str, float], ...]    # state (new pieces joined by spaces) -> score
    default: float                           # the score of a state not listed
    width: int
    branches: int
    depth: int

    def run(self, model: LanguageModel, prompt_ids) -> SearchResult:
        return evaluator_search(model, prompt_ids, TableEvaluator(dict(self.scores), self.default, model.vocab),
                                self.width, self.branches, self.depth)


@dataclass(frozen=True)
class TableEvaluator:
    """Scores written out: a state's new pieces joined by spaces -> score; `default` otherwise."""

    scores: dict[str, float]
    default: float
    vocab: Vocabulary

    def __call__(self, ids: tuple[int, ...]) -> float:
        return self.scores.get(" ".join(self.vocab.piece_text(t) for t in ids), self.default)


def evaluator_search(model: LanguageModel, prompt_ids, evaluator: Evaluator, width: int, branches: int,
                     depth: int) -> SearchResult:
    """A state is the prompt plus the new tokens so far. At each depth every kept state is
    expanded by one model forward into its `branches` most likely next tokens (probability > 0;
    ties: lower id first); each child is scored by the evaluator; all children of the depth are
    ranked by score (ties: higher model probability, then the order of expansion) and the best
    `width` are kept, the rest pruned. A child that ends with an end token is finished and is not
    expanded. The search stops after `depth` levels or when no state is left to expand; the answer
    is the best-scored state kept at the last level it reached. `forwards` counts the model
    calls that proposed children, `evaluations` the evaluator calls."""
    for name, value in (("width", width), ("branches", branches), ("depth", depth)):
        if not isinstance(value, int) or value < 1:
            raise SettingError(f"search {name} = {value!r}: expected an integer >= 1")
    prompt = tuple(int(t) for t in model.vocab.id_array(prompt_ids, "prompt ids"))
    ends = model.vocab.end_ids
    nodes = [SearchNode(0, None, None, 0, 1.0, None, "root")]
    frontier = [0]                                   # node ids of kept states to expand
    forwards = evaluations = 0
    for level in range(1, depth + 1):
        children = []                                # (node id, score, prob)
        for parent in frontier:
            new = _path(nodes, parent)
            logits = model.full_forward(prompt + new).logits[-1]          # [V]
            forwards += 1
            probs = softmax(logits)                                       # [V]
            order = np.lexsort((np.arange(probs.size), -probs))[:branches]
            for token in (int(t) for t in order if probs[t] > 0):
                score = float(evaluator(new + (token,)))
                evaluations += 1
                nodes.append(SearchNode(len(nodes), parent, token, level, float(probs[token]), score, "pruned"))
                children.append(nodes[-1])
        ranked = sorted(children, key=lambda n: (-n.score, -n.prob, n.node_id))
        frontier = []
        for node in ranked[:width]:
            finished = node.token_id in ends
            nodes[node.node_id] = replace(node, status="finished" if finished else "kept")
            if not finished:
                frontier.append(node.node_id)
        if not frontier:
            break
    return SearchResult(prompt, tuple(nodes), width, branches, depth, forwards, evaluations)


def _path(nodes, node_id: int) -> tuple[int, ...]:
    ids = []
    while nodes[node_id].parent_id is not None:
        ids.append(nodes[node_id].token_id)
        node_id = nodes[node_id].parent_id
    return tuple(reversed(ids))
