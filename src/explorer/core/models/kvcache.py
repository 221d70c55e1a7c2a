"""KVCache: per layer, the keys and values of every processed token."""

from __future__ import annotations

import numpy as np


class KVCache:
    """Its length is the number of tokens that went through the model, never the number of
    tokens selected: a selected token enters the cache only when the next forward feeds it."""

    def __init__(self, n_layers: int, kv_heads: int, head_dim: int,
                 dtype=np.float64, capacity: int = 16):
        # keys positions last: OpenBLAS multiplies queries by them 4x faster than by [g, t, e]
        self._k = [np.zeros((kv_heads, head_dim, capacity), dtype) for _ in range(n_layers)]  # [g, e, cap]
        self._v = [np.zeros((kv_heads, capacity, head_dim), dtype) for _ in range(n_layers)]  # [g, cap, e]
        self._ids = np.zeros(capacity, np.int64)
        self._positions = np.zeros(capacity, np.int64)
        self._len = 0

    def __len__(self) -> int:
        return self._len

    @property
    def n_layers(self) -> int:
        return len(self._k)

    @property
    def ids(self) -> np.ndarray:  # [t] token ids held, in order
        return self._ids[:self._len].copy()

    @property
    def positions(self) -> np.ndarray:  # [t]
        return self._positions[:self._len].copy()

    def keys(self, layer: int) -> np.ndarray:  # [g, t, e] (a view of the [g, e, t] storage)
        return self._k[layer][:, :, :self._len].transpose(0, 2, 1)

    def values(self, layer: int) -> np.ndarray:  # [g, t, e]
        return self._v[layer][:, :self._len]

    def _reserve(self, n: int) -> None:
        need = self._len + n
        cap = self._ids.shape[0]
        if need <= cap:
            return
        while cap < need:
            cap *= 2
        self._k = [_grown(a, 2, cap) for a in self._k]
        self._v = [_grown(a, 1, cap) for a in self._v]
        self._ids, self._positions = _grown(self._ids, 0, cap), _grown(self._positions, 0, cap)

    def extend(self, layer: int, k_new: np.ndarray, v_new: np.ndarray):
        """Write the new positions' K/V ([g, n, e]) of one layer after the held ones and
        return that layer's keys and values including them ([g, t+n, e]).

        The cache length changes only at `commit`, once every layer has written."""
        n = k_new.shape[1]
        end = self._len + n
        if end > self._ids.shape[0]:
            self._reserve(n)
        self._k[layer][:, :, self._len:end] = k_new.transpose(0, 2, 1)
        self._v[layer][:, self._len:end] = v_new
        return self._k[layer][:, :, :end].transpose(0, 2, 1), self._v[layer][:, :end]

    def commit(self, ids, positions) -> None:
        """Record that `ids` at `positions` are now processed."""
        n = len(ids)
        self._reserve(n)
        self._ids[self._len:self._len + n] = ids
        self._positions[self._len:self._len + n] = positions
        self._len += n

    def truncated(self, n: int) -> "KVCache":
        """An independent cache holding only the first `n` positions (a prefix cache hands
        out such a copy: the stored cache is never changed by whoever extends it)."""
        if not 0 <= n <= self._len:
            raise ValueError(f"truncated({n}): the cache holds {self._len} positions")
        other = KVCache.__new__(KVCache)
        cap = max(n, 1)
        other._k = [a[:, :, :cap].copy() for a in self._k]
        other._v = [a[:, :cap].copy() for a in self._v]
        other._ids, other._positions = self._ids[:cap].copy(), self._positions[:cap].copy()
        other._len = n
        return other

    @property
    def nbytes(self) -> int:
        """Bytes of the K/V the held positions take (what a position costs times the length)."""
        return sum(k[:, :, 0].nbytes + v[:, 0].nbytes for k, v in zip(self._k, self._v)) * self._len

    def truncate(self, length: int) -> None:
        """Forget every position from `length` on (a rejected speculative draft): the cache
        then holds what it held at that length; later writes overwrite the dropped K/V."""
        if not 0 <= length <= self._len:
            raise ValueError(f"truncate to {length}: expected 0..{self._len} (the cache length)")
        self._len = length

    def copy(self) -> "KVCache":
        """An independent cache with the same contents (beam search forks prefixes)."""
        other = KVCache.__new__(KVCache)
        other._k = [a.copy() for a in self._k]
        other._v = [a.copy() for a in self._v]
        other._ids, other._positions = self._ids.copy(), self._positions.copy()
        other._len = self._len
        return other


def _grown(a: np.ndarray, axis: int, size: int) -> np.ndarray:
    """`a` padded with zeros along `axis` to `size` entries."""
    pad = [(0, 0)] * a.ndim
    pad[axis] = (0, size - a.shape[axis])
    return np.pad(a, pad)
