"""No flag the user typed is silently ignored: every pair of flags of every sub-command, read
from the argparse parsers themselves (a flag added later is covered, and fails here until
it has a sample value), is either refused (exit 2) with a message naming both flags, or each
flag of the pair changes what the command prints (or, for export, what it would draw).

A flag that needs a context to mean anything (--beam-width needs --mode beam, --chat a
model with a chat template) is tried inside that context: CONTEXT. The runs are tiny: the
teaching model (or a 2-layer GGUF file), export's drawing replaced by a record of what it
was asked to draw."""

from __future__ import annotations

import itertools
import json
import re

import pytest

from cli_parsers import commands, options
from gguf_files import tiny  # noqa: F401  (fixture)

from explorer.cli.main import main
from explorer.core.models.teaching import default_params_path

# flag -> its sample value (an argv fragment), different from the default; "{x}" fields are filled per test
SAMPLES = {
    "--prompt": ["--prompt", "我爱学习"], "--prompt-ids": ["--prompt-ids", "1,2,3"], "--model": ["--model", "{tiny}"],
    "--chat": ["--chat"], "--arithmetic": ["--arithmetic", "llama.cpp"], "--lesson": ["--lesson", "sampling"],
    "--params": ["--params", "{params}"], "--no-check": ["--no-check"], "--force": ["--force", "0:0"],
    "--top": ["--top", "2"], "--lang": ["--lang", "zh"], "--json": ["--json"], "--speculative": ["--speculative", "2"],
    "--ngram": ["--ngram", "3"], "--mode": ["--mode", "sample"], "--temperature": ["--temperature", "2"],
    "--top-k": ["--top-k", "2"], "--top-p": ["--top-p", "0.5"], "--min-p": ["--min-p", "0.3"],
    "--repetition-penalty": ["--repetition-penalty", "3"], "--seed": ["--seed", "3"],
    "--order": ["--order", "llama.cpp"], "--max-new-tokens": ["--max-new-tokens", "2"], "--stop": ["--stop", "！"],
    "--beam-width": ["--beam-width", "3"], "--length-penalty": ["--length-penalty", "0.5"],
    "--presence-penalty": ["--presence-penalty", "1.5"], "--frequency-penalty": ["--frequency-penalty", "1"],
    "--typical-p": ["--typical-p", "0.5"], "--min-keep": ["--min-keep", "2"],
    "--xtc-probability": ["--xtc-probability", "1"], "--xtc-threshold": ["--xtc-threshold", "0.05"],
    "--top-n-sigma": ["--top-n-sigma", "0.5"], "--min-new-tokens": ["--min-new-tokens", "5"],
    "--logit-bias": ["--logit-bias", "1:5"],
    "--lens": ["--lens"], "--vs": ["--vs", "temperature=1.5,mode=sample"],
    # sample
    "--logits": ["--logits=3,1,0,-1"], "--probs": ["--probs", "0.5,0.3,0.2"], "--seen": ["--seen", "0"],
    "--step": ["--step", "1"],
    # export
    "--out": ["--out", "{out2}"], "--format": ["--format", "png"], "--style": ["--style", "window"],
    "--size": ["--size", "1280x720"], "--scale": ["--scale", "2"], "--theme": ["--theme", "high-contrast"],
    "--frames": ["--frames", "1-2"], "--panel": ["--panel", "distribution"], "--no-caption": ["--no-caption"],
    "--intermediates": ["--intermediates"], "--list": ["--list"], "--max-slides": ["--max-slides", "5"],
}
# (command, flag) -> the sample of that command, where it differs
COMMAND_SAMPLES = {("sample", "--mode"): ["--mode", "greedy"],          # sample's default mode is sample
                   ("sample", "--model"): ["--model", "teaching"]}
