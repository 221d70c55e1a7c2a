"""SentencePiece-style tokenization (GGUF `tokenizer.ggml.model = "llama"`, Gemma's) as a
Vocabulary."""

from __future__ import annotations

import heapq
import re
from array import array
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..errors import PromptError
from .vocab import Vocabulary

SPACE = "\u2581"            # "▁": SentencePiece's spelling of a space
NORMAL, CONTROL, USER_DEFINED, BYTE = 1, 3, 4, 6     # tokenizer.ggml.token_type values
_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def _where(types: np.ndarray, kind: int) -> list[int]:
    """The ids of the tokens of one type."""
    return np.flatnonzero(types == kind).tolist()


@dataclass(frozen=True, eq=False)     # compared by identity, like the models that hold it
class SentencePieceVocabulary(Vocabulary):
    """pieces: the real bytes of every token; specials: roles ("bos", "eos", "eot", ...).

    tokens: the GGUF spelling ("▁capital", "<0xE6>"); scores: one per token, higher merges
    first; control: ids left out of decoded text; user_defined: the texts cut out first.

    Encoding, as llama.cpp runs it:
    1. `<bos>` first (when the file says `tokenizer.ggml.add_bos_token`);
    2. tokens the file marks user-defined (runs of newlines or spaces, `[multimodal]`, ...)
       are cut out of the text wherever they occur, longest first;
    3. in the rest every space becomes "▁" (U+2581), the text is split into characters, and
       neighbouring pieces are merged while their concatenation is a token, the pair whose
       token has the highest score first (the leftmost of equals first);
    4. a piece that is still no token (a character the vocabulary lacks) is written as its
       UTF-8 bytes, the byte tokens `<0x00>` ... `<0xFF>` ("byte fallback").
    Pieces are the real bytes of each token (a byte token is that byte, "▁" is a space), so
    `decode` joins byte tokens into a character only once its last byte arrives, and
    `display_piece` shows a lone byte as `<0xE6>`."""
    gguf_tokenizer: ClassVar[str] = "llama"
    tokens: tuple[str, ...] = ()
    scores: array = field(default_factory=lambda: array("f"))   # float32, one per token
    control: frozenset = frozenset()
    user_defined: tuple[str, ...] = ()     # longest first
    add_bos: bool = True
    _ids: dict = field(default_factory=dict, repr=False)         # token text -> id
    _bytes: tuple = field(default=(), repr=False)                # byte value -> id of <0xXX>

    @classmethod
    def build(cls, tokens, scores, types, specials: dict, add_bos: bool = True):
        """From the GGUF lists: tokens, scores, token types; specials {role: id}. (Numbers
        as numpy arrays or lists: 262,144 of each for Gemma, read at every load.)"""
        tokens = list(tokens)
        types = np.asarray(types)                                             # [V]
        ids = dict(zip(reversed(tokens), range(len(tokens) - 1, -1, -1)))   # the first id of a text
        pieces = [tok.replace(SPACE, " ").encode("utf-8") for tok in tokens]
        byte_ids = [None] * 256
        for i in _where(types, BYTE):
            hit = _BYTE_TOKEN.fullmatch(tokens[i])
            if hit:
                byte_ids[int(hit.group(1), 16)] = i
                pieces[i] = bytes([int(hit.group(1), 16)])
        control = frozenset(_where(types, CONTROL)) | frozenset(specials.values())
        user = sorted((tokens[i] for i in _where(types, USER_DEFINED) if tokens[i]), key=len, reverse=True)
        return cls(tuple(pieces), dict(specials), tuple(tokens), array("f", np.asarray(scores, np.float32).tobytes()),
                   control, tuple(user), bool(add_bos), ids, tuple(byte_ids))

    def __repr__(self) -> str:
        return f"SentencePieceVocabulary({len(self.pieces)} tokens, specials={self.specials})"

    def is_special(self, token_id: int) -> bool:
        return token_id in self.control

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`, after `<bos>` if the model adds it (control tokens written
        in the text are plain text, as llama.cpp reads a prompt by default)."""
        if not text:
            raise PromptError("prompt is empty: expected at least one token")
        ids = [self.specials["bos"]] if self.add_bos and "bos" in self.specials else []
        for part in self._partition(text):
            if isinstance(part, int):
                ids.append(part)
            else:
                ids.extend(self._merge(part.replace(" ", SPACE)))
        return ids

    def _partition(self, text: str) -> list:  # -> pieces of text (str) and user-defined ids (int)
        """`text` with every user-defined token cut out, longest token first."""
        parts: list = [text]
        for token in self.user_defined:
            if not any(isinstance(p, str) and token in p for p in parts):
                continue
            cut = []
            for p in parts:
                if not isinstance(p, str) or token not in p:
                    cut.append(p)
                    continue
                for k, chunk in enumerate(p.split(token)):
                    if k:
                        cut.append(self._ids[token])
                    if chunk:
                        cut.append(chunk)
            parts = cut
        return parts

    def _merge(self, text: str) -> list[int]:
        """SentencePiece's merges over the characters of `text` (spaces already "▁")."""
        ids, scores = self._ids, self.scores
        starts = list(range(len(text)))          # symbol i: text[starts[i]:starts[i] + sizes[i]]
        sizes = [1] * len(text)
        prev = list(range(-1, len(text) - 1))
        nxt = list(range(1, len(text) + 1))
        nxt[-1] = -1
        queue: list = []                         # (-score, left, size, right)

        def consider(left: int, right: int) -> None:
            if left < 0 or right < 0:
                return
            size = sizes[left] + sizes[right]
            token = ids.get(text[starts[left]:starts[left] + size])
            if token is not None:
                heapq.heappush(queue, (-scores[token], left, size, right))

        for i in range(1, len(text)):
            consider(i - 1, i)
        while queue:
            _, left, size, right = heapq.heappop(queue)
            if sizes[left] == 0 or sizes[right] == 0 or sizes[left] + sizes[right] != size:
                continue                         # one of the two was merged since
            sizes[left], sizes[right] = size, 0
            nxt[left] = nxt[right]
            if nxt[right] >= 0:
                prev[nxt[right]] = left
            consider(prev[left], left)
            consider(left, nxt[left])
        out, i = [], 0
        while i != -1:
            piece = text[starts[i]:starts[i] + sizes[i]]
            token = ids.get(piece)
            if token is not None:
                out.append(token)
            else:                                # only a single character can be no token
                out.extend(self._byte_id(b, piece) for b in piece.encode("utf-8"))
            i = nxt[i]
        return out

    def _byte_id(self, value: int, piece: str) -> int:
        token = self._bytes[value] if self._bytes else None
        if token is None:
            raise PromptError(f"prompt: the character {piece!r} is not in the vocabulary and it "
                              f"has no byte token <0x{value:02X}> to spell it")
        return token
