"""Which flags cannot take effect together, or outside a context, per sub-command: one table
the command line enforces before any work (`check_flags`, from `main`), and the checks that
need the run's settings first (`check_settings`). A flag typed is never dropped without a
word: a combination that cannot take effect is refused (exit 2) with the reason, naming
each flag. A new flag that only makes sense in some context needs one Rule here."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from ..catalog.registry import MODELS
from ..core.decode.beam import BEAM_PROCESSORS
from ..core.decode.orders import ALL_STAGE_NAMES, ARGMAX_KEEPING
from ..core.decode.sampling import SamplingConfig
from ..core.errors import SettingError


@dataclass(frozen=True)
class Rule:
    """`flags` all given (and `when` true of the arguments) cannot take effect: refused
    with `reason`. A rule of one flag is a context it needs (`when` says it is missing)."""
    flags: tuple[str, ...]
    reason: str
    when: Callable[[argparse.Namespace], bool] = lambda args: True


def _no_model(args) -> bool:
    return args.model is None


def _no_slides(args) -> bool:
    """An export writing handouts only (CSV, JSON): nothing is drawn (a student page has slides)."""
    return not set(_formats(args)) & {"png", "pdf", "pptx", "svg", "html"}


def _formats(args) -> list[str]:
    return [f.strip() for f in args.format.split(",")] + (["json"] if args.json else [])


# the flags a lesson brings its own value for (a lesson runs its models and prompts, each step checked)
_LESSON_OWN = ("--model", "--params", "--prompt", "--prompt-ids", "--chat", "--arithmetic", "--no-check")

# the rules of every sub-command with the sampling flags
XTC_RULE = Rule(("--xtc-threshold",), "XTC only runs with --xtc-probability above 0 (how often the top choices "
                                      "are excluded); add --xtc-probability P, or leave out --xtc-threshold",
                lambda args: not args.xtc_probability)

# the rules every sub-command that makes a run has (trace, export, lesson new)
RUN_RULES = (
    XTC_RULE,
    *(Rule((flag, "--lesson"), f"a lesson runs its own models and prompts, each step checked; leave out --lesson "
                               f"for a free run, or {flag}") for flag in _LESSON_OWN),
    Rule(("--model", "--params"), "--params is a parameter file of the teaching model, --model another model; "
                                  "give one of them"),
    Rule(("--chat", "--prompt-ids"), "--chat wraps --prompt text in the model's chat template, and --prompt-ids "
                                     "are fed as they are; give --prompt to wrap, or leave out --chat"),
    Rule(("--chat", "--params"), "the teaching model of a parameter file has no chat template; leave out --chat"),
    Rule(("--arithmetic", "--params"), "the teaching model computes in float64 only; --arithmetic llama.cpp is for "
                                       "a model read from a quantised GGUF file (--model)"),
    Rule(("--ngram",), "the n-gram length of prompt lookup only applies with --speculative K (give both, or leave "
                       "--ngram out)", lambda args: args.speculative is None),
    Rule(("--force", "--speculative"), "a what-if cannot be combined with speculative decoding (it verifies the "
                                       "model's own choices)"),
    Rule(("--force", "--mode"), "a beam search expands every candidate of each beam; a what-if picks one "
                                "token of one run (expected --mode greedy or sample)", lambda args: args.mode == "beam"),
    Rule(("--speculative", "--mode"), "a beam keeps several sequences; speculative decoding verifies one "
                                      "(expected --mode greedy or sample)", lambda args: args.mode == "beam"),
)

# flag of each sampling stage: its name as a flag (XTC: the flag that turns it on)
STAGE_FLAGS = {name: "--" + ("xtc-probability" if name == "xtc" else name.replace("_", "-"))
               for name in ALL_STAGE_NAMES}
# the sampling flags that shape the distribution but never change a greedy choice (argmax)
GREEDY_BLIND = (*(STAGE_FLAGS[name] for name in ARGMAX_KEEPING), "--seed")
BEAM_ONLY = ("--beam-width", "--length-penalty")
# the flags a beam search does not read (it scores by the log-probabilities after Hugging Face's logits
# processors, BEAM_PROCESSORS, and ends on EOS or length)
SAMPLING_FLAGS = (*STAGE_FLAGS.values(), "--xtc-threshold", "--min-keep", "--seed", "--order", "--stop")
BEAM_BLIND = tuple(flag for flag in SAMPLING_FLAGS if flag not in (STAGE_FLAGS[s] for s in BEAM_PROCESSORS))
OPENAI_ONLY = (STAGE_FLAGS["presence_penalty"], STAGE_FLAGS["frequency_penalty"])


def beam_blind_reason(flag: str) -> str:
    """Why a beam search does not act on `flag` (one of BEAM_BLIND), said as Hugging Face's does."""
    if flag == "--order":
        return ("a beam search runs no stage of a draw, and applies --repetition-penalty, --logit-bias and "
                "--min-new-tokens in Hugging Face's order, so there is no order to set")
    if flag == "--stop":
        return "a beam search ends a sequence on the end token or at --max-new-tokens; it reads no stop strings"
    if flag in OPENAI_ONLY:
        return (f"{flag} is OpenAI's, whose API has no beam search, and Hugging Face's beam search has no such "
                f"stage (its --repetition-penalty is applied)")
    return (f"a beam search draws nothing: it keeps the sequences with the highest sums of log-probabilities, and "
            f"{flag} only shapes a draw (Hugging Face's beam search ignores it too, unless do_sample=True)")


