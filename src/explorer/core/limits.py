"""The upper limits of what a user can ask for, in one place: the command line, lesson files
and the window check the same numbers with the same message (`check_count`); and the one
way text a user typed becomes a number (`Whole`, `Real`, `number_list`): each states its
range, and anything outside it, not a number, or too long to read is a message, never a
traceback."""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass

from .errors import PromptError, SettingError

# counts: (lowest, highest) allowed
MAX_NEW_TOKENS = 4096        # a long answer; every step keeps its trace, so memory grows with it
MAX_BEAMS = 16               # a beam tree a class can read; each beam is one forward pass per step
MAX_SEED = 2**31 - 1         # what the window's seed box (a QSpinBox) holds
MAX_TOP = 1000               # candidates listed per step (--top): a table, not the whole vocabulary
MAX_LENGTH_PENALTY = 10.0    # |x| in score / length**x; beyond it length**x overflows a float
MAX_FORCE_STEP = MAX_NEW_TOKENS - 1   # a what-if at a step no run can reach is refused (steps 0..4095)
MAX_TOKEN_ID = 2**31 - 1     # a token id or a top-k: an int32 holds every vocabulary's ids
MAX_NUMBER_CHARS = 400       # characters of one number typed: longer is refused before it is read
MAX_PROMPT_TOKENS = 2048     # a page of text; the trace keeps every layer's [h, n, e] queries
MAX_SAMPLES = 64             # runs of a self-consistency vote: a class counts the answers
MAX_SEARCH = 16              # a search's width or branches: each state is one forward pass per level
MAX_SEARCH_DEPTH = 64        # levels of a search: width x branches forward passes each
MAX_CHECKED_STEPS = 32       # steps of one run compared with a full recomputation (each costs a whole forward
CHECKED_FIRST = 16           # over the prefix: quadratic in all); past it the first 16, then evenly spread
MAX_SLIDES = 200             # slides one export draws unless --frames chooses them or --max-slides allows more
MAX_HANDOUT_NUMBERS = 10_000_000   # numbers of a JSON handout with --intermediates (about 20 bytes each: 200 MB)

# files read whole before they are checked: the most bytes each may hold
MAX_LESSON_BYTES = 1 << 20           # 1 MiB: a lesson is a page of text and a few numbers
MAX_PARAMS_BYTES = 64 << 20          # 64 MiB: readable JSON, a small model's every weight
MAX_TABLE_MODEL_BYTES = 16 << 20     # 16 MiB: hand-written probability tables
MAX_GGUF_BYTES = 64 << 30            # 64 GiB: a GGUF is memory-mapped, never read whole
MAX_WHEEL_BYTES = 4 << 30            # 4 GiB: a model's wheel (PyPI's largest file), read member by member
MAX_NESTING = 64                     # lists and tables inside each other, in JSON and TOML


def check_count(name: str, value, lowest: int, highest: int) -> int:
    """`value` as an int in lowest..highest, or a SettingError naming `name` and the range
    (floats, bools and text are refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not lowest <= value <= highest:
        raise SettingError(f"{name} = {shown(value)}: expected an integer from {lowest} to {highest}")
    return int(value)


def check_prompt_length(n_tokens: int, context: int | None = None) -> None:
    """PromptError if a prompt of `n_tokens` is longer than a run may start from, or than
    the model's context (`context` positions; None: no such limit)."""
    if n_tokens > MAX_PROMPT_TOKENS:
        raise PromptError(f"prompt: {n_tokens:,} tokens, more than the {MAX_PROMPT_TOKENS:,} a run may start from")
    if context is not None and n_tokens > context:
        raise PromptError(f"prompt: {n_tokens:,} tokens, more than the model's context of {context:,} positions "
                          "(its context_length)")


def shown(value) -> str:
    """repr of a value, shortened: a 5,000-digit number is named by its size (str() of it
    would even raise), a long text cut."""
    if isinstance(value, int) and value.bit_length() > 100:
        return f"a number of about {int(value.bit_length() * 0.30103) + 1} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "…"


# ---------------------------------------------------------------------------- numbers typed as text

_INTEGER = re.compile(r"[+-]?[0-9]+")
_REAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INFINITY = re.compile(r"[+-]?inf(?:inity)?", re.IGNORECASE)


def shown_text(text: str) -> str:
    """Text a user typed, quoted and shortened for a message (a 5,000-digit number keeps its
    first digits and says how long it is)."""
    text = str(text)
    if len(text) <= 40:
        return repr(text)
    return f"{text[:24]!r}… ({len(text):,} characters)"


