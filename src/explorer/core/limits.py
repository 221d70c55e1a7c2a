"""The upper limits of what a user can ask for, in one place: the command line, lesson files
and the window check the same numbers with the same message (`check_count`)."""

from __future__ import annotations

import numbers

from .errors import PromptError, SettingError

# counts: (lowest, highest) allowed
MAX_NEW_TOKENS = 4096        # a long answer; every step keeps its trace, so memory grows with it
MAX_BEAMS = 16               # a beam tree a class can read; each beam is one forward pass per step
MAX_SEED = 2**31 - 1         # what the window's seed box (a QSpinBox) holds
MAX_TOP = 1000               # candidates listed per step (--top): a table, not the whole vocabulary
MAX_LENGTH_PENALTY = 10.0    # |x| in score / length**x; beyond it length**x overflows a float
MAX_FORCE_STEP = MAX_NEW_TOKENS   # a what-if at a step no run can reach is refused
MAX_PROMPT_TOKENS = 2048     # a page of text; the trace keeps every layer's [h, n, e] queries

# files read whole before they are checked: the most bytes each may hold
MAX_LESSON_BYTES = 1 << 20           # 1 MiB: a lesson is a page of text and a few numbers
MAX_PARAMS_BYTES = 64 << 20          # 64 MiB: readable JSON, a small model's every weight
MAX_TABLE_MODEL_BYTES = 16 << 20     # 16 MiB: hand-written probability tables
MAX_GGUF_BYTES = 64 << 30            # 64 GiB: a GGUF is memory-mapped, never read whole
MAX_NESTING = 64                     # lists and tables inside each other, in JSON and TOML


def check_count(name: str, value, lowest: int, highest: int) -> int:
    """`value` as an int in lowest..highest, or a SettingError naming `name` and the range
    (floats, bools and text are refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not lowest <= value <= highest:
        raise SettingError(f"{name} = {shown(value)}: expected an integer from {lowest} to {highest}")
    return int(value)


def check_prompt_length(n_tokens: int) -> None:
    """PromptError if a prompt of `n_tokens` is longer than a run may start from."""
    if n_tokens > MAX_PROMPT_TOKENS:
        raise PromptError(f"prompt: {n_tokens:,} tokens, more than the {MAX_PROMPT_TOKENS:,} a run may start from")


def shown(value) -> str:
    """repr of a value, shortened: a 5,000-digit number is named by its size (str() of it
    would even raise), a long text cut."""
    if isinstance(value, int) and value.bit_length() > 100:
        return f"a number of about {int(value.bit_length() * 0.30103) + 1} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "…"
