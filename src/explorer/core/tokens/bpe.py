"""Byte-level BPE (GPT-2 style) as a Vocabulary, the tokenizer of a real model, and the
default system prompt its chat template names (`template_system_prompt`)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from typing import ClassVar

from ..errors import PromptError
from .vocab import Vocabulary, check_text


# Pre-tokenisers by `tokenizer.ggml.pre`: does it isolate number characters first?
PRE_TOKENIZERS = {"smollm": True, "starcoder": True, "refact": True, "codeshell": True,
                  "gpt-2": False, "gpt2": False}

# Unicode White_Space (what \s means in the regex engines the tokenizers were made with)
_WHITESPACE = frozenset("\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
                        "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
_CONTRACTIONS = ("s", "t", "re", "ve", "m", "ll", "d")
_WORD_CACHE_LIMIT = 20000     # pre-tokens remembered with their ids


# a ChatML template's system turn written as literal text (not from a message variable)
_TEMPLATE_SYSTEM = re.compile(r"<\|im_start\|>system\n([^'\"{}<]+)<\|im_end\|>")


def template_system_prompt(template) -> str | None:
    """The system prompt a ChatML chat template (`tokenizer.chat_template`, Jinja) writes when
    the conversation brings none, or None: the literal text of its system turn. SmolLM2's
    template writes "You are a helpful AI assistant named SmolLM, trained by Hugging Face"."""
    found = _TEMPLATE_SYSTEM.search(template) if isinstance(template, str) else None
    return found.group(1) if found else None


@lru_cache(maxsize=1)
def byte_to_unicode() -> dict[int, str]:
    """GPT-2's table: every byte -> one printable character (printable bytes map to themselves)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


@lru_cache(maxsize=1)
def _byte_characters() -> dict[int, str]:
    """str.translate's table from GPT-2's characters back to their bytes (as the
    characters 0-255); the characters below 256 that are no byte's stand-in become one no
    byte has (U+FFFF), so that a token holding them fails the Latin-1 encoding."""
    table = {ord(ch): chr(b) for b, ch in byte_to_unicode().items()}
    return {**{c: "\uffff" for c in range(256)}, **table}


def _token_bytes(token: str) -> bytes:
    """A token's real bytes from its GPT-2 spelling; a token with characters that stand
    for no byte (a control token's, say) is its own UTF-8. (One translate per token: the
    vocabulary of 49,152 is read at every model load.)"""
    try:
        return token.translate(_byte_characters()).encode("latin-1")
    except UnicodeEncodeError:
        return token.encode("utf-8")


@lru_cache(maxsize=4096)
def _char_class(c: str) -> str:
    """'S' whitespace, 'L' letter, 'N' number, 'O' anything else."""
    if c in _WHITESPACE:
        return "S"
    cat = unicodedata.category(c)[0]
    return cat if cat in "LN" else "O"


def gpt2_split(text: str) -> list[str]:
    """GPT-2's pre-tokenisation rule (see the module doc), written out as a scanner."""
    out, i, n = [], 0, len(text)
    cls = [_char_class(c) for c in text]
    while i < n:
        c = text[i]
        if c == "'":
            suffix = next((s for s in _CONTRACTIONS if text.startswith(s, i + 1)), None)
            if suffix is not None:
                out.append(text[i:i + 1 + len(suffix)])
                i += 1 + len(suffix)
                continue
        j = i + 1 if c == " " and i + 1 < n and cls[i + 1] != "S" else i
        kind = cls[j]
        if kind != "S":                          # ' ?' then a run of letters / numbers / others
            j += 1
            while j < n and cls[j] == kind:
                j += 1
            out.append(text[i:j])
            i = j
            continue
        j = i                                    # whitespace: \s+(?!\S) | \s+
        while j < n and cls[j] == "S":
            j += 1
        if j < n and j - i >= 2:                 # leave the last one to prefix the next word
            j -= 1
        out.append(text[i:j])
        i = j
    return out


def pre_tokenize(text: str, split_digits: bool = True) -> list[str]:
    """Pre-tokens of plain text (no control tokens): numbers one by one, then GPT-2's rule."""
    if not split_digits:
        return gpt2_split(text)
    out, start = [], 0
    for i, c in enumerate(text):
        if _char_class(c) == "N":
            if start < i:
                out.extend(gpt2_split(text[start:i]))
            out.append(c)
            start = i + 1
    if start < len(text):
        out.extend(gpt2_split(text[start:]))
    return out


