"""`token-explorer export` takes every flag `trace` takes: the same command line gives the
same run, and a bad value is refused with a message naming the flag and the value."""

import json
from pathlib import Path

import pytest

from explorer.cli.main import build_parser, main

PARAMS = Path(__file__).resolve().parents[2] / "params" / "teaching.json"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def options(command: str) -> set[str]:
    parser = build_parser().commands[command]
    return {name for action in parser._actions for name in action.option_strings}   # argparse keeps no public list


def test_export_has_every_option_of_trace():
    trace, export = options("trace"), options("export")
    assert "--force" in trace and "--speculative" in trace
    assert trace - export == {"--lens", "--vs"}      # views of trace alone: a lens table, two runs compared


def handout(folder: Path) -> dict:
    (path,) = folder.glob("*.json")
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("flags", [
    ["--prompt", "我爱", "--force", "0:4"],
    ["--prompt-ids", "1,2,3", "--max-new-tokens", "2", "--force", "0:4", "--force", "1:5"],
    ["--params", str(PARAMS), "--prompt", "我爱", "--mode", "sample", "--temperature", "1.5", "--seed", "7",
     "--top", "3", "--no-check"],
    ["--prompt-ids", "1,1,3,4", "--max-new-tokens", "12", "--speculative", "3", "--ngram", "1"],
])
def test_export_with_the_flags_of_a_trace_writes_that_run(qapp, capsys, tmp_path, flags):
    code, traced, err = run(capsys, "trace", *flags, "--json")
    assert code == 0, err
    code, _, err = run(capsys, "export", *flags, "--json", "--format", "png", "--out", str(tmp_path))
    assert code == 0, err
    data, traced = handout(tmp_path), json.loads(traced)
    assert data["output_ids"] == traced["output_ids"] and data["prompt_ids"] == traced["prompt_ids"]
    assert [s["selected_id"] for s in data["steps"]] == [s["selected_id"] for s in traced["steps"]]
    assert list(tmp_path.glob("*.png"))                           # the slides too (--json adds, --format stays)
    if "--force" in flags:
        assert data["steps"][0]["selected_id"] == 4 and data["steps"][0]["forced"]
    if "--top" in flags:
        assert {len(s["candidates"]) for s in data["steps"]} == {3}
    if "--speculative" in flags:                  # fewer forward passes than output tokens
        assert len(data["steps"]) < len(data["output_ids"])


@pytest.mark.parametrize("argv, message", [
    (["--force", "9"], "--force '9' is not STEP:ID; expected STEP:ID"),
    (["--force", "0:x"], "--force ID 'x' is not an integer"),
    (["--force", "0:4", "--force", "0:5"], "--force 0:5: step 0 is already forced to 4"),
    (["--prompt", "我爱", "--force", "0:99"], "--force 0:99: override at step 0: id 99"),
    (["--prompt", "我爱", "--force", "7:4"], "--force 7:4"),
    (["--top", "0"], "--top '0' is out of range; expected an integer from 1 to 1,000"),
    (["--speculative", "0", "--prompt", "我爱"], "--speculative '0' is out of range; expected an integer from 1 to 64"),
    (["--ngram", "3"], "--ngram 3: the n-gram length of prompt lookup only applies with --speculative"),
    (["--speculative", "3"], "--speculative 3 with the lesson 'wo-ai-to-eos'"),
    (["--speculative", "3", "--prompt", "我爱", "--force", "0:4"], "--force 0:4 with --speculative 3: a what-if cannot be combined"),
    (["--speculative", "3", "--prompt", "我爱", "--mode", "beam"], "--speculative 3 with --mode beam: a beam keeps several sequences"),
    (["--params", "p.json", "--model", "teaching"], "--model teaching with --params p.json: --params is a parameter file"),
    (["--params", "missing.json"], "missing.json"),
])
def test_a_bad_flag_value_is_refused_naming_the_flag_and_value(capsys, tmp_path, argv, message):
    code, _, err = run(capsys, "export", *argv, "--out", str(tmp_path / "out"))
    assert code == 2 and message in err, err
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_a_value_of_the_wrong_type_is_refused_while_the_command_line_is_read(capsys, tmp_path):
    assert main(["export", "--top", "abc", "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == ("token-explorer export: error: --top 'abc' is not an integer; "
                                       "expected an integer from 1 to 1,000\n")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["trace", "export"])
@pytest.mark.parametrize("flags, named", [
    (["--prompt", "我爱"], "--prompt 我爱"), (["--params", "p.json"], "--params p.json"), (["--chat"], "--chat"),
    (["--arithmetic", "llama.cpp"], "--arithmetic llama.cpp"), (["--no-check", "--prompt-ids", "1,2"], "--prompt-ids 1,2"),
])
def test_a_free_runs_flag_beside_a_lesson_is_refused_not_ignored(capsys, tmp_path, command, flags, named):
    """A lesson runs its own models and prompts: a model, prompt or check flag given with it
    would change nothing, so it is refused, named."""
    out = ["--out", str(tmp_path / "deck")] if command == "export" else []
    code, _, err = run(capsys, command, "--lesson", "sampling", *flags, *out)
    assert code == 2 and f"{named} with --lesson sampling" in err, err
    assert not (tmp_path / "deck").exists()
