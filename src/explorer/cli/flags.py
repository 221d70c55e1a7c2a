"""The flags the sub-commands share: the model and the prompt (trace, sample, export), the
sampling settings (trace, sample, export), what a run is made of (trace, export: a lesson, a
parameter file, what-if choices, speculative decoding), and numbers given as comma-separated lists."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from contextlib import contextmanager

from ..core.gguf.architectures import supported_families
from ..core.tokens.chat import chat_turn, has_chat_format
from ..core.errors import ChatTemplateError, ExplorerError, OrderError, SettingError
from ..core.limits import (MAX_BEAMS, MAX_FORCE_STEP, MAX_LENGTH_PENALTY, MAX_NEW_TOKENS, MAX_SEED, MAX_TOKEN_ID,
                           MAX_TOP, Real, Whole, check_prompt_length, number_list, shown_text)
from ..core.gguf.llama import ARITHMETICS, with_arithmetic
from ..core.decode.sampling import ALL_STAGE_NAMES, MODES, ORDER_PRESETS, SamplingConfig
from ..core.decode.api_stages import LOGIT_BIAS, RANGES, logit_bias_items, resolved_logit_bias
from ..core.decode.speculative import DEFAULT_NGRAM, MAX_K, MAX_NGRAM
from ..catalog.load import default_prompt, load_model, load_params_file
from ..catalog.registry import TEACHING
from .combinations import order_refusal
from ..lessons import load_lesson
from ..session import Session
from .progress import ProgressLine
from ..session.session import DEFAULT_CONFIG, Scenario

DEFAULT_ARITHMETIC = "float"      # float32 throughout: what every lesson computes in


# ---------------------------------------------------------------------------- numbers

# the range of every number a flag takes (the counts' limits are in core.limits)
TEMPERATURE = Real(words="a finite number (0 or less: greedy)")
TOP_K = Whole(0, MAX_TOKEN_ID)
TOP_P = Real(0.0, 1.0, open_low=True)
MIN_P = Real(0.0, 1.0)
REPETITION_PENALTY = Real(0.0, math.inf, open_low=True, open_high=True, words="a finite number above 0 (1 = off)")
SEED = Whole(0, MAX_SEED)
NEW_TOKENS = Whole(1, MAX_NEW_TOKENS)
BEAMS = Whole(1, MAX_BEAMS)
LENGTH_PENALTY = Real(-MAX_LENGTH_PENALTY, MAX_LENGTH_PENALTY)
TOP = Whole(1, MAX_TOP)
STEP = Whole(0, MAX_FORCE_STEP)
TOKEN_ID = Whole(0, MAX_TOKEN_ID)
DRAFT = Whole(1, MAX_K)
NGRAM = Whole(1, MAX_NGRAM)


class FlagError(ExplorerError):
    """A flag's value refused while the command line is read (`main` says it, exit 2)."""


class NumberFlag(argparse.Action):
    """A flag whose text `parse` reads (a number of the range `kind`, a list of them, STEP:ID):
    text outside the range is a FlagError naming the flag, the value (shortened) and the range.
    `append`: the flag may be repeated, its values collected in a list."""

    def __init__(self, option_strings, dest, parse=None, kind=None, append=False, **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self.parse, self.kind, self.append = parse, kind, append

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            value = self.parse(values)
        except SettingError as exc:
            raise FlagError(f"{option_string} {exc}") from None
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest) or []), value] if self.append else value)


def number(kind) -> dict:
    """add_argument's keywords for a flag taking one number of the range `kind` (a Whole or a Real)."""
    return dict(action=NumberFlag, parse=kind.parse, kind=kind)


def numbers(kind, allow_empty: bool = False) -> dict:
    """add_argument's keywords for a flag taking comma-separated numbers, each of the range `kind`."""
    return dict(action=NumberFlag, kind=kind, parse=lambda text: number_list(text, kind, allow_empty=allow_empty))


def force_item(text: str) -> tuple[int, int]:
    """--force STEP:ID as (step, id); the id is checked against the vocabulary later."""
    step, sep, token = text.partition(":")
    if not sep:
        raise SettingError(f"{shown_text(text)} is not STEP:ID; expected STEP:ID, e.g. 0:4")
    return STEP.parse(step, "STEP"), TOKEN_ID.parse(token, "ID")


# --force's keywords: a repeatable what-if, each value read by `force_item`
FORCE = dict(action=NumberFlag, parse=force_item, kind=STEP, append=True, default=[], metavar="STEP:ID")


