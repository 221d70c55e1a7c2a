"""The flags the sub-commands share: the model and the prompt (trace, sample, export), the
sampling settings (trace, sample, export), and numbers given as comma-separated lists."""

from __future__ import annotations

import argparse

from ..core.tokens.chat import CHAT_MARKERS, chat_turn, speaks_chatml
from ..core.errors import ExplorerError, SettingError
from ..core.limits import check_prompt_length, shown
from ..core.gguf.llama import ARITHMETICS, with_arithmetic
from ..core.decode.sampling import MODES, ORDER_PRESETS, STAGE_NAMES, SamplingConfig
from ..catalog.load import default_prompt, load_model
from ..catalog.registry import TEACHING

# ---------------------------------------------------------------------------- numbers

def parse_numbers(text: str, flag: str, kind=float) -> list:
    """Comma-separated numbers (float: also inf, -inf)."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    try:
        return [kind(t) for t in items]
    except ValueError:
        noun = "integers" if kind is int else "numbers"
        raise SettingError(f"{flag} = {shown(text)}: expected comma-separated {noun}") from None


# ---------------------------------------------------------------------------- model and prompt

def add_prompt_flags(parser, model_required: bool = False) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--prompt", help="prompt text, tokenised with the model's vocabulary "
                                         "(default: 我爱, or a sentence for a real model)")
    source.add_argument("--prompt-ids", help="prompt as comma-separated token ids, e.g. 1,2,3")
    parser.add_argument("--model", required=model_required,
                        help="teaching | smollm2 | gemma3-270m | a .gguf file (see: token-explorer model list)")
    parser.add_argument("--chat", action="store_true", help="wrap --prompt in the model's chat template")
    parser.add_argument("--arithmetic", choices=ARITHMETICS, default="float",
                        help="float: float32 throughout (default); llama.cpp: a real model computes as "
                             "llama.cpp's CPU backend (8-bit activations, float16 K/V)")


def model_key(args) -> str:
    """What `load_model` is given: --model, or the teaching model."""
    return args.model or TEACHING


def model_from_args(args):
    return with_arithmetic(load_model(model_key(args)), getattr(args, "arithmetic", "float"))


def prompt_ids(args, model) -> list[int]:
    """The prompt the flags give, encoded with the model's vocabulary."""
    vocab = model.vocab
    if args.prompt_ids is not None:
        ids = parse_numbers(args.prompt_ids, "--prompt-ids", int)
        if not ids:
            raise ExplorerError("--prompt-ids is empty: expected at least one id")
        check_prompt_length(len(ids))
        return vocab.check_ids(ids, "--prompt-ids")
    text = default_prompt(model_key(args), model) if args.prompt is None else args.prompt
    if args.chat:
        if not speaks_chatml(vocab):
            raise ExplorerError(f"--chat: the model {model.name!r} has no ChatML chat template "
                                f"(control tokens {' and '.join(CHAT_MARKERS)})")
        text = chat_turn(vocab, text)
    ids = vocab.encode(text)
    check_prompt_length(len(ids))
    return ids


# ---------------------------------------------------------------------------- sampling

# flag dest -> SamplingConfig field, for flags whose name differs from the field
_FIELD_OF = {"stop": "stop_strings", "beam_width": "num_beams"}
_CONFIG_FLAGS = ("mode", "temperature", "top_k", "top_p", "min_p", "repetition_penalty", "seed",
                 "order", "max_new_tokens", "stop", "beam_width", "length_penalty")


def add_sampling_flags(parser: argparse.ArgumentParser, default_mode: str | None = "sample") -> None:
    """The flags that make a SamplingConfig; unset flags keep the base config's values
    (default_mode None: the mode too)."""
    g = parser.add_argument_group("sampling")
    g.add_argument("--mode", choices=MODES, default=default_mode,
                   help=f"how the next token is chosen (default {default_mode or 'the lesson'})")
    g.add_argument("--temperature", type=float, help="divide logits by T; T <= 0 means greedy (default 1)")
    g.add_argument("--top-k", type=int, help="keep the k highest logits, ties kept; 0 = off (default)")
    g.add_argument("--top-p", type=float, help="keep the smallest set reaching probability p; 1 = off (default)")
    g.add_argument("--min-p", type=float, help="drop ids below min_p x the top probability; 0 = off (default)")
    g.add_argument("--repetition-penalty", type=float,
                   help="push down tokens already seen: logit/θ if > 0, logit*θ if < 0; 1 = off (default)")
    g.add_argument("--seed", type=int, help="seed of the uniform draws (default 0)")
    g.add_argument("--order", help=f"stage order: {' | '.join(ORDER_PRESETS)} (default hf) "
                                   f"or a comma list of {','.join(STAGE_NAMES)}")
    g.add_argument("--max-new-tokens", type=int, help="stop after this many new tokens (default 16)")
    g.add_argument("--stop", action="append", metavar="TEXT",
                   help="stop when the output contains TEXT; repeatable")
    g.add_argument("--beam-width", type=int, help="beams kept per step in --mode beam (default 2)")
    g.add_argument("--length-penalty", type=float, help="beam score = log-prob sum / length**x (default 1)")


def sampling_changes(args: argparse.Namespace) -> dict:
    """SamplingConfig field -> value, for the sampling flags that were given."""
    return {_FIELD_OF.get(dest, dest): getattr(args, dest)
            for dest in _CONFIG_FLAGS if getattr(args, dest) is not None}


def config_from_args(args: argparse.Namespace) -> SamplingConfig:
    """The SamplingConfig the flags describe (SettingError if a value is out of range)."""
    return SamplingConfig(**sampling_changes(args))