# (command, flag) -> the flags that give it a meaning: {flag: fragment}
_SAMPLED = {"--mode": ["--mode", "sample"]}
CONTEXT = {
    **{(c, f): {"--model": ["--model", "{tiny}"]} for c in ("trace", "export", "lesson new")
       for f in ("--chat", "--arithmetic")},
    **{(c, f): {"--mode": ["--mode", "beam"]} for c in ("trace", "export", "lesson new")
       for f in ("--beam-width", "--length-penalty")},
    **{(c, "--ngram"): {"--speculative": ["--speculative", "2"]} for c in ("trace", "export", "lesson new")},
    **{(c, "--order"): {"--temperature": ["--temperature", "2"], "--top-p": ["--top-p", "0.85"]}
       for c in ("trace", "export", "lesson new", "sample")},
    **{("trace", f): _SAMPLED for f in ("--temperature", "--top-k", "--top-p", "--min-p", "--seed")},
    **{(c, "--xtc-threshold"): {"--xtc-probability": ["--xtc-probability", "1"]}
       for c in ("trace", "export", "lesson new", "sample")},
    ("trace", "--top"): {"--json": ["--json"]},
    ("export", "--top"): {"--format": ["--format", "csv"]},
    ("export", "--intermediates"): {"--format": ["--format", "json"]},
    **{("sample", f): {"--model": ["--model", "teaching"]} for f in ("--prompt", "--top")},
    **{("sample", f): {"--model": ["--model", "{tiny}"]} for f in ("--chat", "--arithmetic")},
    ("sample", "--seen"): {"--repetition-penalty": ["--repetition-penalty", "2"]},
    ("sample", "--repetition-penalty"): {"--seen": ["--seen", "0,1"]},
}
# what every run of a command is given, and the flags that are part of it (not paired)
BASE = {"trace": [], "sample": ["--logits=3,1,0,-1"], "export": ["--out", "{out}"],
        "lesson new": ["--out", "{lesson}", "--replace"]}
BASE_FLAGS = {"lesson new": {"--out", "--replace"}}
SOURCES = {"sample": {"--logits", "--probs", "--model"}, "export": {"--out", "--list"}}   # replace the base
# sub-commands whose flags are permissions or files of their own, tried where they act
ELSEWHERE = {("model", "install"): "tests/catalog/test_model_install.py (a stand-in PyPI) and the corpus "
                                   "test_cli_combinations.py (--accept-terms without terms)",
             ("lesson", "check"): "no flags", ("model", "list"): "no flags", ("fit",): "one flag",
             ("model",): "no flags", ("lesson",): "no flags"}

TIMES = re.compile(r"\d+(?:\.\d+)? ms|\"[a-z_]*_ms\": [0-9.e-]+")


def named(flag: str, text: str) -> bool:
    return re.search(re.escape(flag) + r"(?![\w-])", text) is not None


class Runner:
    """Runs one sub-command in this process; what it printed, timings blanked, with what
    export would have drawn."""

    def __init__(self, command: str, fields: dict, monkeypatch, capsys):
        self.command, self.fields, self.capsys = command, fields, capsys
        self.cache: dict[tuple, tuple[int, str, str]] = {}
        self.drawn: list[str] = []
        if command == "export":
            import explorer.ui.slides.job as job

            def record(session, spec, deck_id, deck_title, progress=None, checks=(), window_class=None):
                runs = [(r.prompt_ids, r.output_ids, r.config, r.arithmetic, s.speculative, s.ngram)
                        for (r, _), s in zip(session.scenario_results(), session.scenarios)]
                self.drawn.append(repr((spec, deck_id, deck_title, checks, runs, len(session.frames),
                                        session.check_recompute)))
                return []
            monkeypatch.setattr(job, "export_session", record)

    def argv(self, fragments: dict) -> list[str]:
        return [part.format(**self.fields) for fragment in fragments.values() for part in fragment]

    def run(self, fragments: dict) -> tuple[int, str, str]:
        key = tuple((k, tuple(v)) for k, v in fragments.items())
        if key not in self.cache:
            self.drawn.clear()
            try:
                code = main([*self.command.split(), *self.argv(fragments)])
            except SystemExit as exc:                # argparse's own refusals (a choice, two of a group)
                code = exc.code
            out, err = self.capsys.readouterr()
            if self.command == "lesson new" and code == 0:
                out = open(self.fields["lesson"], encoding="utf-8").read()
            self.cache[key] = (code, TIMES.sub("T", out + "".join(self.drawn)), err)
        return self.cache[key]