# ---------------------------------------------------------------------------- model and prompt

# what --model takes, with the model families a GGUF file may hold
MODEL_HELP = ("teaching | smollm2 | gemma3-270m | a GGUF file (" + supported_families() +
              ") | ollama:NAME:TAG (a model Ollama pulled); see: token-explorer model list")


def add_prompt_flags(parser, model_required: bool = False) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--prompt", help="prompt text, tokenised with the model's vocabulary "
                                         "(default: 我爱, or a sentence for a real model)")
    source.add_argument("--prompt-ids", **numbers(TOKEN_ID), help="prompt as comma-separated token ids, e.g. 1,2,3")
    parser.add_argument("--model", required=model_required,
                        help=MODEL_HELP)
    parser.add_argument("--chat", action="store_true", help="wrap --prompt in the model's chat template")
    parser.add_argument("--arithmetic", choices=ARITHMETICS, default=DEFAULT_ARITHMETIC,
                        help="float: float32 throughout (default); llama.cpp: a real model computes as "
                             "llama.cpp's CPU backend (8-bit activations, float16 K/V)")


def model_key(args) -> str:
    """What `load_model` is given: --model, or the teaching model."""
    return args.model or TEACHING


def model_from_args(args):
    """The model --model names, computing as --arithmetic says (refused, naming both, for a
    model that cannot: the teaching model, a float GGUF file)."""
    arithmetic = getattr(args, "arithmetic", DEFAULT_ARITHMETIC)
    model = load_model(model_key(args))
    if getattr(model, "load_note", ""):
        print(f"note: {model.load_note}", file=sys.stderr)
    try:
        return with_arithmetic(model, arithmetic)
    except ExplorerError as exc:
        raise SettingError(f"--arithmetic {arithmetic} with --model {model_key(args)}: {exc}") from None


def prompt_ids(args, model) -> list[int]:
    """The prompt the flags give, encoded with the model's vocabulary."""
    vocab = model.vocab
    if args.prompt_ids is not None:           # read by `numbers`: at least one id, each an integer >= 0
        ids = args.prompt_ids
        check_prompt_length(len(ids))
        return vocab.check_ids(ids, "--prompt-ids")
    text = default_prompt(model_key(args), model) if args.prompt is None else args.prompt
    if args.chat:
        if not has_chat_format(vocab):
            raise ExplorerError(f"--chat: the model {model.name!r} has no ChatML chat template and no chat "
                                f"template of its own (tokenizer.chat_template)")
        try:
            text = chat_turn(vocab, text)
        except ChatTemplateError as exc:         # the plain prompt, and the reason
            print(f"--chat: {exc}", file=sys.stderr)
    ids = vocab.encode(text)
    check_prompt_length(len(ids))
    return ids


# ---------------------------------------------------------------------------- sampling

# flag dest -> SamplingConfig field, for flags whose name differs from the field
_FIELD_OF = {"stop": "stop_strings", "beam_width": "num_beams"}
_CONFIG_FLAGS = ("mode", "temperature", "top_k", "top_p", "min_p", "repetition_penalty", "seed",
                 "order", "max_new_tokens", "stop", "beam_width", "length_penalty", *RANGES, "logit_bias")

# the flags of the stages real APIs have, named as the APIs name them: field -> help
API_HELP = {
    "presence_penalty": "OpenAI's: subtract this once from every token the output already holds (-2..2; 0 = off)",
    "frequency_penalty": "OpenAI's: subtract this times the token's count in the output (-2..2; 0 = off)",
    "typical_p": "locally typical sampling: keep the tokens whose surprise is closest to the entropy, "
                 "up to this mass (1 = off)",
    "min_keep": "the fewest candidates any truncation stage may leave (0 = off)",
    "xtc_probability": "XTC: how often the top choices are excluded, drawn per step from the seed (0 = off)",
    "xtc_threshold": "XTC: a top choice has p >= this (default 0.1; above 0.5 = off)",
    "top_n_sigma": "keep logits within n standard deviations of the top one (0 = off)",
    "min_new_tokens": "hold back the end token until this many tokens are out (0 = off)",
}