def _grouped(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


@dataclass(frozen=True)
class Whole:
    """An integer typed as text, from `lowest` to `highest` (decimal digits only: no 1e3,
    no 1_000, no other script's digits)."""
    lowest: int
    highest: int

    @property
    def expected(self) -> str:
        return f"an integer from {_grouped(self.lowest)} to {_grouped(self.highest)}"

    def parse(self, text: str, name: str = "") -> int:
        """`text` as an int in range, or a SettingError naming `name`, the value and the range."""
        text = text.strip()
        if not _INTEGER.fullmatch(text):
            _refuse(name, text, "is not an integer" if text else "is empty", self.expected)
        digits = text.lstrip("+-").lstrip("0")
        if len(digits) > len(str(max(abs(self.lowest), abs(self.highest)))):   # int() of 5,000 digits raises
            _refuse(name, text, "is out of range", self.expected)
        value = int(text)
        if not self.lowest <= value <= self.highest:
            _refuse(name, text, "is out of range", self.expected)
        return value

    def check(self, name: str, value) -> int:
        """A number given as a number (a setting, a lesson's value) as an int in range, or a
        SettingError "name = value: expected ..." (floats, bools and text are refused)."""
        return check_count(name, value, self.lowest, self.highest)


@dataclass(frozen=True)
class Real:
    """A real number typed as text, from `lowest` to `highest` (each included unless `open_low`
    / `open_high`); NaN is refused, and so is an infinity unless it is a bound and included
    (`-inf` for a logit that is already removed). `words`: the range said in words."""
    lowest: float = -math.inf
    highest: float = math.inf
    open_low: bool = False
    open_high: bool = False
    words: str = ""

    @property
    def expected(self) -> str:
        if self.words:
            return self.words
        low = "" if self.lowest == -math.inf else f"from {_grouped(self.lowest)}" + (" (excluded)" if self.open_low else "")
        high = "" if self.highest == math.inf else f"to {_grouped(self.highest)}" + (" (excluded)" if self.open_high else "")
        if low and high:
            return f"a number {low} {high}"
        return f"a number {low or high}".rstrip() if low or high else "a finite number"

    def parse(self, text: str, name: str = "") -> float:
        """`text` as a float in range, or a SettingError naming `name`, the value and the range."""
        text = text.strip()
        if len(text) > MAX_NUMBER_CHARS:
            _refuse(name, text, "is too long to be a number", self.expected)
        if _INFINITY.fullmatch(text):
            value = -math.inf if text.startswith("-") else math.inf
            if value not in (self.lowest, self.highest) or (self.open_low if value < 0 else self.open_high):
                _refuse(name, text, "is infinite", self.expected)
            return value
        if not _REAL.fullmatch(text):
            why = "is empty" if not text else "is not a number" if text.lower().lstrip("+-") != "nan" else "is NaN"
            _refuse(name, text, why, self.expected)
        value = float(text)
        if math.isinf(value):
            _refuse(name, text, "is too large for a float (more than about 1.8e308)", self.expected)
        if value == 0 and re.search(r"[1-9]", text.lower().split("e")[0]):
            _refuse(name, text, "is too close to 0 for a float (less than about 5e-324)", self.expected)
        if not self._holds(value):
            _refuse(name, text, "is out of range", self.expected)
        return value

    def _holds(self, value: float) -> bool:
        low_ok = value > self.lowest if self.open_low else value >= self.lowest
        high_ok = value < self.highest if self.open_high else value <= self.highest
        return low_ok and high_ok

    def check(self, name: str, value) -> float:
        """A number given as a number (a setting, a lesson's value) as a float in range, or a
        SettingError "name = value: expected ..." (bools, text and NaN are refused)."""
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise SettingError(f"{name} = {shown(value)}: expected {self.expected}")
        number = float(value)
        if not self._holds(number):             # NaN holds nowhere; an infinity only as an included bound
            raise SettingError(f"{name} = {shown(value)}: expected {self.expected}")
        return number


def number_list(text: str, item, name: str = "", allow_empty: bool = False) -> list:
    """Comma-separated numbers, each parsed by `item` (a Whole or a Real); an empty item
    ("1,,2", "1,2,") is refused, and so is empty text unless `allow_empty`."""
    if not text.strip():
        if allow_empty:
            return []
        _refuse(name, text, "is empty", f"comma-separated values, each {item.expected}")
    parts = text.split(",")
    out = []
    for i, part in enumerate(parts, 1):
        where = f"item {i} of {len(parts)}"
        if not part.strip():
            _refuse(name, text, f"has an empty item ({where})", f"comma-separated values, each {item.expected}")
        try:
            out.append(item.parse(part))
        except SettingError as exc:
            if len(parts) == 1:
                raise SettingError(f"{name + ' ' if name else ''}{exc}") from None
            raise SettingError(f"{name + ' ' if name else ''}{where}: {exc}") from None
    return out


def _refuse(name: str, text: str, why: str, expected: str):
    raise SettingError(f"{name + ' ' if name else ''}{shown_text(text)} {why}; expected {expected}")
