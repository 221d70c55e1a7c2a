"""The LanguageModel protocol every model of the explorer follows.

`prefill` processes a whole prompt, `decode` feeds one selected token (and extends the
cache in place), `full_forward` recomputes a prefix from scratch and is the reference
every cached step is compared with.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .kvcache import KVCache
from .trace import ForwardTrace
from .vocab import Vocabulary


@runtime_checkable
class LanguageModel(Protocol):
    vocab: Vocabulary
    name: str

    def new_cache(self) -> KVCache: ...

    def prefill(self, ids) -> tuple[ForwardTrace, KVCache]: ...

    def decode(self, token_id: int, cache: KVCache) -> tuple[ForwardTrace, KVCache]: ...

    def full_forward(self, ids) -> ForwardTrace: ...