LANG_JSON = Rule(("--lang", "--json"), "the JSON is the same in every language; leave out --lang, or --json for "
                                      "the table")

RULES: dict[str, tuple[Rule, ...]] = {
    "trace": RUN_RULES + (
        Rule(("--top",), "the candidates per step are listed in the JSON only; add --json, or leave out --top",
             lambda args: not args.json),
        Rule(("--no-check", "--mode"), "the beam tree is printed without the comparison with a full "
                                       "recomputation, so there is nothing to skip; leave out --no-check",
             lambda args: args.mode == "beam"),
        Rule(("--json", "--mode"), "the JSON holds one run per scenario, not a beam tree (printed as text); leave "
                                   "out --json to see the tree", lambda args: args.mode == "beam"),
        LANG_JSON,
        *(Rule(("--lens", flag), f"the lens reads the steps of one generated run, and {flag} makes "
                                 f"{'a beam tree' if flag == '--mode' else 'verify passes'}; leave out one of the two",
               (lambda args: args.mode == "beam") if flag == "--mode" else (lambda args: True))
          for flag in ("--speculative", "--mode")),
        *(Rule(("--vs", flag), f"--vs compares two generated runs of one free prompt step by step; leave out "
                               f"one of --vs and {flag}",
               (lambda args: args.mode == "beam") if flag == "--mode" else (lambda args: True))
          for flag in ("--lesson", "--speculative", "--mode", "--lens")),
    ),
    "export": RUN_RULES + (
        Rule(("--speculative", "--lesson"), "a lesson's slides show its own decoding; give --model or --prompt for a "
                                            "free run decoded speculatively (token-explorer trace --lesson NAME "
                                            "--speculative K prints a lesson decoded speculatively)"),
        *(Rule(("--list", flag), f"--list prints the lessons, panels and frames and writes nothing; leave out "
                                 f"{flag}, or --list to export")
          for flag in ("--out", "--format", "--style", "--size", "--scale", "--theme", "--frames", "--panel",
                       "--no-caption", "--intermediates", "--json", "--top", "--force", "--no-check", "--arithmetic",
                       "--order", "--beam-width", "--length-penalty", "--max-slides")),
        Rule(("--max-slides", "--frames"), "--frames chooses the slides itself; --max-slides only bounds an export "
                                           "of every frame; leave out --max-slides"),
        Rule(("--json", "--format"), "--format already writes the JSON handout; leave out --json",
             lambda args: "json" in [f.strip() for f in args.format.split(",")]),
        Rule(("--top",), "the candidates per step are written in the CSV and JSON handouts only; add --format csv "
                         "or json, or leave out --top",
             lambda args: not {"csv", "json"} & set(_formats(args))),
        Rule(("--intermediates",), "the intermediate values go into the JSON handout; add --format json (or "
                                   "--json), or leave out --intermediates",
             lambda args: "json" not in _formats(args)),
        *(Rule(("--format", flag), f"the formats asked for are handouts (CSV, JSON): no slide is drawn, so {flag} "
                                   f"has nothing to shape; add png, pdf, pptx or svg, or leave out {flag}", _no_slides)
          for flag in ("--style", "--size", "--scale", "--theme", "--frames", "--panel", "--no-caption",
                       "--max-slides")),
    ),
    "model install": (
        Rule(("--accept-terms",), "this model is under an open licence with no terms to accept; leave out "
                                  "--accept-terms", lambda args: MODELS[args.name].terms is None),
    ),
    "lesson new": RUN_RULES + (
        Rule(("--no-check",), "a lesson's steps are compared with a full recomputation whenever it is opened; the "
                              "file has no setting to skip it; leave out --no-check"),
        Rule(("--speculative", "--lesson"), "the lesson written is the lesson's own runs; give --model or --prompt "
                                            "for a free run decoded speculatively"),
    ),
    "sample": (
        LANG_JSON,
        XTC_RULE,
        *(Rule((flag,), f"{flag} belongs to the next-token logits of --model; with --logits or --probs give the "
                        f"numbers themselves", _no_model)
          for flag in ("--prompt", "--chat", "--top", "--arithmetic")),
        Rule(("--mode",), "`sample` shows one distribution and one choice; a beam keeps several sequences "
                          "(token-explorer trace --mode beam shows the search)", lambda args: args.mode == "beam"),
        *(Rule((flag,), f"`sample` makes one choice from one distribution; {flag} belongs to a beam search "
                        f"(token-explorer trace --mode beam)") for flag in BEAM_ONLY),
        *(Rule((flag,), f"`sample` makes one choice from one distribution and generates nothing; {flag} belongs "
                        f"to a generation (token-explorer trace {flag} ...)") for flag in ("--max-new-tokens", "--stop")),
        Rule(("--seen",), "the ids already seen only matter to --repetition-penalty, --presence-penalty, "
                          "--frequency-penalty and --min-new-tokens; add one of them, or leave out --seen",
             lambda args: args.repetition_penalty in (None, 1.0) and not args.presence_penalty
             and not args.frequency_penalty and not args.min_new_tokens),
        Rule(("--repetition-penalty",), "no id is marked as already seen, so the penalty pushes nothing down; add "
                                        "--seen IDS (or --model, whose prompt counts)",
             lambda args: not args.seen and args.model is None),
        *(Rule((flag,), f"no id is marked as already output, so {flag} pushes nothing down; add --seen IDS",
               lambda args: not args.seen) for flag in ("--presence-penalty", "--frequency-penalty")),
        *(Rule((flag,), "the choice is greedy (the highest logit), so no u is drawn; add --mode sample with a "
                        f"temperature above 0, or leave out {flag}",
               lambda args: args.mode == "greedy" or (args.temperature is not None and args.temperature <= 0))
          for flag in ("--seed", "--step")),
    ),
}


