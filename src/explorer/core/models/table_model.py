"""TableModel: a LanguageModel whose next-token probabilities are written out by hand (the
course's worked examples), and its JSON file format (`load_table_model`)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import numpy as np

from ..errors import ParamsError
from ..jsonfile import read_json
from .kvcache import KVCache
from ..limits import MAX_TABLE_MODEL_BYTES
from .protocol import StepwiseModel
from .trace import ForwardTrace
from ..tokens.vocab import Vocabulary

FORMAT = "token-explorer/table-model"
VERSION = 1
SUM_TOLERANCE = 1e-6   # how far a row's probabilities may sum from 1 (rounded slide numbers)


@dataclass(frozen=True, eq=False)
class TableModel(StepwiseModel):
    """A LanguageModel: `prefill`, `decode` and `full_forward` read a probability table."""

    vocab: Vocabulary
    rows: dict[tuple[int, ...], np.ndarray]        # context (`after`) -> [V] log-probabilities
    default: np.ndarray                            # [V] log-probabilities (or any logits) otherwise
    tool_call_sequences: tuple[tuple[int, ...], ...] = ()
    name: str = "table"

    def new_cache(self) -> KVCache:
        """An empty cache without layers: it records only the processed ids and positions."""
        return KVCache(n_layers=0, kv_heads=0, head_dim=0)

    def next_logprobs(self, context) -> np.ndarray:  # [t] -> [V]
        """Log-probabilities of the next token after `context`: the row whose `after` is
        the longest suffix of `context`, else the default row."""
        longest = min(max(map(len, self.rows), default=0), len(context))
        tail = tuple(int(t) for t in context[len(context) - longest:])
        for size in range(longest, 0, -1):
            row = self.rows.get(tail[longest - size:])
            if row is not None:
                return row
        return self.default

    def _forward(self, ids, positions, cache: KVCache) -> ForwardTrace:  # [n], [n] -> trace
        start = time.perf_counter()
        key_ids = np.concatenate([cache.ids, ids])                          # [t]
        key_positions = np.concatenate([cache.positions, positions])        # [t]
        held = len(cache)
        logits = np.stack([self.next_logprobs(key_ids[:held + j + 1])       # [n, V]
                           for j in range(len(ids))])
        cache.commit(ids, positions)
        empty = np.zeros((len(ids), 0))                                     # [n, 0]: no hidden width
        return ForwardTrace(ids, positions, key_ids, key_positions, empty, (), empty, logits,
                            time.perf_counter() - start)


def load_table_model(path) -> TableModel:
    """Read and validate a table-model JSON file (format in the module docstring).

    A table model has no layers: each position's logits are log(probability) from a table
    row chosen by the tokens that came before. File format::

        {
          "format": "token-explorer/table-model",
          "version": 1,
          "name": "beam-example",
          "vocabulary": {"pieces": ["<eos>", "A", "B", "D", "E", "F", "<bos>", {"hex": "e5"}],
                         "specials": {"eos": 0, "bos": 6}},
          "default": {"<eos>": 1.0},
          "table": [{"after": ["<bos>"], "probs": {"A": 0.6, "B": 0.4}},
                    {"after": ["<bos>", "A"], "probs": {"E": 0.51, "F": 0.49}}],
          "tool_calls": [["CALL", "read_file", "END_CALL"]]
        }

    - `format`, `version`, `vocabulary`, `default` and `table` are required; `name`,
      `vocabulary.specials` and `tool_calls` are optional. Unknown keys are errors (a typo
      such as "prob" must not silently drop a row).
    - `vocabulary.pieces`: id -> piece. A piece is text, or `{"hex": "e5"}` for a bytes piece
      (a byte-level token that may be only part of a UTF-8 character). Pieces are distinct.
    - A token is written as an integer id or by name: the text of a text piece, or
      `"<0xE5>"` (one `<0x..>` per byte) for a bytes piece. Keys of `probs` and `default`
      are JSON strings, so there an id is written in decimal digits ("3"); a key that names
      a piece always means that piece.
    - `after` is a context, matched against the END of the whole sequence so far (prompt +
      generated). The row with the longest matching `after` wins; `default` applies when no
      row matches. An empty `after` would match every sequence, so it is an error: write
      those probabilities under `default`. Two rows may not share an `after`.
    - `probs`: token -> probability. Missing tokens have probability 0 (logit -inf). Every
      probability is in [0, 1] and each row sums to 1 within 1e-6.
    - `tool_calls`: token sequences that form one complete tool-call item (the stop-reason
      lesson ends generation with `tool_call` when one is produced).

    Every validation error is a ParamsError naming the file and the JSON key path, e.g.
    `beam.json: table[2].probs: sums to 0.97, expected 1`."""
    path = Path(path)
    data = read_json(path, ParamsError, MAX_TABLE_MODEL_BYTES, "table-model file")
    return table_model_from_dict(data, source=str(path))


def table_model_from_dict(data, source: str = "<dict>") -> TableModel:
    """Validate parsed JSON and build the model; errors name `source` and the key path."""
    return _Parser(source).model(data)


class _Parser:
    """Validation of one table-model document; every error names source and key path."""

    def __init__(self, source: str):
        self.source = source
        self.size = 0                       # vocabulary size, once the pieces are read
        self.by_name: dict[str, int] = {}   # piece name -> id

    def fail(self, where: str, message: str) -> NoReturn:
        raise ParamsError(f"{self.source}: {where}: {message}")

    def object(self, value, where: str) -> dict:
        if not isinstance(value, dict):
            self.fail(where, f"expected an object, got {_kind(value)}")
        return value

    def keys(self, value, where: str, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict:
        """`value` as an object with every required key and no unknown one."""
        self.object(value, where)
        for key in required:
            if key not in value:
                self.fail(where, f"missing key {key!r}")
        for key in value:
            if key not in required + optional:
                self.fail(where, f"unknown key {key!r} (expected {', '.join(required + optional)})")
        return value

    def list(self, value, where: str) -> list:
        if not isinstance(value, list):
            self.fail(where, f"expected a list, got {_kind(value)}")
        return value

    def model(self, data) -> TableModel:
        self.keys(data, "(top level)", ("format", "version", "vocabulary", "default", "table"),
                  ("name", "tool_calls"))
        if data["format"] != FORMAT:
            self.fail("format", f"{data['format']!r}, expected {FORMAT!r}")
        if data["version"] != VERSION or isinstance(data["version"], bool):
            self.fail("version", f"{data['version']!r}, expected {VERSION}")
        name = data.get("name", "table")
        if not isinstance(name, str) or not name:
            self.fail("name", f"expected a non-empty string, got {name!r}")
        vocab = self.vocabulary(data["vocabulary"])
        default = self.probs(data["default"], "default")
        rows: dict[tuple[int, ...], np.ndarray] = {}
        row_of: dict[tuple[int, ...], int] = {}
        for i, row in enumerate(self.list(data["table"], "table")):
            where = f"table[{i}]"
            self.keys(row, where, ("after", "probs"))
            after = self.tokens(row["after"], f"{where}.after")
            if not after:
                self.fail(f"{where}.after", "empty: it would match every sequence; "
                                            "put these probabilities under 'default'")
            if after in row_of:
                self.fail(f"{where}.after", f"same context as table[{row_of[after]}]")
            row_of[after] = i
            rows[after] = self.probs(row["probs"], f"{where}.probs")
        calls = []
        for i, seq in enumerate(self.list(data.get("tool_calls", []), "tool_calls")):
            call = self.tokens(seq, f"tool_calls[{i}]")
            if not call:
                self.fail(f"tool_calls[{i}]", "empty, expected at least one token")
            calls.append(call)
        return TableModel(vocab, rows, default, tuple(calls), name)

    def vocabulary(self, value) -> Vocabulary:
        self.keys(value, "vocabulary", ("pieces",), ("specials",))
        pieces = [self.piece(p, f"vocabulary.pieces[{i}]")
                  for i, p in enumerate(self.list(value["pieces"], "vocabulary.pieces"))]
        if not pieces:
            self.fail("vocabulary.pieces", "empty, expected at least one piece")
        for i, piece in enumerate(pieces):
            name = _name(piece)
            if name in self.by_name:
                self.fail(f"vocabulary.pieces[{i}]", f"{name!r} is already piece {self.by_name[name]}")
            self.by_name[name] = i
        self.size = len(pieces)
        specials = self.object(value.get("specials", {}), "vocabulary.specials")
        return Vocabulary(tuple(pieces), {
            role: self.token(t, f"vocabulary.specials.{role}") for role, t in specials.items()})

    def piece(self, value, where: str) -> str | bytes:
        if isinstance(value, str):
            return value
        if not isinstance(value, dict):
            self.fail(where, f'expected text or {{"hex": ...}}, got {_kind(value)}')
        self.keys(value, where, ("hex",))
        try:
            data = bytes.fromhex(value["hex"])
        except (TypeError, ValueError):
            self.fail(f"{where}.hex", f"{value['hex']!r} is not a hex string such as \"e5\"")
        if not data:
            self.fail(f"{where}.hex", "empty, expected at least one byte")
        return data

    def token(self, value, where: str) -> int:
        """An id from a piece name or an integer id."""
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            self.fail(where, f"expected a piece or an integer id, got {_kind(value)}")
        if isinstance(value, str):
            if value not in self.by_name:
                self.fail(where, f"unknown piece {value!r}")
            return self.by_name[value]
        if not 0 <= value < self.size:
            self.fail(where, f"id {value} is outside the vocabulary (expected 0..{self.size - 1})")
        return value

    def tokens(self, value, where: str) -> tuple[int, ...]:
        return tuple(self.token(t, f"{where}[{i}]") for i, t in enumerate(self.list(value, where)))

    def probs(self, value, where: str) -> np.ndarray:  # -> [V] log-probabilities
        p = np.zeros(self.size)
        key_of: dict[int, str] = {}
        for key, prob in self.object(value, where).items():
            is_id = key not in self.by_name and key.isascii() and key.isdigit()
            token = self.token(int(key) if is_id else key, f"{where}.{key}")
            if token in key_of:
                self.fail(f"{where}.{key}", f"same token as {key_of[token]!r}")
            key_of[token] = key
            if isinstance(prob, bool) or not isinstance(prob, (int, float)):
                self.fail(f"{where}.{key}", f"expected a probability, got {_kind(prob)}")
            if not 0 <= prob <= 1:   # also rejects NaN
                self.fail(f"{where}.{key}", f"{prob} is not a probability in [0, 1]")
            p[token] = prob
        total = math.fsum(p)
        if abs(total - 1) > SUM_TOLERANCE:
            self.fail(where, f"sums to {total:.6g}, expected 1")
        logp = np.full(self.size, -np.inf)
        logp[p > 0] = np.log(p[p > 0])
        logp.flags.writeable = False         # rows are shared by every trace that reads them
        return logp


def _name(piece: str | bytes) -> str:
    """How a file refers to a piece: its text, or `<0xE5>`-style for bytes."""
    return piece if isinstance(piece, str) else "".join(f"<0x{b:02X}>" for b in piece)


def _kind(value) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), repr(value))
