"""What the KV cache costs, per layer kind.

A global layer keeps the K/V of every position; a sliding-window layer reads only the
latest w positions, so a cache that drops what it no longer reads keeps at most w of them
(Gemma 3 270M: 15 such layers with w = 512 and 3 global ones).
"""

from __future__ import annotations

from dataclasses import dataclass

from .decoder import DecoderConfig


@dataclass(frozen=True)
class LayerKind:
    """Layers of one kind and what one position costs in each."""

    window: int            # 0: global (keeps every position); w: keeps at most the latest w
    layers: int            # how many layers are of this kind
    kv_heads: int
    head_dim: int
    itemsize: int          # bytes per number

    @property
    def bytes_per_layer(self) -> int:
        """K and V of one position in one layer: 2 x K/V heads x head size x bytes."""
        return 2 * self.kv_heads * self.head_dim * self.itemsize

    @property
    def bytes_per_position(self) -> int:
        """One position in every layer of this kind."""
        return self.layers * self.bytes_per_layer

    def kept(self, n: int) -> int:
        """Positions a layer of this kind keeps after n positions."""
        return min(n, self.window) if self.window else n

    def bytes_at(self, n: int) -> int:
        return self.kept(n) * self.bytes_per_position


@dataclass(frozen=True)
class KVMemory:
    kinds: tuple[LayerKind, ...]       # the sliding-window kinds (by window), then the global one

    @property
    def bytes_per_position(self) -> int:
        """What one more position costs while no window is full."""
        return sum(k.bytes_per_position for k in self.kinds)

    def bytes_at(self, n: int) -> int:
        """Bytes of a cache that keeps every global position and the latest `window` of each local layer."""
        return sum(k.bytes_at(n) for k in self.kinds)


def kv_memory(config: DecoderConfig, itemsize: int) -> KVMemory:
    """The layer kinds of a model and the K/V bytes each costs (`itemsize`: bytes per stored number)."""
    windows = [config.window(i) for i in range(config.n_layers)]
    order = sorted(set(windows), key=lambda w: (w == 0, w))          # local kinds first, global last
    return KVMemory(tuple(LayerKind(w, windows.count(w), config.n_kv_heads, config.head_dim, itemsize)
                          for w in order))