def given_flags(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict[str, str]:
    """Option -> how it was given ("--top 5"), for each option whose value is not its default."""
    out = {}
    for action in parser._actions:                 # argparse keeps no public list
        if not action.option_strings or action.dest in ("help", "version"):
            continue
        value = getattr(args, action.dest, action.default)
        if value != action.default:
            flag = action.option_strings[0]
            out[flag] = flag if isinstance(action, argparse._StoreTrueAction) else f"{flag} {_shown(value)}"
    return out


def _shown(value) -> str:
    if isinstance(value, list) and value and all(isinstance(v, tuple) for v in value):   # --force STEP:ID
        return " ".join(":".join(map(str, v)) for v in value)
    if isinstance(value, list):
        return ",".join(map(str, value)) if all(not isinstance(v, (list, tuple)) for v in value) else \
            " ".join(map(str, value))
    text = str(value)
    return text if len(text) <= 40 else text[:37] + "…"


def command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[str, argparse.ArgumentParser]:
    """("lesson new", its parser): the sub-command (and its action) the arguments are for."""
    names = []
    while True:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        name = getattr(args, sub.dest, None) if sub is not None else None
        if name is None:
            return " ".join(names), parser
        names.append(name)
        parser = sub.choices[name]


def check_flags(command: str, args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """SettingError for the first rule of `command` (its parser `parser`) the given flags break."""
    given = given_flags(args, parser)
    for rule in RULES.get(command, ()):
        if all(flag in given for flag in rule.flags) and rule.when(args):
            said = " with ".join(given[flag] for flag in rule.flags)
            raise SettingError(f"{said}: {rule.reason}")


def order_refusal(args: argparse.Namespace, order, left_out, name: str = "") -> SettingError:
    """The refusal of an --order (or a lesson's order) that leaves out stages that are on,
    naming the flags that turned them on (or the lesson, which did)."""
    given = {flag for flag in (*SAMPLING_FLAGS, *BEAM_ONLY) if getattr(args, flag[2:].replace("-", "_"), None) is not None}
    of = f" (the lesson's run {name!r})" if name else ""
    flags = [STAGE_FLAGS[s] for s in left_out]
    set_by = ", ".join(f if f in given else f"{s} (set by the lesson)" for s, f in zip(left_out, flags))
    mine = [f for f in flags if f in given]
    return SettingError(f"--order {','.join(order)} with {set_by}{of}: a stage left out of the order never runs; "
                        f"name every active stage in --order (e.g. "
                        f"{','.join(s for s in STAGE_FLAGS if s in (*order, *left_out))}), or "
                        f"leave out {' and '.join(mine) if mine else '--order'}")


def check_settings(command: str, args: argparse.Namespace, configs: list[tuple[str, SamplingConfig]],
                   as_table: bool) -> None:
    """Checks that need the run's settings (a lesson brings its own): every active stage is in
    the order, the beam's flags meet a beam, a beam search is given no flag it does not read,
    and (for a table of choices, `as_table`) a greedy run is given no flag that could only
    reshape a draw. `configs`: (name of the run, its
    settings): "" for a free run, the lesson's scenario otherwise."""
    given = {flag for flag in (*SAMPLING_FLAGS, *BEAM_ONLY)
             if getattr(args, flag[2:].replace("-", "_"), None) is not None}
    for name, config in configs:
        left_out = [stage for stage in config.active_stages if stage not in config.order]
        if left_out:
            raise order_refusal(args, config.order, left_out, name)
    of = " (every run of the lesson)" if any(name for name, _ in configs) else ""
    modes = {config.mode for _, config in configs}
    if "beam" not in modes:
        for flag in BEAM_ONLY:
            if flag in given:
                raise SettingError(f"{flag} in {' and '.join(sorted(modes))} mode{of}: it belongs to a beam search; "
                                   f"add --mode beam, or leave out {flag}")
    if modes == {"beam"}:                 # the flag would change at most the drawing of the greedy path
        mode = "with --mode beam" if getattr(args, "mode", None) == "beam" else "in beam mode"
        for flag in BEAM_BLIND:
            if flag in given:
                raise SettingError(f"{flag} {mode}{of}: {beam_blind_reason(flag)}; add --mode greedy or sample, "
                                   f"or leave out {flag}")
    if as_table and all(_greedy(config) for _, config in configs):
        for flag in GREEDY_BLIND:
            if flag in given and not (flag == "--temperature" and "sample" in modes):   # T <= 0 made it greedy
                raise SettingError(f"{flag} in greedy mode{of}: the choice is the highest logit, which {flag} "
                                   f"does not change, and the table shows the choices; add --mode sample to "
                                   f"draw, --json to see the reshaped probabilities, or leave out {flag}")


def _greedy(config: SamplingConfig) -> bool:
    """Whether every choice is the highest logit (no draw)."""
    return config.mode == "greedy" or (config.mode == "sample" and config.temperature <= 0)


def session_configs(session) -> list[tuple[str, SamplingConfig]]:
    """(name of the run, its settings) of every scenario of a session: "" for a free run."""
    content = session.content
    if content is None:
        return [("", s.config) for s in session.scenarios]
    names = [name for name, _ in content.scenarios] if len(content.scenarios) > 1 else [content.id]
    return [(name, s.config) for name, s in zip(names, session.scenarios)]
