"""The LanguageModel protocol every model of the explorer follows."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from .kvcache import KVCache
from .trace import ForwardTrace
from ..tokens.vocab import Vocabulary


@runtime_checkable
class LanguageModel(Protocol):
    """`prefill` processes a whole prompt, `decode` feeds one selected token (and extends the
    cache in place), `full_forward` recomputes a prefix from scratch and is the reference
    every cached step is compared with; `reference_logits` is that reference's logits alone."""
    vocab: Vocabulary
    name: str

    def new_cache(self) -> KVCache: ...

    def prefill(self, ids) -> tuple[ForwardTrace, KVCache]: ...

    def decode(self, token_id: int, cache: KVCache) -> tuple[ForwardTrace, KVCache]: ...

    def full_forward(self, ids) -> ForwardTrace: ...

    def reference_logits(self, ids, last: int) -> np.ndarray: ...


class StepwiseModel:
    """prefill / decode / full_forward of any model that implements `new_cache()` and
    `_forward(ids [n], positions [n], cache) -> ForwardTrace` (which extends the cache)."""

    def prefill(self, ids) -> tuple[ForwardTrace, KVCache]:
        """Process the whole prompt at once; the cache then holds len(ids) positions."""
        ids = self.vocab.id_array(ids, "prompt ids")
        cache = self.new_cache()
        return self._forward(ids, np.arange(len(ids)), cache), cache

    def decode(self, token_id: int, cache: KVCache) -> tuple[ForwardTrace, KVCache]:
        """Feed one selected token at the next position; the cache grows by one (in place)."""
        ids = self.vocab.id_array([token_id], "decode id")
        return self._forward(ids, np.array([len(cache)]), cache), cache

    def feed(self, ids, cache: KVCache) -> ForwardTrace:
        """Feed known tokens at the next positions in one pass, causal among themselves (a
        Prefill that continues a cache: a speculative draft's verification); the cache
        grows by len(ids) (in place)."""
        ids = self.vocab.id_array(ids, "fed ids")
        return self._forward(ids, np.arange(len(cache), len(cache) + len(ids)), cache)

    def prefill_after(self, ids, cache: KVCache) -> tuple[ForwardTrace, KVCache]:
        """A Prefill that starts from `cache` (the K/V of `ids[:len(cache)]`, e.g. a prefix
        cache's copy) and processes only the rest, positions len(cache)..len(ids)-1; the
        cache grows to len(ids) (in place)."""
        ids = self.vocab.id_array(ids, "prompt ids")
        n = len(cache)
        if not 0 <= n < len(ids) or not np.array_equal(cache.ids, ids[:n]):
            raise ValueError(f"prefill_after: the cache holds {n} positions that are not the first of the "
                             f"{len(ids)} prompt ids")
        return self.feed(ids[n:], cache), cache

    def full_forward(self, ids) -> ForwardTrace:
        """The reference: recompute every position of `ids` from scratch, no cache reuse."""
        ids = self.vocab.id_array(ids, "ids")
        return self._forward(ids, np.arange(len(ids)), self.new_cache())

    def reference_logits(self, ids, last: int) -> np.ndarray:  # -> [last, V]
        """The logits of the last `last` positions of `full_forward(ids)`, what the
        recompute check compares; a model may get them without keeping the whole trace."""
        return self.full_forward(ids).logits[-last:]