@dataclass(frozen=True, eq=False)     # compared by identity, like the models that hold it
class BPEVocabulary(Vocabulary):
    """pieces: the real bytes of every token. specials: roles ("bos", "eos", "pad", "unk").

    tokens / merges: the GGUF spelling (GPT-2 byte characters); control: ids of the
    tokens recognised when written in the text and left out of decoded text; chat_system:
    the default system prompt of the model's chat template (`template_system_prompt`).

    A GGUF file of the "gpt2" tokenizer family stores its tokens as text in which each
    byte is spelled by one printable character (GPT-2's byte-to-unicode table: the space
    0x20 is "Ġ", the newline "Ċ"), and its merges as "left right" pairs in rank order.
    Here the pieces are the real bytes again, so `display_piece` shows a lone byte of a
    Chinese character as `<0xE6>` and `decode` holds back an incomplete character.

    Encoding, as the model was trained:
    1. control tokens written in the text (`<|im_start|>`, `<|im_end|>`, ...) become their ids;
    2. the rest is pre-tokenised: SmolLM first isolates every number character (digits are
       split one by one), then applies GPT-2's rule
       `'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+`;
    3. each pre-token's bytes are merged pair by pair, lowest merge rank first."""
    gguf_tokenizer: ClassVar[str] = "gpt2"
    tokens: tuple[str, ...] = ()
    merges: tuple[str, ...] = ()
    control: frozenset = frozenset()
    split_digits: bool = True
    _ids: dict = field(default_factory=dict, repr=False)       # token text -> id
    _ranks: dict = field(default_factory=dict, repr=False)     # "left right" -> rank
    _words: dict = field(default_factory=dict, repr=False)     # pre-token -> ids
    _special_re: object = field(default=None, repr=False)
    chat_system: str | None = None

    @classmethod
    def build(cls, tokens, merges, specials: dict, control=(), split_digits: bool = True,
              chat_system: str | None = None):
        """From the GGUF lists: tokens (GPT-2 spelling), merges ("a b"), specials {role: id}."""
        control = frozenset(int(i) for i in control) | frozenset(specials.values())
        pieces = tuple(tok.encode("utf-8") if i in control else _token_bytes(tok) for i, tok in enumerate(tokens))
        # keyed by the merge's own text "left right" (a symbol holds no space: GPT-2 spells
        # the space byte "Ġ"), the first rank of a repeated merge: 49,000 (left, right)
        # tuples cost a quarter of the tokenizer's construction and as much again in the
        # garbage collector's passes over them
        ranks = dict(zip(reversed(merges), range(len(merges) - 1, -1, -1)))
        by_length = sorted((tokens[i] for i in control), key=len, reverse=True)
        special_re = re.compile("(" + "|".join(re.escape(t) for t in by_length) + ")") if by_length else None
        return cls(pieces, dict(specials), tuple(tokens), tuple(merges), control, split_digits,
                   dict(zip(tokens, range(len(tokens)))), ranks, {}, special_re, chat_system)

    def __repr__(self) -> str:
        return (f"BPEVocabulary({len(self.pieces)} tokens, {len(self.merges)} merges, "
                f"specials={self.specials})")

    def is_special(self, token_id: int) -> bool:
        return token_id in self.control

    def control_id(self, text: str) -> int | None:
        """The id of the control token spelt `text` ("<|im_start|>"), or None."""
        token_id = self._ids.get(text)
        return token_id if token_id is not None and self.is_special(token_id) else None

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`; control tokens written in it (`<|im_start|>`) are recognised."""
        check_text(text)
        parts = self._special_re.split(text) if self._special_re is not None else [text]
        ids: list[int] = []
        for k, part in enumerate(parts):
            if k % 2:                             # a captured control token
                ids.append(self._ids[part])
            elif part:
                for word in pre_tokenize(part, self.split_digits):
                    ids.extend(self._word_ids(word))
        return ids

    def _word_ids(self, word: str) -> list[int]:
        hit = self._words.get(word)
        if hit is not None:
            return hit
        table = byte_to_unicode()
        symbols = [table[b] for b in word.encode("utf-8")]
        ranks = self._ranks
        while len(symbols) > 1:
            best, best_rank = None, None
            for pair in zip(symbols, symbols[1:]):
                r = ranks.get(f"{pair[0]} {pair[1]}")
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = pair, r
            if best is None:
                break
            merged, i = [], 0
            while i < len(symbols):
                if i + 1 < len(symbols) and symbols[i] == best[0] and symbols[i + 1] == best[1]:
                    merged.append(best[0] + best[1])
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            symbols = merged
        try:
            ids = [self._ids[s] for s in symbols]
        except KeyError as exc:
            raise PromptError(f"prompt: the piece {exc.args[0]!r} of {word!r} is not in the vocabulary") from None
        if len(self._words) < _WORD_CACHE_LIMIT:
            self._words[word] = ids
        return ids
