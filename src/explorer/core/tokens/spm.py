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
from .specials import BYTE, CONTROL, UNKNOWN, USER_DEFINED, by_length, split_specials
from .vocab import Vocabulary, check_text

SPACE = "\u2581"            # "▁": SentencePiece's spelling of a space
_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def _where(types: np.ndarray, kind: int) -> list[int]:
    """The ids of the tokens of one type."""
    return np.flatnonzero(types == kind).tolist()


@dataclass(frozen=True, eq=False)     # compared by identity, like the models that hold it
class SentencePieceVocabulary(Vocabulary):
    """pieces: the real bytes of every token; specials: roles ("bos", "eos", "eot", ...).

    tokens: the GGUF spelling ("▁capital", "<0xE6>"); scores: one per token, higher merges
    first; control: ids left out of decoded text; in_text: ((text, id), ...) of the tokens
    recognised when written in the text, longest first.

    Encoding, as llama.cpp runs it (llm_tokenizer_spm_session, with parse_special):
    1. `<bos>` first (when the file says `tokenizer.ggml.add_bos_token`);
    2. tokens the file marks control, user-defined or unknown (`<start_of_turn>`, runs of
       newlines, `[multimodal]`, ...) are cut out of the text wherever they occur, longest
       first (`split_specials`);
    3. each piece of text left gets a leading space when `add_space_prefix` and it is the
       first or follows a special token (Llama 2, Mistral and Phi-3 files; not Gemma's);
       every space becomes "▁" (U+2581), the text is split into characters, and
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
    in_text: tuple = ()
    rstrip: frozenset = frozenset()     # ids after which the prompt's whitespace is dropped (Phi-3)
    add_bos: bool = True
    add_eos: bool = False
    add_space_prefix: bool = False
    _ids: dict = field(default_factory=dict, repr=False)         # token text -> id
    _bytes: tuple = field(default=(), repr=False)                # byte value -> id of <0xXX>

    @classmethod
    def build(cls, tokens, scores, types, specials: dict, add_bos: bool = True, add_eos: bool = False,
              add_space_prefix: bool = False, control=(), ends=(), rstrip=(),
              chat_template: str | None = None):
        """From the GGUF lists: tokens, scores, token types; specials {role: id}; control:
        more ids to treat as control tokens (llama.cpp's by their text); ends: more ids that
        end generation. (Numbers as numpy arrays or lists: 262,144 of each for Gemma, read at
        every load.)"""
        tokens = list(tokens)
        types = np.asarray(types)                                             # [V]
        ids = dict(zip(tokens, range(len(tokens))))         # llama.cpp's token_to_id: the last id of a text
        pieces = [tok.replace(SPACE, " ").encode("utf-8") for tok in tokens]
        for i in _where(types, BYTE):
            hit = _BYTE_TOKEN.fullmatch(tokens[i])
            if hit:
                pieces[i] = bytes([int(hit.group(1), 16)])
        # llama.cpp's byte_to_token: the token "<0xXX>", else the byte itself as text
        byte_ids = [ids.get(f"<0x{b:02X}>", ids.get(chr(b)) if b < 128 else None) for b in range(256)]
        extra = frozenset(int(i) for i in control)
        control_ids = frozenset(_where(types, CONTROL)) | frozenset(_where(types, UNKNOWN)) | extra
        found = sorted(control_ids | frozenset(_where(types, USER_DEFINED)))
        return cls(tuple(pieces), dict(specials), frozenset(int(i) for i in ends), chat_template, tokens=tuple(tokens),
                   scores=array("f", np.asarray(scores, np.float32).tobytes()),
                   control=control_ids | frozenset(specials.values()), in_text=by_length(tokens, found),
                   add_bos=bool(add_bos), add_eos=bool(add_eos), add_space_prefix=bool(add_space_prefix),
                   rstrip=frozenset(int(i) for i in rstrip), _ids=ids, _bytes=tuple(byte_ids))

    def __repr__(self) -> str:
        return f"SentencePieceVocabulary({len(self.pieces)} tokens, specials={self.specials})"

    def is_special(self, token_id: int) -> bool:
        return token_id in self.control

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`, after `<bos>` if the model adds it; special tokens written
        in it (`<start_of_turn>`) are recognised."""
        check_text(text)
        ids = [self.specials["bos"]] if self.add_bos and "bos" in self.specials else []
        after_special = True                     # the text's start counts as after a special token
        for part in split_specials(text, self.in_text, self.rstrip):
            if isinstance(part, int):
                ids.append(part)
                after_special = True
                continue
            if self.add_space_prefix and after_special:
                part = " " + part
            ids.extend(self._merge(part.replace(" ", SPACE)))
            after_special = False
        if self.add_eos and "eos" in self.specials:
            ids.append(self.specials["eos"])
        return ids

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