def fragments_for(command: str, flags: tuple[str, ...]) -> dict:
    """The argv of a run of `flags`: the base (unless a flag replaces it), each flag's context,
    then the flags' own samples (which win over a context naming the same flag)."""
    out = {} if set(flags) & SOURCES.get(command, set()) else {"base": BASE[command]}
    for flag in flags:
        out.update(CONTEXT.get((command, flag), {}))
    for flag in flags:
        out[flag] = COMMAND_SAMPLES.get((command, flag), SAMPLES[flag])
    return out


def stand_ins(command: str, flag: str) -> set[str]:
    """The flags a message may name for `flag`: itself and its context's."""
    return {flag, *CONTEXT.get((command, flag), {})}


@pytest.fixture
def fields(tmp_path, tiny):  # noqa: F811
    params = json.loads(default_params_path().read_text(encoding="utf-8"))
    params["name"] = "teaching-edited"
    params["tensors"]["w_out"] = [[1.1 * w for w in row] for row in params["tensors"]["w_out"]]   # same argmax
    (tmp_path / "params.json").write_text(json.dumps(params), encoding="utf-8")
    return {"tiny": str(tiny[0]), "params": str(tmp_path / "params.json"), "out": str(tmp_path / "deck"),
            "out2": str(tmp_path / "other"), "lesson": str(tmp_path / "mine.toml")}


def parsers():
    found = {" ".join(path): parser for path, parser in commands()}
    tested = {name: parser for name, parser in found.items() if name in BASE}
    untested = {name for name in found if name not in BASE} - {" ".join(p) for p in ELSEWHERE}
    assert not untested, f"sub-commands without a pair test: {sorted(untested)} (add a BASE, or say where in ELSEWHERE)"
    return tested


def test_every_flag_has_a_sample_value():
    missing = [(name, flag) for name, parser in parsers().items() for flag in options(parser)
               if flag not in SAMPLES and flag not in BASE_FLAGS.get(name, set())]
    assert not missing, f"give these flags a sample value in SAMPLES: {missing}"


@pytest.mark.parametrize("command", sorted(BASE))
def test_every_pair_of_flags_takes_effect_or_is_refused_naming_both(command, fields, monkeypatch, capsys, qapp):
    parser = parsers()[command]
    flags = [f for f in options(parser) if f not in BASE_FLAGS.get(command, set())]
    runner = Runner(command, fields, monkeypatch, capsys)
    problems = []
    for a in flags:                                     # each alone: refused naming it, or it acts
        code, out, err = runner.run(fragments_for(command, (a,)))
        if code == 2:
            if not any(named(f, err) for f in stand_ins(command, a)):
                problems.append(f"{a} alone: refused without naming it: {err.strip()[-200:]}")
        elif code != 0:
            problems.append(f"{a} alone: exit {code}: {err.strip()[-300:]}")
        elif out == runner.run({k: v for k, v in fragments_for(command, (a,)).items() if k != a})[1]:
            problems.append(f"{a} alone: no effect on the output")
    for a, b in itertools.combinations(flags, 2):
        code, out, err = runner.run(fragments_for(command, (a, b)))
        if code == 2:
            last = err.strip().splitlines()[-1] if err.strip() else ""
            if not all(any(named(f, last) for f in stand_ins(command, x)) for x in (a, b)) \
                    and not any(runner.run(fragments_for(command, (x,)))[0] == 2 for x in (a, b)):
                problems.append(f"{a} {b}: refused without naming both: {last[-250:]}")
            continue
        if code != 0:
            problems.append(f"{a} {b}: exit {code}: {err.strip()[-300:]}")
            continue
        for x, y in ((a, b), (b, a)):
            without = {k: v for k, v in fragments_for(command, (x, y)).items() if k != x}
            if runner.run(without)[0] == 0 and runner.run(without)[1] == out:
                problems.append(f"{x} with {y}: {x} has no effect on the output")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)
