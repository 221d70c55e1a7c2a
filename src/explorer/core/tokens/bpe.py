"""Byte-level BPE (GPT-2 style) as a Vocabulary, the tokenizer of a real model, and the
default system prompt its chat template names (`template_system_prompt`)."""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import ClassVar

from ..errors import PromptError
from .pretokenize import PRE_TOKENIZERS, PreTokenizer
from .specials import by_length, split_specials
from .vocab import Vocabulary, check_text

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


def pre_tokenize(text: str, split_digits: bool = True) -> list[str]:
    """SmolLM2's pre-tokens of plain text (numbers one by one, then GPT-2's rule), or GPT-2's."""
    return PRE_TOKENIZERS["smollm" if split_digits else "gpt-2"].split(text)


@dataclass(frozen=True, eq=False)     # compared by identity, like the models that hold it
class BPEVocabulary(Vocabulary):
    """pieces: the real bytes of every token. specials: roles ("bos", "eos", "pad", "unk").

    tokens / merges: the GGUF spelling (GPT-2 byte characters); control: ids left out of
    decoded text; in_text: ((text, id), ...) of the tokens recognised when written in the
    text, longest first; pre: the pre-tokenizer; add_bos / add_eos: `<bos>` first, `<eos>`
    last; chat_system: the default system prompt of the model's chat template
    (`template_system_prompt`).

    A GGUF file of the "gpt2" tokenizer family stores its tokens as text in which each
    byte is spelled by one printable character (GPT-2's byte-to-unicode table: the space
    0x20 is "Ġ", the newline "Ċ"), and its merges as "left right" pairs in rank order.
    Here the pieces are the real bytes again, so `display_piece` shows a lone byte of a
    Chinese character as `<0xE6>` and `decode` holds back an incomplete character.

    Encoding, as llama.cpp runs it (llm_tokenizer_bpe_session, with parse_special):
    1. `<bos>` first when the file (or its pre-tokenizer, Llama 3's) says so;
    2. control, user-defined and unknown-type tokens written in the text (`<|im_start|>`)
       become their ids (`split_specials`);
    3. the rest is cut into pre-tokens (`pretokenize`: GPT-2's rule, SmolLM's digits one by
       one, Llama 3's, Qwen2's, ...);
    4. a pre-token that is itself a token is taken whole where the pre-tokenizer says so
       (Llama 3's); else its bytes are merged pair by pair, the lowest merge rank first, of
       equal ranks the leftmost."""
    gguf_tokenizer: ClassVar[str] = "gpt2"
    tokens: tuple[str, ...] = ()
    merges: tuple[str, ...] = ()
    control: frozenset = frozenset()
    in_text: tuple = ()
    rstrip: frozenset = frozenset()     # ids after which the prompt's whitespace is dropped (Phi-3)
    pre: PreTokenizer = PRE_TOKENIZERS["smollm"]
    add_bos: bool = False
    add_eos: bool = False
    _ids: dict = field(default_factory=dict, repr=False)       # token text -> id
    _ranks: dict = field(default_factory=dict, repr=False)     # "left right" -> rank
    _words: dict = field(default_factory=dict, repr=False)     # pre-token -> ids
    chat_system: str | None = None

    @classmethod
    def build(cls, tokens, merges, specials: dict, control=(), pre: PreTokenizer = PRE_TOKENIZERS["smollm"],
              chat_system: str | None = None, add_bos: bool = False, add_eos: bool = False,
              shown=(), ends=(), rstrip=(), chat_template: str | None = None):
        """From the GGUF lists: tokens (GPT-2 spelling), merges ("a b"), specials {role: id};
        control: ids recognised in the text (every special role's too); shown: those of them
        whose text decoding keeps (user-defined tokens); ends: more ids that end generation."""
        found = frozenset(int(i) for i in control) | frozenset(specials.values())
        pieces = tuple(tok.encode("utf-8") if i in found else _token_bytes(tok) for i, tok in enumerate(tokens))
        # keyed by the merge's own text "left right" (a symbol holds no space: GPT-2 spells
        # the space byte "Ġ"), the first rank of a repeated merge: 49,000 (left, right)
        # tuples cost a quarter of the tokenizer's construction and as much again in the
        # garbage collector's passes over them
        ranks = dict(zip(reversed(merges), range(len(merges) - 1, -1, -1)))
        return cls(pieces, dict(specials), frozenset(int(i) for i in ends), chat_template, tokens=tuple(tokens),
                   merges=tuple(merges), control=found - frozenset(int(i) for i in shown),
                   in_text=by_length(tokens, sorted(found)), pre=pre, add_bos=bool(add_bos), add_eos=bool(add_eos),
                   rstrip=frozenset(int(i) for i in rstrip), _ids=dict(zip(tokens, range(len(tokens)))), _ranks=ranks, chat_system=chat_system)

    def __repr__(self) -> str:
        return (f"BPEVocabulary({len(self.pieces)} tokens, {len(self.merges)} merges, "
                f"pre={self.pre.name}, specials={self.specials})")

    def is_special(self, token_id: int) -> bool:
        return token_id in self.control

    def control_id(self, text: str) -> int | None:
        """The id of the control token spelt `text` ("<|im_start|>"), or None."""
        token_id = self._ids.get(text)
        return token_id if token_id is not None and self.is_special(token_id) else None

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`; special tokens written in it (`<|im_start|>`) are recognised."""
        check_text(text)
        ids = [self.specials["bos"]] if self.add_bos and "bos" in self.specials else []
        for part in split_specials(text, self.in_text, self.rstrip):
            if isinstance(part, int):
                ids.append(part)
                continue
            for word in self.pre.split(part):
                ids.extend(self._word_ids(word))
        if self.add_eos and "eos" in self.specials:
            ids.append(self.specials["eos"])
        return ids

    def _word_ids(self, word: str) -> list[int]:
        hit = self._words.get(word)
        if hit is not None:
            return hit
        table = byte_to_unicode()
        symbols = [table[b] for b in word.encode("utf-8")]
        whole = "".join(symbols)
        if self.pre.ignore_merges and whole in self._ids:
            symbols = [whole]
        try:
            ids = [self._ids[s] for s in _merged(symbols, self._ranks)]
        except KeyError as exc:
            raise PromptError(f"prompt: the piece {exc.args[0]!r} of {word!r} is not in the vocabulary") from None
        if len(self._words) < _WORD_CACHE_LIMIT:
            self._words[word] = ids
        return ids


def _merged(symbols: list[str], ranks: dict) -> list[str]:
    """The symbols after BPE's merges, as llama.cpp's queue runs them: the pair of lowest rank
    first, of equal ranks the leftmost; a queued pair one of whose symbols has since grown
    is passed over."""
    if len(symbols) < 2:
        return symbols
    text = list(symbols)                         # text[i]: symbol i ("" once merged into its left)
    nxt = list(range(1, len(text))) + [-1]
    prev = list(range(-1, len(text) - 1))
    queue: list = []                             # (rank, left, right, merged text)

    def consider(left: int, right: int) -> None:
        if left >= 0 and right >= 0:
            rank = ranks.get(f"{text[left]} {text[right]}")
            if rank is not None:
                heapq.heappush(queue, (rank, left, right, text[left] + text[right]))

    for i in range(1, len(text)):
        consider(i - 1, i)
    while queue:
        _, left, right, merged = heapq.heappop(queue)
        if not text[left] or not text[right] or text[left] + text[right] != merged:
            continue
        text[left], text[right] = merged, ""
        nxt[left] = nxt[right]
        if nxt[right] >= 0:
            prev[nxt[right]] = left
        consider(prev[left], left)
        consider(left, nxt[left])
    return [t for t in text if t]