def add_sampling_flags(parser: argparse.ArgumentParser, default_mode: str | None = "sample") -> None:
    """The flags that make a SamplingConfig; unset flags keep the base config's values
    (default_mode None: the mode too)."""
    g = parser.add_argument_group("sampling")
    g.add_argument("--mode", choices=MODES, default=default_mode,
                   help=f"how the next token is chosen (default {default_mode or 'the lesson'})")
    g.add_argument("--temperature", **number(TEMPERATURE), help="divide logits by T; T <= 0 means greedy (default 1)")
    g.add_argument("--top-k", **number(TOP_K), help="keep the k highest logits, ties kept; 0 = off (default)")
    g.add_argument("--top-p", **number(TOP_P), help="keep the smallest set reaching probability p; 1 = off (default)")
    g.add_argument("--min-p", **number(MIN_P), help="drop ids below min_p x the top probability; 0 = off (default)")
    g.add_argument("--repetition-penalty", **number(REPETITION_PENALTY),
                   help="push down tokens already seen: logit/θ if > 0, logit*θ if < 0; 1 = off (default)")
    g.add_argument("--seed", **number(SEED), help="seed of the uniform draws (default 0)")
    g.add_argument("--order", help=f"stage order: {' | '.join(ORDER_PRESETS)} (default hf) "
                                   f"or a comma list of {','.join(ALL_STAGE_NAMES)}")
    g.add_argument("--max-new-tokens", **number(NEW_TOKENS), help="stop after this many new tokens (default 16)")
    g.add_argument("--stop", action="append", metavar="TEXT",
                   help="stop when the output contains TEXT; repeatable")
    g.add_argument("--beam-width", **number(BEAMS), help="beams kept per step in --mode beam (default 2)")
    g.add_argument("--length-penalty", **number(LENGTH_PENALTY), help="beam score = log-prob sum / length**x (default 1)")
    api = parser.add_argument_group("sampling as in real APIs (each off by default)")
    for name, words in API_HELP.items():
        api.add_argument("--" + name.replace("_", "-"), **number(RANGES[name]), help=words)
    api.add_argument("--logit-bias", action=NumberFlag, parse=logit_bias_items, kind=LOGIT_BIAS,
                     metavar="ID:BIAS[,ID:BIAS...]",
                     help="add BIAS (-100..100; -100 bans in practice) to a token's logit; ID may be a piece "
                          "of the model's vocabulary")


def sampling_changes(args: argparse.Namespace, vocab=None) -> dict:
    """SamplingConfig field -> value, for the sampling flags that were given (vocab: the
    model's, for the pieces of --logit-bias)."""
    changes = {_FIELD_OF.get(dest, dest): getattr(args, dest)
               for dest in _CONFIG_FLAGS if getattr(args, dest) is not None}
    if "logit_bias" in changes:
        changes["logit_bias"] = resolved_logit_bias(changes["logit_bias"], vocab, "--logit-bias")
    return changes


def config_from_args(args: argparse.Namespace, vocab=None) -> SamplingConfig:
    """The SamplingConfig the flags describe (SettingError if a value is out of range)."""
    return SamplingConfig(**sampling_changes(args, vocab))


# ---------------------------------------------------------------------------- what a run is made of

def add_run_flags(parser: argparse.ArgumentParser, lesson_help: str, top_help: str, json_help: str,
                  top_default: int = 10) -> None:
    """The flags of `trace` that `export` takes too (with the prompt and sampling flags):
    one definition each; the help says what the sub-command does with them."""
    parser.add_argument("--lesson", help=lesson_help)
    parser.add_argument("--params", help="parameter file (default: the teaching model)")
    parser.add_argument("--no-check", action="store_true",
                        help="skip the comparison of every step with a full recomputation (faster on big models)")
    parser.add_argument("--force", **FORCE,
                        help="what-if: at step STEP (0 = prefill) select token ID instead; repeatable")
    parser.add_argument("--top", **number(TOP), default=top_default, help=f"{top_help} (default {top_default})")
    parser.add_argument("--lang", choices=("en", "zh"), default="en")
    parser.add_argument("--json", action="store_true", help=json_help)
    parser.add_argument("--speculative", **number(DRAFT), metavar="K",
                        help="decode speculatively: draft up to K tokens by prompt lookup, verify them in one pass")
    parser.add_argument("--ngram", **number(NGRAM),
                        help=f"with --speculative: the longest n-gram looked up (default {DEFAULT_NGRAM})")


def check_run_flags(args: argparse.Namespace) -> None:
    """The what-if choices, checked (SettingError naming the flag); which flags cannot go
    together is `combinations`' table, checked before."""
    parse_forces(args.force)


