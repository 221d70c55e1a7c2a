"""Vocabulary: token id <-> piece, special ids, and the encode/decode of text (pieces are
text, or bytes that may be only part of a UTF-8 character)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar

import numpy as np

from ..elide import elided
from ..errors import PromptError

END_ROLES = ("eos", "eot", "eom")   # special roles whose token ends generation
REASONING_ROLES = ("think", "think_end")   # special roles of the markers around a reasoning segment
REASONING_PIECES = (("<think>", "</think>"),)   # marker pieces of models that do not name the roles


def check_text(text: str) -> None:
    """PromptError unless `text` is a non-empty prompt of valid Unicode: bytes that were
    not UTF-8 (a terminal in another encoding) arrive as lone surrogates, which no
    tokenizer can encode."""
    if not text:
        raise PromptError("prompt is empty: expected at least one token")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start]
        byte = f" (byte 0x{ord(bad) - 0xDC00:02X})" if 0xDC80 <= ord(bad) <= 0xDCFF else ""
        raise PromptError(f"prompt: character {exc.start + 1} is not valid text{byte}: "
                          "expected UTF-8 (is the terminal set to another encoding?)") from None


@dataclass(frozen=True)
class Vocabulary:
    pieces: tuple[str | bytes, ...]
    specials: dict[str, int] = field(default_factory=dict)  # role ("eos", "pad", "bos") -> id
    ends: frozenset[int] = frozenset()     # more ids that end generation (llama.cpp's by their text)
    chat_template: str | None = None       # the file's `tokenizer.chat_template` (Jinja), if any
    gguf_tokenizer: ClassVar[str | None] = None   # the GGUF `tokenizer.ggml.model` read as this kind (None: none)

    def __len__(self) -> int:
        return len(self.pieces)

    @property
    def eos_id(self) -> int | None:
        return self.specials.get("eos")

    @property
    def end_ids(self) -> frozenset[int]:
        """Every id that ends generation: EOS, an end-of-turn or end-of-message token if the
        vocabulary names one (SmolLM2's `<|endoftext|>` beside its EOS `<|im_end|>`), and
        `ends` (Llama 3's `<|eot_id|>` and `<|end_of_text|>`, whichever the file calls EOS)."""
        return frozenset(self.specials[role] for role in END_ROLES if role in self.specials) | self.ends

    @cached_property
    def reasoning_markers(self) -> tuple[int, int] | None:
        """(opening id, closing id) of a reasoning segment: the special roles "think" and
        "think_end", else the first pair of REASONING_PIECES the vocabulary holds; None if it
        has no such markers (its generations have no reasoning tokens)."""
        if all(role in self.specials for role in REASONING_ROLES):
            return self.specials[REASONING_ROLES[0]], self.specials[REASONING_ROLES[1]]
        index = {}                  # "<think>"-like pieces (text, or the bytes of a byte-level vocabulary) -> id
        for i, p in enumerate(self.pieces):
            text = p.decode("utf-8", "replace") if isinstance(p, bytes) else p
            if "think" in text and text.startswith("<") and text.endswith(">"):
                index.setdefault(text, i)
        return next(((index[a], index[b]) for a, b in REASONING_PIECES if a in index and b in index), None)

    def is_special(self, token_id: int) -> bool:
        return token_id in self.specials.values()

    def check_ids(self, ids, what: str = "token ids") -> list[int]:
        """Return ids as ints, or raise PromptError naming the first id outside the vocabulary."""
        out = []
        for i, t in enumerate(ids):
            t = int(t)
            if not 0 <= t < len(self.pieces):
                raise PromptError(
                    f"{what}: id {t} at index {i} is outside the vocabulary "
                    f"(expected 0..{len(self.pieces) - 1})")
            out.append(t)
        return out

    def id_array(self, ids, what: str = "token ids") -> np.ndarray:  # -> [n] int64
        """Checked, non-empty ids as an array (what every forward pass takes)."""
        checked = self.check_ids(ids, what)
        if not checked:
            raise PromptError(f"{what}: empty, expected at least one token")
        return np.asarray(checked, np.int64)

    def piece_id(self, piece: str, what: str = "piece") -> int:
        """The id of a text piece, written as the vocabulary spells it."""
        try:
            return self.pieces.index(piece)
        except ValueError:
            raise PromptError(f"{what}: not a piece of the vocabulary") from None

    def piece_text(self, token_id: int) -> str:
        """A piece's text as it is (what JSON carries), or `<0xE5>` for bytes that are not
        a whole character."""
        piece = self.pieces[token_id]
        if isinstance(piece, bytes):
            try:
                return piece.decode("utf-8")
            except UnicodeDecodeError:
                return _byte_marks(piece)
        return piece

    def display_piece(self, token_id: int) -> str:
        """A piece as a teacher should see it: `piece_text` with spaces, line breaks and tabs
        made visible (␣, ↵, ⇥: " Paris" and "Paris" are different tokens and must look it)."""
        return self.piece_text(token_id).translate(_VISIBLE)

    def display_pieces(self, ids, ends: int | None = None) -> str:
        """Pieces of a token sequence separated by spaces, so the token boundaries show;
        with `ends`, a long sequence keeps that many pieces from each end (see `elided`)."""
        pieces = [self.display_piece(int(i)) for i in ids]
        return " ".join(pieces) if ends is None else elided(pieces, " ", ends)

    def split_characters(self, ids) -> list[str]:
        """Per token of `ids`, the characters it holds only some bytes of ("" for a token
        whose text is whole). The two tokens <0xE6><0x88> and <0x91> both give "我": a
        class sees which bytes make which character. Special tokens hold none."""
        pieces = [b"" if self.is_special(int(t)) else self.pieces[int(t)] for t in ids]
        split = [""] * len(pieces)
        if all(isinstance(p, str) or _is_utf8(p) for p in pieces):
            return split                           # every token's text is whole (most prompts)
        blob, owner = b"", []                      # owner[j]: the token that holds byte j
        for n, piece in enumerate(pieces):
            piece = piece.encode("utf-8") if isinstance(piece, str) else piece
            blob += piece
            owner += [n] * len(piece)
        start = 0
        while start < len(blob):
            end = start + _char_length(blob[start])
            try:
                char = blob[start:end].decode("utf-8")
            except UnicodeDecodeError:             # not a character: a byte on its own
                start += 1
                continue
            holders = sorted(set(owner[start:end]))
            if len(holders) > 1:
                for n in holders:
                    split[n] += char
            start = end
        return split

    def decode(self, ids) -> str:
        """Text of a token sequence; special tokens are left out, and an incomplete
        trailing UTF-8 character is held back until the bytes that finish it arrive."""
        data = self._utf8_of(ids)
        return data[:_complete_prefix(data)].decode("utf-8", errors="replace")

    def held_back(self, ids) -> str:
        """The bytes `decode` holds back (an incomplete last character), written as
        `piece_text` writes bytes: "<0xE7><0x88>" ("" when the text is whole)."""
        data = self._utf8_of(ids)
        return _byte_marks(data[_complete_prefix(data):])

    def _utf8_of(self, ids) -> bytes:
        """The UTF-8 bytes of a token sequence, special tokens left out."""
        pending = b""
        for t in ids:
            t = int(t)
            if self.is_special(t):
                continue
            piece = self.pieces[t]
            pending += piece.encode("utf-8") if isinstance(piece, str) else piece
        return pending

    def encode(self, text: str) -> list[int]:
        """Greedy longest-match over the text pieces (the teaching tokenizer).

        Raises PromptError naming the first character no piece covers."""
        check_text(text)
        by_text = {p: i for i, p in enumerate(self.pieces)
                   if isinstance(p, str) and p and not self.is_special(i)}
        longest = max((len(p) for p in by_text), default=0)
        ids, pos = [], 0
        while pos < len(text):
            for size in range(min(longest, len(text) - pos), 0, -1):
                hit = by_text.get(text[pos:pos + size])
                if hit is not None:
                    ids.append(hit)
                    pos += size
                    break
            else:
                known = " ".join(repr(p) for p in by_text)
                raise PromptError(
                    f"prompt: character {text[pos]!r} at position {pos} is not in the "
                    f"vocabulary (known pieces: {known})")
        return ids


_BREAKS = {"\n": "↵", "\t": "⇥", "\r": "␍"}       # line breaks and tabs, as marks
_VISIBLE = str.maketrans({" ": "␣", **_BREAKS})
_ONE_LINE = str.maketrans(_BREAKS)


def one_line(text: str) -> str:
    """`text` with its line breaks and tabs shown as ↵ ⇥ ␍, for a heading that keeps to one line."""
    return text.translate(_ONE_LINE)


def _byte_marks(data: bytes) -> str:
    """Bytes that are not a whole character, as `<0xE5>` marks."""
    return "".join(f"<0x{b:02X}>" for b in data)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _char_length(lead: int) -> int:
    """Bytes of the UTF-8 character that starts with `lead` (1 for a byte no character starts with)."""
    return 2 if lead >> 5 == 0b110 else 3 if lead >> 4 == 0b1110 else 4 if lead >> 3 == 0b11110 else 1


def _complete_prefix(data: bytes) -> int:
    """Length of the longest prefix of `data` that does not end inside a UTF-8 character."""
    n = len(data)
    for back in range(1, min(4, n) + 1):
        b = data[n - back]
        if b & 0b1100_0000 == 0b1000_0000:   # continuation byte: keep looking for the lead
            continue
        return n if back >= _char_length(b) else n - back
    return n
