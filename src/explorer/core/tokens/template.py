"""A model's own chat template (GGUF `tokenizer.chat_template`, a Jinja text written for
Hugging Face's `apply_chat_template`) rendered for one user turn.

A template comes with a downloaded file: it is untrusted input. It is rendered only in
jinja2's ImmutableSandboxedEnvironment (no attribute beginning with "_", no changing of
lists or dicts), and within limits: the template's length, the rendered text's length
(counted while `generate()` streams it), and time (a deadline checked on every call,
attribute and item the template reaches, on every item of `range` and on every piece of
output; `*` on strings and lists is bounded too, and so is every call or filter that could
build a huge text before any of it is output: a width or count above the output limit (`center`,
`indent`, `tojson(indent=...)`, `ljust`, ...), a width in a format string (`%`, `format`), a
`replace` or `join` whose result would pass the limit). A template that fails, exceeds a limit,
or writes a turn without the user's text gives a `Rendered` without text and with the reason,
and the caller falls back to the plain prompt."""

from __future__ import annotations

import functools
import re
import time
from dataclasses import dataclass
from datetime import datetime

THINKING_SWITCH = "enable_thinking"      # the variable Qwen3-style templates read


@dataclass(frozen=True)
class Limits:
    template_chars: int = 100_000      # Qwen3's is 4,000, the longest tool-use ones 20,000
    rendered_chars: int = 100_000      # one turn with its system prompt and tool lists
    seconds: float = 2.0               # real templates render in milliseconds


LIMITS = Limits()


@dataclass(frozen=True)
class Rendered:
    """text: the prompt the template wrote, or None; problem: why not (for the teacher)."""
    text: str | None
    problem: str | None = None


class _Exceeded(Exception):
    """A limit reached while rendering (the message says which)."""


def has_thinking_switch(template) -> bool:
    """Does the template read `enable_thinking` (Qwen3's switch between a reasoning answer
    and a direct one)?"""
    return isinstance(template, str) and THINKING_SWITCH in template


def render_chat(template: str, user_text: str, *, system: str | None = None, bos: str = "", eos: str = "",
                thinking: bool | None = None, limits: Limits = LIMITS, now: datetime | None = None) -> Rendered:
    """One user turn (after a system turn if `system`) as `template` writes it, ending where
    the assistant's answer begins (add_generation_prompt). thinking: None leaves
    enable_thinking undefined (the template's default), else sets it. now: the date
    `strftime_now` gives (the clock when None)."""
    if len(template) > limits.template_chars:
        return Rendered(None, f"the chat template is {len(template):,} characters long "
                              f"(at most {limits.template_chars:,} are rendered)")
    from jinja2 import TemplateError
    deadline = time.monotonic() + limits.seconds
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user_text}]
    context = {"messages": messages, "add_generation_prompt": True, "bos_token": bos, "eos_token": eos,
               "tools": None, "documents": None}
    if thinking is not None:
        context[THINKING_SWITCH] = thinking
    try:
        env = _environment(deadline, limits, now)
        out, size = [], 0
        for piece in env.from_string(template).generate(**context):
            size += len(piece)
            if size > limits.rendered_chars:
                raise _Exceeded(f"its output passed {limits.rendered_chars:,} characters")
            _check(deadline, limits)
            out.append(piece)
    except _Exceeded as exc:
        return Rendered(None, f"the chat template was stopped: {exc}")
    except TemplateError as exc:
        return Rendered(None, f"the chat template failed ({type(exc).__name__}): {exc}")
    except RecursionError:
        return Rendered(None, "the chat template failed (RecursionError): it nests or calls itself too deeply")
    except MemoryError:
        return Rendered(None, "the chat template failed (MemoryError)")
    except Exception as exc:      # anything a template's expressions raise (TypeError, ...)
        return Rendered(None, f"the chat template failed ({type(exc).__name__}): {exc}")
    text = "".join(out)
    if user_text.strip() not in text:       # a turn without the prompt: the user's text would be lost
        return Rendered(None, f"the chat template wrote a turn without the user's text ({len(text):,} characters"
                              f"{': ' + repr(text[:40]) if text else ''})")
    return Rendered(text)


def _check(deadline: float, limits: Limits) -> None:
    if time.monotonic() > deadline:
        raise _Exceeded(f"it ran longer than {limits.seconds:g} s")