def parse_forces(items) -> dict[int, int]:
    """--force values, read by `force_item` as (step, id) pairs, as step -> id (a step given
    twice is an error)."""
    forces = {}
    for step, token in items:
        if step in forces:
            raise SettingError(f"--force {step}:{token}: step {step} is already forced to {forces[step]}")
        forces[step] = token
    return forces


def check_speculative_mode(config: SamplingConfig) -> None:
    if config.mode == "beam":
        raise SettingError("--speculative: expected --mode greedy or sample (a beam keeps several sequences; "
                           "speculative decoding verifies one)")


def names_a_free_run(args: argparse.Namespace) -> bool:
    """Whether the flags name a model or a prompt of their own (not a lesson's)."""
    return args.chat or any(getattr(args, flag) is not None for flag in ("model", "params", "prompt", "prompt_ids"))


def free_model(args: argparse.Namespace):
    """The model of a free run: --params, --model, or the teaching model."""
    return load_params_file(args.params) if args.params is not None else model_from_args(args)


def noted(lesson):
    """`lesson`, after saying on standard error what differs from the run it was saved with
    (a model file replaced since): it runs on what is there."""
    for difference in lesson.model_differences():
        print(f"note: {lesson.path}: {difference}", file=sys.stderr)
    return lesson


def session_from_args(args: argparse.Namespace, lesson: str | None = None, speculative: bool = False,
                      cancel: Callable[[], bool] | None = None, before_run: Callable | None = None) -> Session:
    """The session the flags describe: `lesson`'s (a name or a file), or a free run of the
    model and prompt they give (decoded speculatively with --speculative when `speculative`);
    then their sampling changes and what-if choices, computed with progress on a terminal
    and stopped (the run ends "cancelled") when `cancel()` says so. Call `check_run_flags` first.
    `before_run(configs, lesson)`, once the models are loaded and before any of them runs: a
    refusal that needs only the settings comes before the work. configs: (name of the run, its
    settings with the flags applied), named as `session_configs` names them; lesson: the Lesson
    played, or None for a free run."""
    if lesson is not None:
        played = noted(load_lesson(lesson))
        scenarios = played.build_scenarios()
        changes = sampling_changes(args, scenarios[0].model.vocab)
        if before_run is not None:
            names = [name for name, _ in played.scenarios] if len(played.scenarios) > 1 else [played.id]
            before_run([(name, _changed(args, s.config, changes)) for name, s in zip(names, scenarios)], played)
        session = played.build_session(scenarios)
    else:
        model = free_model(args)
        k = args.speculative if speculative and args.speculative is not None else 0
        scenario = Scenario(model, tuple(prompt_ids(args, model)), DEFAULT_CONFIG, speculative=k,
                            ngram=DEFAULT_NGRAM if args.ngram is None else args.ngram)
        changes = sampling_changes(args, model.vocab)
        if before_run is not None:
            before_run([("", _changed(args, DEFAULT_CONFIG, changes))], None)
        session = Session(model, scenario.prompt_ids, check_recompute=not args.no_check, scenarios=(scenario,))
    with progress_on_terminal(session, cancel):
        if changes:
            try:
                session.set_sampling(**changes)
            except OrderError as exc:
                raise order_refusal(args, exc.order, exc.left_out) from None
        if session.scenario.speculative:
            check_speculative_mode(session.config)
        for step, token in sorted(parse_forces(args.force).items()):   # a force drops those after it
            try:
                session.force(step, token)
            except ExplorerError as exc:
                where = "" if lesson is None else f" with --lesson {lesson}"
                raise SettingError(f"--force {step}:{token}{where}: {exc}") from None
    return session


def _changed(args: argparse.Namespace, config: SamplingConfig, changes: dict) -> SamplingConfig:
    """`config` with the flags' `changes`; an order leaving out a stage that is on is refused
    naming the flags (as `Session.set_sampling` would, after the work)."""
    try:
        return config.with_(**changes)
    except OrderError as exc:
        raise order_refusal(args, exc.order, exc.left_out) from None


@contextmanager
def progress_on_terminal(session: Session, cancel: Callable[[], bool] | None = None):
    """While the flags' changes are computed: the generated steps as a progress line on
    stderr, when it is a terminal (a long run of a real model takes minutes); `cancel` asked
    after every step."""
    line = ProgressLine(lambda _what, done, total: f"  generating: step {done} of at most {total}")
    if line.live or cancel is not None:
        session.runner = lambda s: s.apply(s.prepare(on_step=lambda done, total: line.show("steps", done, total),
                                                     cancel=cancel))
    try:
        yield
    finally:
        session.runner = None
        line.clear()
