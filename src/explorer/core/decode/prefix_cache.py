"""Prefix caching: a second request that starts with the same tokens as an earlier one
reuses the K/V of those positions and runs Prefill only on the rest.

A position's keys and values depend on its own token and on every earlier one (attention
mixes them in from the first layer on), so a cached position can be reused only while every
token up to it is the same: the first changed token invalidates its own position and every
position after it. The store is keyed by token ids; a lookup finds the longest shared prefix
and hands out a copy of the cache cut to that length (the stored one is never changed).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..models.kvcache import KVCache


@dataclass(frozen=True)
class PrefixMatch:
    """How a request's ids line up with a cached sequence."""

    reused: int                      # leading positions whose K/V can be taken from the cache
    invalidated: tuple[int, ...]     # cached positions after the first difference: their K/V are stale

    @property
    def changed_at(self) -> int | None:
        """The first position whose token differs from the cached one (None: no cached position differs)."""
        return self.invalidated[0] if self.invalidated else None


def match_prefix(cached_ids, new_ids) -> PrefixMatch:
    """Reused and invalidated positions of `new_ids` against the cached `cached_ids`.

    Reused: the longest common prefix, less one when it is the whole request (the last
    position must run to give the logits of the next token). Invalidated: every cached
    position from the first one whose token differs on (none when no token differs: cached
    positions past a shorter request are only unused)."""
    cached, new = np.asarray(cached_ids, np.int64), np.asarray(new_ids, np.int64)   # [c], [n]
    common = min(len(cached), len(new))
    differs = np.flatnonzero(cached[:common] != new[:common])                         # [k]
    shared = int(differs[0]) if len(differs) else common
    stale_from = shared if len(differs) else len(cached)
    return PrefixMatch(min(shared, len(new) - 1), tuple(range(stale_from, len(cached))))


@dataclass(frozen=True)
class PrefixHit:
    """What a request took from the prefix cache: recorded with its Run."""

    cached_ids: tuple[int, ...]      # the stored sequence it matched best
    match: PrefixMatch
    cache: KVCache                   # the copy it started from (the reused positions only); not to be extended
    stored_bytes: int                # memory the whole prefix cache held at the lookup
    seconds: float                   # time the lookup and the copy took (part of the time to first token)

    @property
    def reused(self) -> int:
        return self.match.reused


class PrefixCache:
    """Finished sequences' K/V, keyed by their token ids."""

    def __init__(self):
        self._entries: dict[tuple[int, ...], KVCache] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def store(self, ids, cache: KVCache) -> None:
        """Keep `cache` (which holds the K/V of `ids`, in order) for later requests."""
        key = tuple(int(t) for t in ids)
        if tuple(int(t) for t in cache.ids) != key:
            raise ValueError(f"store: the cache holds {len(cache)} positions that are not the {len(key)} ids given")
        self._entries[key] = cache

    @property
    def nbytes(self) -> int:
        """Bytes of K/V held over every stored sequence."""
        return sum(cache.nbytes for cache in self._entries.values())

    @property
    def positions(self) -> int:
        return sum(len(key) for key in self._entries)

    def lookup(self, ids) -> PrefixHit | None:
        """The stored sequence sharing the longest prefix with `ids` and a copy of its cache cut
        to that prefix; None when nothing is stored."""
        start = time.perf_counter()
        if not self._entries:
            return None
        matches = {key: match_prefix(key, ids) for key in self._entries}
        key = max(matches, key=lambda k: matches[k].reused)          # the first stored wins a tie
        cache = self._entries[key].truncated(matches[key].reused)
        return PrefixHit(key, matches[key], cache, self.nbytes, time.perf_counter() - start)
