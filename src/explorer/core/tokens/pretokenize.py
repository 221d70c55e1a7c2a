"""Byte-level BPE pre-tokenizers (`tokenizer.ggml.pre`) as llama.cpp runs them: text is cut
into pre-tokens by a chain of stages, each splitting every piece the previous one left
(llama.cpp's `unicode_regex_split`), before the merges work inside each pre-token.

The stages are the regular expressions of each model's tokenizer.json, written out as
scanners that follow llama.cpp's hand-written versions (unicode.cpp) step by step:
- GPT-2: `'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+`
- Llama 3: `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|
  ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+` (contractions in any case,
  a letter run may take one leading non-letter, digits in groups of up to three);
- Qwen2 (Qwen2, 2.5, 3): Llama 3's with `\\p{N}`, one digit per pre-token;
- Qwen3.5: Qwen2's with combining marks (\\p{M}) inside letter runs.
Other stages isolate every number character (SmolLM, StarCoder), or, for a file that names
no pre-tokenizer, llama.cpp's default chain (punctuation runs, GPT-2, number runs, digit
triples). Character classes come from Python's `unicodedata` (llama.cpp's tables are the
same Unicode categories; a character assigned only in a newer Unicode may differ)."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

# Unicode White_Space (llama.cpp's unicode_set_whitespace: what \s means)
_WHITESPACE = frozenset("\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
                        "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
_SHORT, _LONG = frozenset("stmd"), frozenset({"re", "ve", "ll"})     # the contractions' endings
_DEFAULT_PUNCTUATION = frozenset("$+<=>^~|")     # llama.cpp's default `[\p{P}\$\+<=>\^~\|]+`


@lru_cache(maxsize=8192)
def char_class(c: str) -> str:
    """'S' whitespace, 'L' letter, 'N' number, 'M' combining mark, 'P' punctuation, 'O' anything else."""
    if c in _WHITESPACE:
        return "S"
    cat = unicodedata.category(c)[0]
    return cat if cat in "LNMP" else "O"


def _contraction(seg: str, pos: int, fold: bool) -> int:
    """Length of the contraction ('s, 'LL, ...) at `pos`, or 0; `fold`: in any case."""
    if seg[pos] != "'" or pos + 1 >= len(seg):
        return 0
    tail = seg[pos + 1:pos + 3]
    tail = tail.lower() if fold else tail
    if tail[:1] in _SHORT:
        return 2
    return 3 if len(tail) == 2 and tail in _LONG else 0


def gpt2_split(seg: str) -> list[str]:
    """GPT-2's rule over one piece (llama.cpp's unicode_regex_split_custom_gpt2)."""
    out, pos, n = [], 0, len(seg)

    def cls(p):
        return char_class(seg[p]) if p < n else None

    while pos < n:
        start = pos
        size = _contraction(seg, pos, fold=False)
        if size:
            pos += size
        else:
            kind = cls(pos + 1) if seg[pos] == " " else cls(pos)
            if kind in ("L", "N"):                      # ' ?\p{L}+' and ' ?\p{N}+'
                pos += seg[pos] == " "
                while cls(pos) == kind:
                    pos += 1
            elif kind is not None and kind != "S":       # ' ?[^\s\p{L}\p{N}]+'
                pos += seg[pos] == " "
                while cls(pos) not in (None, "S", "L", "N"):
                    pos += 1
            else:
                pos = _whitespace_end(seg, pos, cls, newlines=False)
        out.append(seg[start:pos])
    return out


def _whitespace_end(seg: str, pos: int, cls, newlines: bool) -> int:
    """End of the whitespace pre-token at `pos`: `\\s*[\\r\\n]+` (when `newlines`), else
    `\\s+(?!\\S)` (a run before a non-space leaves its last space to the next word), else `\\s+`;
    a character no branch takes is a pre-token of its own."""
    run, last_break = 0, 0
    while cls(pos + run) == "S":
        if newlines and seg[pos + run] in "\r\n":
            last_break = pos + run + 1
        run += 1
    if last_break:
        return last_break
    if run > 1 and pos + run < len(seg):
        return pos + run - 1
    return pos + max(run, 1)


def _llama3_family(seg: str, digits: int, marks: bool) -> list[str]:
    """Llama 3's rule over one piece (unicode_regex_split_custom_llama3); `digits`: numbers in
    groups of this many (3, or 1 for Qwen2); `marks`: \\p{M} counts as a letter (Qwen3.5)."""
    out, pos, n = [], 0, len(seg)
    letters = ("L", "M") if marks else ("L",)
    not_other = ("S", "N", *letters)

    def cls(p):
        return char_class(seg[p]) if p < n else None

    while pos < n:
        start, c, kind = pos, seg[pos], cls(pos)
        size = _contraction(seg, pos, fold=True)
        if size:
            pos += size
        elif c not in "\r\n" and kind != "N" and (kind in letters or cls(pos + 1) in letters):
            pos += 1                                    # '[^\r\n\p{L}\p{N}]?\p{L}+'
            while cls(pos) in letters:
                pos += 1
        elif kind == "N":                               # '\p{N}{1,3}' (a run cut in threes) or '\p{N}'
            while cls(pos) == "N":
                pos += 1
                if pos - start >= digits:
                    break
        elif (cls(pos + 1) if c == " " else kind) not in not_other:   # ' ?[^\s\p{L}\p{N}]+[\r\n]*'
            pos += c == " "
            while cls(pos) not in (None, *not_other):
                pos += 1
            while pos < n and seg[pos] in "\r\n":
                pos += 1
        else:
            pos = _whitespace_end(seg, pos, cls, newlines=True)
        out.append(seg[start:pos])
    return out


def _runs(seg: str, take: Callable[[str], bool], alone: bool) -> list[str]:
    """`seg` cut around the characters `take` accepts: each alone (`alone`), else their runs;
    the text between stays one piece (a regex split keeps what it does not match)."""
    out, start, i, n = [], 0, 0, len(seg)
    while i < n:
        if not take(seg[i]):
            i += 1
            continue
        j = i + 1
        while not alone and j < n and take(seg[j]):
            j += 1
        out += [seg[start:i]] if start < i else []
        out.append(seg[i:j])
        start = i = j
    return out + ([seg[start:]] if start < n else [])


def _digit_triples(seg: str) -> list[str]:
    """`[0-9][0-9][0-9]`: ASCII digits three at a time, from the left."""
    out, start, i, n = [], 0, 0, len(seg)
    while i + 2 < n:
        if seg[i:i + 3].isascii() and seg[i:i + 3].isdigit():
            out += [seg[start:i]] if start < i else []
            out.append(seg[i:i + 3])
            start = i = i + 3
        else:
            i += 1
    return out + ([seg[start:]] if start < n else [])


def _numbers_alone(seg: str) -> list[str]:
    return _runs(seg, lambda c: char_class(c) == "N", alone=True)


def _number_runs(seg: str) -> list[str]:
    return _runs(seg, lambda c: char_class(c) == "N", alone=False)


def _punctuation_runs(seg: str) -> list[str]:
    return _runs(seg, lambda c: char_class(c) == "P" or c in _DEFAULT_PUNCTUATION, alone=False)


def _llama3(seg: str) -> list[str]:
    return _llama3_family(seg, digits=3, marks=False)


def _qwen2(seg: str) -> list[str]:
    return _llama3_family(seg, digits=1, marks=False)


def _qwen35(seg: str) -> list[str]:
    return _llama3_family(seg, digits=1, marks=True)


@dataclass(frozen=True)
class PreTokenizer:
    """stages: each splits every piece the previous ones left. ignore_merges: a pre-token
    that is itself a vocabulary entry is taken whole (llama.cpp sets it for Llama 3's).
    add_bos: whether `<bos>` comes first when the file does not say (tokenizer.ggml.add_bos_token)."""
    name: str
    stages: tuple
    ignore_merges: bool = False
    add_bos: bool = False

    def split(self, text: str) -> list[str]:
        pieces = [text]
        for stage in self.stages:
            pieces = [part for piece in pieces for part in stage(piece)]
        return pieces


_GPT2 = PreTokenizer("gpt-2", (gpt2_split,))
_DEFAULT = PreTokenizer("default", (_punctuation_runs, gpt2_split, _number_runs, _digit_triples))
_LLAMA3 = PreTokenizer("llama-bpe", (_llama3,), ignore_merges=True, add_bos=True)
_LLAMA3_REGEX = PreTokenizer("dbrx", (_llama3,))           # the same regex, merges as usual
_QWEN2 = PreTokenizer("qwen2", (_qwen2,))
_QWEN35 = PreTokenizer("qwen35", (_qwen35,))
_DIGITS_ALONE = PreTokenizer("smollm", (_numbers_alone, gpt2_split))

# `tokenizer.ggml.pre` -> its pre-tokenizer, as llama-vocab.cpp groups the names
PRE_TOKENIZERS = {
    "default": _DEFAULT,
    "gpt-2": _GPT2, "phi-2": _GPT2, "mpt": _GPT2, "olmo": _GPT2,
    "llama-bpe": _LLAMA3, "llama3": _LLAMA3, "llama-v3": _LLAMA3, "falcon3": _LLAMA3, "pixtral": _LLAMA3,
    "dbrx": _LLAMA3_REGEX, "smaug-bpe": _LLAMA3_REGEX, "chatglm-bpe": _LLAMA3_REGEX,
    "qwen2": _QWEN2, "deepseek-r1-qwen": _QWEN2, "stablelm2": _QWEN2,
    "qwen35": _QWEN35,
    "smollm": _DIGITS_ALONE, "starcoder": _DIGITS_ALONE, "refact": _DIGITS_ALONE,
    "codeshell": _DIGITS_ALONE, "command-r": _DIGITS_ALONE, "exaone": _DIGITS_ALONE,
}
