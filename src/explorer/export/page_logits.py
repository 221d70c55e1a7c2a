"""The numbers a student page carries for one next-token distribution: the raw logits of
every candidate for a small vocabulary; for a big one the most likely candidates and every
seen id exactly, and the rest of the vocabulary in narrow groups of equal logit.

Why groups: the page redraws the distribution in the browser at any temperature, top-k,
top-p, min-p and repetition penalty, so it needs more than the rest's mass at temperature
1, but 262,144 logits per step would make a lesson page tens of megabytes. A group stands
for its tokens at one logit, the log of their mean exp: at temperature 1 the rest holds its
exact mass; at another temperature each group is off by the spread of its logits
(at most REST_BIN wide), which the benchmark measures. The page computes exactly on the
vector `page_vector` describes, so core's `distribution` on that vector is its reference."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SMALL_VOCAB = 1024      # every candidate's logit is carried up to this vocabulary size
TOP_CANDIDATES = 256    # for a bigger vocabulary: this many of the highest logits, exactly
REST_BIN = 1 / 32       # logit width of one group of the rest: its tokens' exp differ by at most 3.2%


@dataclass(frozen=True)
class PageLogits:
    """One step's logits as the page holds them."""
    ids: np.ndarray         # (n,) ascending: the ids carried one by one
    logits: np.ndarray      # (n,) their raw logits (-inf: not a candidate)
    group_values: np.ndarray   # (g,) descending: one logit per group of the rest
    group_counts: np.ndarray   # (g,) how many ids each group stands for
    group_of: np.ndarray    # (V - n,) the group of each remaining id (ascending ids), -1 for a -inf logit
    rest_ids: np.ndarray    # (V - n,) ascending
    rest_mass: float        # exact probability of the rest at the raw stage (temperature 1)
    vocab_size: int


def split_logits(raw: np.ndarray, seen_ids) -> PageLogits:  # (V,), (s,) -> PageLogits
    """The page's numbers for one step's raw logits and the ids seen before it."""
    raw = np.asarray(raw, dtype=np.float64)
    size = raw.size
    if size <= SMALL_VOCAB:
        empty = np.zeros(0)
        return PageLogits(np.arange(size), raw.copy(), empty, empty.astype(np.int64), empty.astype(np.int64),
                          empty.astype(np.int64), 0.0, size)
    carried = np.zeros(size, dtype=bool)                                # (V,)
    carried[np.argpartition(-raw, TOP_CANDIDATES)[:TOP_CANDIDATES]] = True
    carried[np.asarray(seen_ids, dtype=np.int64)] = True
    ids, rest_ids = np.flatnonzero(carried), np.flatnonzero(~carried)   # (n,), (r,)
    rest = raw[rest_ids]                                                # (r,)
    alive = rest > -np.inf
    top = raw.max()
    total = np.exp(raw[raw > -np.inf] - top).sum()
    rest_mass = float(np.exp(rest[alive] - top).sum() / total)
    keys = np.floor(rest[alive] / REST_BIN).astype(np.int64)            # (a,) the bin of each
    bins, inverse, counts = np.unique(-keys, return_inverse=True, return_counts=True)   # highest bin first
    peak = np.full(bins.size, -np.inf)
    np.maximum.at(peak, inverse, rest[alive])                          # (g,) the largest logit per bin
    sums = np.zeros(bins.size)
    np.add.at(sums, inverse, np.exp(rest[alive] - peak[inverse]))
    values = peak + np.log(sums / counts)                               # (g,) log-mean-exp, within the bin
    values = _apart(values, raw[ids])
    group_of = np.full(rest_ids.size, -1, dtype=np.int64)
    group_of[alive] = inverse
    return PageLogits(ids, raw[ids].copy(), values, counts.astype(np.int64), group_of, rest_ids, rest_mass, size)


def _apart(values: np.ndarray, carried: np.ndarray) -> np.ndarray:  # (g,), (n,) -> (g,)
    """Group logits moved one step down where one equals a carried logit: a tie between a
    group and a carried id would be broken by ids the page does not know."""
    out = values.copy()
    taken = set(carried.tolist())
    for i, v in enumerate(out):
        while v in taken:
            v = np.nextafter(v, -np.inf)
        out[i] = v
    return out


def page_vector(page: PageLogits) -> np.ndarray:  # -> (V,)
    """The logits vector the page computes on: the carried ids as they are, each other id
    at its group's logit."""
    out = np.full(page.vocab_size, -np.inf)
    out[page.ids] = page.logits
    if page.rest_ids.size:
        grouped = page.group_of >= 0
        out[page.rest_ids[grouped]] = page.group_values[page.group_of[grouped]]
    return out


def page_entry(page: PageLogits, pieces: list[str], seen_ids, settings: dict, selected: int) -> dict:
    """The JSON the page's script reads for one step (floats written to round-trip exactly)."""
    return {
        "vocab": page.vocab_size,
        "ids": page.ids.tolist(),
        "logits": [None if v == -np.inf else float(v) for v in page.logits],
        "pieces": pieces,
        "groups": [[float(v), int(n)] for v, n in zip(page.group_values, page.group_counts)],
        "rest_mass": page.rest_mass,
        "seen": sorted(set(int(i) for i in seen_ids)),
        "settings": settings,
        "selected": selected,      # the token the recording picked (marked in the chart)
    }
