"""The flags that choose a model and a prompt, shared by trace, sample and export."""

from __future__ import annotations

from .numbers import parse_numbers
from ..core.tokens.bpe import CHAT_MARKERS, chat_turn, speaks_chatml
from ..core.errors import ExplorerError
from ..core.limits import check_prompt_length
from ..core.gguf.llama import ARITHMETICS, with_arithmetic
from ..catalog.registry import default_prompt, load_model


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


def model_from_args(args):
    return with_arithmetic(load_model(args.model or "teaching"), getattr(args, "arithmetic", "float"))


def prompt_ids(args, model) -> list[int]:
    """The prompt the flags give, encoded with the model's vocabulary."""
    vocab = model.vocab
    if args.prompt_ids is not None:
        ids = parse_numbers(args.prompt_ids, "--prompt-ids", int)
        if not ids:
            raise ExplorerError("--prompt-ids is empty: expected at least one id")
        check_prompt_length(len(ids))
        return vocab.check_ids(ids, "--prompt-ids")
    text = default_prompt(model) if args.prompt is None else args.prompt
    if args.chat:
        if not speaks_chatml(vocab):
            raise ExplorerError(f"--chat: the model {model.name!r} has no ChatML chat template "
                                f"(control tokens {' and '.join(CHAT_MARKERS)})")
        text = chat_turn(vocab, text)
    ids = vocab.encode(text)
    check_prompt_length(len(ids))
    return ids