def _environment(deadline: float, limits: Limits, now: datetime | None):
    """A sandbox whose every call, attribute, item and range step checks the deadline."""
    from jinja2 import TemplateError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Sandbox(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**", "%"})

        def call(self, __context, __obj, *args, **kwargs):
            _check(deadline, limits)
            method = getattr(__obj, "__wrapped__", __obj)      # the sandbox wraps str.format
            if method is not CheckedRange:                      # which says its own limit
                _check_sizes(getattr(method, "__name__", ""), getattr(method, "__self__", None), args, kwargs, limits)
            return super().call(__context, __obj, *args, **kwargs)

        def getattr(self, obj, attribute):
            _check(deadline, limits)
            return super().getattr(obj, attribute)

        def getitem(self, obj, argument):
            _check(deadline, limits)
            return super().getitem(obj, argument)

        def call_binop(self, context, operator, left, right):
            _check(deadline, limits)
            if operator == "**" and isinstance(right, int) and abs(right) > 1000:
                raise _Exceeded(f"a power of {right} is too large")
            if operator == "*":
                count, seq = (right, left) if isinstance(right, int) else (left, right)
                if isinstance(count, int) and hasattr(seq, "__len__") and len(seq) * count > limits.rendered_chars:
                    raise _Exceeded(f"a repeated text or list passed {limits.rendered_chars:,} items")
            if operator == "%" and isinstance(left, str):
                _check_widths(left, limits)
            return super().call_binop(context, operator, left, right)

    class CheckedRange:
        """`range` whose every item checks the deadline (a template's loops need not call anything)."""

        def __init__(self, *args):
            self.items = range(*args)
            if len(self.items) > limits.rendered_chars:
                raise _Exceeded(f"a range of {len(self.items):,} items")

        def __len__(self):
            return len(self.items)

        def __iter__(self):
            for item in self.items:
                _check(deadline, limits)
                yield item

    def raise_exception(message):
        raise TemplateError(f"the template raised: {message}")

    def strftime_now(fmt):
        return (now or datetime.now()).strftime(str(fmt))

    # as Hugging Face's apply_chat_template sets it up
    env = Sandbox(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.globals.update(range=CheckedRange, raise_exception=raise_exception, strftime_now=strftime_now)
    env.filters = {name: _bounded_filter(name, f, limits) for name, f in env.filters.items()}
    return env


_NUMBER = re.compile(r"[0-9]+")


def _check_widths(form: str, limits: Limits) -> None:
    """A format string ('%1000000000d', '{:>1000000000}') whose width or precision would pad
    past the output limit before anything is output."""
    widest = max((int(n) for n in _NUMBER.findall(form) if len(n) <= 12), default=0)
    if widest > limits.rendered_chars or any(len(n) > 12 for n in _NUMBER.findall(form)):
        raise _Exceeded(f"a format of {_shown_number(form)} is wider than {limits.rendered_chars:,} characters")


def _shown_number(form: str) -> str:
    return repr(form) if len(form) <= 40 else repr(form[:37] + "…")


def _check_sizes(name: str, value, args: tuple, kwargs: dict, limits: Limits) -> None:
    """Before a filter or a method of `value` runs: refused (_Exceeded) when it could build a
    text past the output limit at once, which no check during it could stop."""
    limit = limits.rendered_chars
    for arg in (*args, *kwargs.values()):
        if isinstance(arg, int) and not isinstance(arg, bool) and abs(arg) > limit:   # a width, a count
            raise _Exceeded(f"{name}() was given {arg:,}, more than the {limit:,} characters a turn may hold")
    if not isinstance(value, str):
        return
    if name in ("format", "format_map"):
        _check_widths(value, limits)
    elif name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
        found = value.count(args[0]) if args[0] else len(value) + 1
        if len(value) + found * (len(args[1]) - len(args[0])) > limit:
            raise _Exceeded(f"replace() would make a text of more than {limit:,} characters")
    elif name == "join" and args and hasattr(args[0], "__len__"):
        if len(value) * max(len(args[0]) - 1, 0) > limit:
            raise _Exceeded(f"join() would make a text of more than {limit:,} characters")


def _bounded_filter(name: str, f, limits: Limits):
    """Filter `f`, its arguments checked by `_check_sizes` first (`format`'s own text as a
    format string; `join`'s separator over the items; `replace` as str.replace)."""
    skip = 1 if hasattr(f, "jinja_pass_arg") else 0      # a context or environment comes first

    @functools.wraps(f)
    def bounded(*args, **kwargs):
        value, rest = (args[skip], args[skip + 1:]) if len(args) > skip else (None, ())
        if name == "join":              # value | join(sep): sep.join(value)
            _check_sizes("join", rest[0] if rest else kwargs.get("d", ""), (value,), {}, limits)
            _check_sizes(name, None, rest[1:], kwargs, limits)
        else:
            _check_sizes(name, value, rest, kwargs, limits)
        return f(*args, **kwargs)
    return bounded
