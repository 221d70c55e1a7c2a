"""Beam search over any LanguageModel, keeping the whole tree of expanded prefixes."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..models.layers import softmax
from ..models.protocol import LanguageModel
from .orders import ORDER_PRESETS
from .sampling import SamplingConfig, distribution

FULL_EXPANSION_VOCAB = 64    # up to this size every child with probability > 0 is in the tree
# the stages Hugging Face's beam search (do_sample=False) applies to every beam's logits: its logits
# processors; the warpers (temperature, top-k, top-p, ...) only shape a draw, and it draws nothing
BEAM_PROCESSORS = ("logit_bias", "repetition_penalty", "min_new_tokens")   # in its order


@dataclass(frozen=True)
class BeamNode:
    node_id: int                  # index in BeamResult.nodes
    parent_id: int | None         # None for the root (the prompt)
    token_id: int | None          # the token this node adds; None for the root
    depth: int                    # new tokens so far; 0 for the root
    logprob: float                # log P(token | prefix); 0 for the root
    score: float                  # cumulative log-probability of the new tokens
    prob: float                   # joint probability of the new tokens, exp(score)
    status: str                   # "root" | "kept" | "pruned" | "finished"
    pruned_at_depth: int | None   # the depth whose ranking pruned it; None unless pruned


@dataclass(frozen=True)
class Hypothesis:
    ids: tuple[int, ...]          # the new tokens
    score: float                  # sum of their log-probabilities
    prob: float                   # their joint probability, exp(score)
    normalised_score: float       # score / len(ids) ** length_penalty: what ranks hypotheses
    finish_reason: str            # "eos" | "length"
    node_id: int | None           # its last node in BeamResult.nodes; None if the tree lacks it


@dataclass(frozen=True)
class BeamResult:
    prompt_ids: tuple[int, ...]
    nodes: tuple[BeamNode, ...]         # every expanded prefix, node_id = index; nodes[0] is the root
    beams: tuple[Hypothesis, ...]       # final hypotheses, best first (at most num_beams)
    greedy: Hypothesis                  # the width-1 search, for comparison
    num_beams: int
    max_new_tokens: int
    length_penalty: float
    children_per_beam: int | None       # None: every token with probability > 0 was expanded
    processors: tuple[str, ...] = ()    # the BEAM_PROCESSORS that shaped every beam's log-probabilities

    def path(self, node_id: int) -> list[int]:
        """The new token ids from the root down to `node_id`."""
        if not 0 <= node_id < len(self.nodes):
            raise IndexError(f"node_id {node_id} is not in the tree (0..{len(self.nodes) - 1})")
        return _path(self.nodes, node_id)


def beam_search(model: LanguageModel, prompt_ids, num_beams: int, max_new_tokens: int,
                length_penalty: float = 1.0, end_ids=None, config: SamplingConfig | None = None) -> BeamResult:
    """Beam search of width `num_beams` after `prompt_ids`, with the tree it explored.

    config: the stages of BEAM_PROCESSORS it turns on (logit bias, repetition penalty over each
    beam's prompt and tokens, min_new_tokens holding back the end tokens) reshape every beam's
    next log-probabilities, in that order, as Hugging Face's beam search does: its logits
    processors run on the log-softmax of the logits, and the scores they give are added up as
    they are (not normalised again: a penalised node's "probability" exp(logprob) is smaller,
    and its siblings' no longer sum to 1). The other stages shape a draw, and a beam search
    draws nothing (refused where a user gives them).

    A beam ends when it selects one of `end_ids`, by default the vocabulary's
    `end_ids` (none: every beam runs to max_new_tokens).

    The score of a sequence is the sum of the natural-log probabilities of its new tokens;
    its joint probability is exp(score). At each depth every live beam is expanded over
    every next token with probability > 0 (for vocabularies bigger than FULL_EXPANSION_VOCAB
    only over its top 2*num_beams tokens, as Hugging Face does: no other token could be
    among the best num_beams children). All children of the depth are ranked by score, the
    best survive and the rest are pruned. A surviving child that ends with EOS is a finished
    hypothesis: it stays in the tree, is not expanded, and keeps its slot, so from then on
    one beam fewer is live (finished + live never exceed num_beams). The search stops
    after max_new_tokens or when no beam is live. (Hugging Face instead keeps num_beams live
    beams and sets finished ones aside; the two agree until the first beam finishes.)

    Final hypotheses are ranked by score / length ** length_penalty (the Hugging Face
    convention; length counts every new token, a final EOS included). Caches are forked
    with `KVCache.copy()`, and a surviving child is fed to the model (`decode`) only when it
    will be expanded: as in generation, the last selected token of a sequence is never
    processed."""
    # the same limits and words as SamplingConfig: a caller may come without one
    SamplingConfig(num_beams=num_beams, max_new_tokens=max_new_tokens, length_penalty=length_penalty)
    ends = frozenset(model.vocab.end_ids if end_ids is None else end_ids)
    limit = None if len(model.vocab) <= FULL_EXPANSION_VOCAB else 2 * num_beams
    processors = _processors(config)
    log_probs = _processed(processors, tuple(int(t) for t in prompt_ids), ends)
    nodes, final = _search(model, prompt_ids, num_beams, max_new_tokens, ends, limit, log_probs)
    beams = sorted((_hypothesis(nodes, n, length_penalty, ends) for n in final),
                   key=lambda h: -h.normalised_score)
    if num_beams == 1:
        greedy = beams[0]
    else:
        greedy_nodes, greedy_final = _search(model, prompt_ids, 1, max_new_tokens, ends, limit, log_probs)
        greedy = _hypothesis(greedy_nodes, greedy_final[0], length_penalty, ends)
        greedy = replace(greedy, node_id=_find(nodes, greedy.ids))
    return BeamResult(tuple(int(t) for t in prompt_ids), tuple(nodes), tuple(beams), greedy,
                      num_beams, max_new_tokens, length_penalty, limit,
                      tuple(s for s in BEAM_PROCESSORS if processors is not None and s in processors.active_stages))


def _processors(config: SamplingConfig | None) -> SamplingConfig | None:
    """The settings of `config` a beam search applies (BEAM_PROCESSORS), greedy, the rest off;
    None when none is on."""
    if config is None or not set(BEAM_PROCESSORS) & set(config.active_stages):
        return None
    return SamplingConfig(mode="greedy", order=ORDER_PRESETS["hf"], max_new_tokens=config.max_new_tokens,
                          **{name: getattr(config, name) for name in BEAM_PROCESSORS})


def _processed(processors: SamplingConfig | None, prompt: tuple[int, ...], ends: frozenset):
    """(logits [V], the beam's new tokens) -> [V] scores of its next token: the log-probabilities,
    then the processors on them (as Hugging Face's beam search: not normalised again)."""
    if processors is None:
        return lambda logits, _new: _log_probs(logits)
    end_ids = tuple(sorted(ends))

    def log_probs(logits: np.ndarray, new: tuple[int, ...]) -> np.ndarray:   # [V] -> [V]
        dist = distribution(_log_probs(logits), processors, seen_ids=prompt + new, step=len(new), output_ids=new,
                            end_ids=end_ids)
        return dist.stages[-1].logits
    return log_probs


def _search(model: LanguageModel, prompt_ids, width: int, max_new_tokens: int, ends: frozenset,
            limit: int | None, log_probs) -> tuple[list[BeamNode], list[BeamNode]]:
    """The tree of one search and its final nodes (finished, or live at the last depth);
    `log_probs(logits, new tokens)` gives a beam's next log-probabilities."""
    trace, cache = model.prefill(prompt_ids)
    root = BeamNode(0, None, None, 0, 0.0, 0.0, 1.0, "root", None)
    nodes = [root]
    live = [(root, cache, log_probs(trace.last_logits, ()))]   # (node, its cache, [V] next log-probs)
    final = []
    for depth in range(1, max_new_tokens + 1):
        children = []                                        # (child, parent's cache)
        for parent, parent_cache, logp in live:
            for token in _candidates(logp, limit):
                score = parent.score + float(logp[token])
                child = BeamNode(len(nodes), parent.node_id, int(token), depth, float(logp[token]),
                                 score, math.exp(score), "pruned", depth)
                nodes.append(child)
                children.append((child, parent_cache))
        ranked = sorted(children, key=lambda c: -c[0].score)   # stable: beam order, then lower id
        live = []
        for child, parent_cache in ranked[:width - len(final)]:
            done = child.token_id in ends
            child = replace(child, status="finished" if done else "kept", pruned_at_depth=None)
            nodes[child.node_id] = child
            if done or depth == max_new_tokens:
                final.append(child)
            else:
                trace, cache = model.decode(child.token_id, parent_cache.copy())
                live.append((child, cache, log_probs(trace.last_logits, tuple(_path(nodes, child.node_id)))))
        if not live:
            break
    return nodes, final


def _log_probs(logits: np.ndarray) -> np.ndarray:  # [V] -> [V] natural-log probabilities
    with np.errstate(divide="ignore"):
        return np.log(softmax(logits))


def _candidates(logp: np.ndarray, limit: int | None) -> np.ndarray:  # [V] -> [c] ids, best first
    """Ids with probability > 0, most likely first (ties: lower id first), at most `limit`."""
    order = np.argsort(-logp, kind="stable")
    order = order[np.isfinite(logp[order])]
    return order if limit is None else order[:limit]


def _path(nodes, node_id: int) -> list[int]:
    """New token ids from the root down to `node_id`."""
    ids = []
    node = nodes[node_id]
    while node.parent_id is not None:
        ids.append(node.token_id)
        node = nodes[node.parent_id]
    return ids[::-1]


def _find(nodes, ids) -> int | None:
    """The node reached from the root by the new tokens `ids`, or None if the tree lacks it."""
    child_of = {(n.parent_id, n.token_id): n.node_id for n in nodes}
    node_id = 0
    for token in ids:
        node_id = child_of.get((node_id, token))
        if node_id is None:
            return None
    return node_id


def _hypothesis(nodes, end: BeamNode, length_penalty: float, ends: frozenset) -> Hypothesis:
    ids = tuple(_path(nodes, end.node_id))
    return Hypothesis(ids, end.score, end.prob, end.score / len(ids) ** length_penalty,
                      "eos" if end.token_id in ends else "length", end.node_id)

