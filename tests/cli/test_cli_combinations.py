"""Broken requests of the command line beyond single numbers: flags that cannot take effect
together or in their context are refused naming each (exit 2), never dropped; a long export
is bounded by a stated limit; a long run's recompute check is capped and says so; a panel
export takes the frames that show the panel; an id outside the vocabulary names the id and
the range. (The pairwise sweep of every flag is test_flag_pairs.py; this is the corpus of
the cases a careful user meets.)"""

from __future__ import annotations

import io

import pytest

from gguf_files import tiny  # noqa: F401  (fixture)

from explorer.cli.main import main
from explorer.core.decode.generate import checks_step
from explorer.core.limits import CHECKED_FIRST, MAX_CHECKED_STEPS


def cli(capsys, argv) -> tuple[int, str, str]:
    try:
        status = main(argv)
    except SystemExit as exc:
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


REFUSED = [
    (["trace", "--lesson", "beam", "--prompt", "我爱你"], ["--prompt 我爱你 with --lesson beam"]),
    (["trace", "--lesson", "beam", "--model", "smollm2"], ["--model smollm2 with --lesson beam"]),
    (["export", "--lesson", "beam", "--arithmetic", "llama.cpp", "--out", "{tmp}/d"], ["--arithmetic", "--lesson"]),
    (["sample", "--logits", "1,2", "--prompt", "hello"], ["--prompt hello", "--model"]),
    (["sample", "--logits", "1,2", "--mode", "beam"], ["--mode beam", "trace --mode beam"]),
    (["sample", "--logits", "1,2", "--beam-width", "3"], ["--beam-width 3"]),
    (["sample", "--logits", "1,2", "--max-new-tokens", "3"], ["--max-new-tokens 3", "generates nothing"]),
    (["sample", "--logits", "1,2", "--seen", "0"], ["--seen 0", "--repetition-penalty"]),
    (["sample", "--logits", "1,2", "--repetition-penalty", "2"], ["--repetition-penalty 2", "--seen"]),
    (["sample", "--logits", "1,2", "--mode", "greedy", "--seed", "4"], ["--seed 4", "greedy"]),
    (["trace", "--mode", "sample", "--order", "temperature", "--top-k", "1"],
     ["--order temperature with --top-k", "name every active stage"]),
    (["trace", "--lesson", "sampling", "--order", "temperature"], ["--order temperature", "top_k (set by the lesson)"]),
    (["trace", "--temperature", "2"], ["--temperature in greedy mode", "--mode sample"]),
    (["trace", "--mode", "beam", "--top-p", "0.5"], ["--top-p with --mode beam", "draws nothing", "do_sample"]),
    # a beam search takes no flag it does not read, in every command that makes a run
    (["export", "--mode", "beam", "--temperature", "0.5", "--out", "{tmp}/d"],
     ["--temperature with --mode beam", "only shapes a draw"]),
    (["export", "--mode", "beam", "--top-k", "3", "--out", "{tmp}/d"], ["--top-k with --mode beam"]),
    (["export", "--mode", "beam", "--presence-penalty", "1", "--out", "{tmp}/d"],
     ["--presence-penalty with --mode beam", "OpenAI's, whose API has no beam search"]),
    (["lesson", "new", "--out", "{tmp}/x.toml", "--mode", "beam", "--stop", "x"],
     ["--stop with --mode beam", "reads no stop strings"]),
    (["lesson", "new", "--out", "{tmp}/x.toml", "--mode", "beam", "--order", "llama.cpp"],
     ["--order with --mode beam", "no order to set"]),
    (["trace", "--mode", "beam", "--xtc-probability", "1"], ["--xtc-probability with --mode beam"]),
    (["trace", "--mode", "beam", "--seed", "3"], ["--seed with --mode beam"]),
    (["trace", "--beam-width", "3"], ["--beam-width in greedy mode", "--mode beam"]),
    (["trace", "--mode", "beam", "--force", "0:4"], ["--force 0:4 with --mode beam"]),
    (["trace", "--top", "3"], ["--top 3", "--json"]),
    (["trace", "--json", "--lang", "zh"], ["--lang zh with --json"]),
    (["trace", "--arithmetic", "llama.cpp"], ["--arithmetic llama.cpp with --model teaching", "quantised GGUF"]),
    (["trace", "--params", "p.json", "--arithmetic", "llama.cpp"], ["--arithmetic llama.cpp with --params p.json"]),
    (["trace", "--chat", "--prompt-ids", "1,2,3", "--model", "{tiny}"], ["--chat with --prompt-ids 1,2,3"]),
    (["export", "--prompt-ids", "1,2,99", "--out", "{tmp}/d"], ["--prompt-ids", "id 99", "0..6"]),
    (["export", "--format", "csv", "--size", "1280x720", "--out", "{tmp}/d"], ["--format csv with --size 1280x720"]),
    (["export", "--list", "--format", "pdf"], ["--list with --format pdf", "writes nothing"]),
    (["export", "--format", "png", "--intermediates", "--out", "{tmp}/d"], ["--intermediates", "--format json"]),
    (["export", "--no-check", "--out", "{tmp}/d"], ["--no-check with the default lesson 'wo-ai-to-eos'"]),
    (["export", "--frames", "1", "--max-slides", "3", "--out", "{tmp}/d"], ["--max-slides 3 with --frames 1"]),
    (["lesson", "new", "--out", "{tmp}/x.toml", "--no-check"], ["--no-check", "whenever it is opened"]),
    (["model", "install", "smollm2", "--accept-terms"], ["--accept-terms", "no terms to accept"]),
    (["sample", "--logits", "1,2", "--seen", "5", "--repetition-penalty", "2"],
     ["--seen item 1 of 1: id 5 is outside the 2 ids of --logits (expected 0..1)"]),
    (["sample", "--model", "teaching", "--seen", "0,9", "--repetition-penalty", "2"],
     ["--seen item 2 of 2: id 9 is outside the 7 ids of the model's vocabulary (expected 0..6)"]),
    (["export", "--lesson", "beam", "--panel", "kv", "--out", "{tmp}/d"],
     ["--panel kv: none of the 8 frames shows it (its model has no layers", "timeline, distribution, beam"]),
    (["export", "--lesson", "beam", "--panel", "beam", "--frames", "1-5", "--out", "{tmp}/d"],
     ["--panel beam with --frames 1-5: frames 1-4 do not show it", "the frames that do: 5,7-8"]),
    (["export", "--max-slides", "5", "--out", "{tmp}/d"],
     ["would draw 10 slides (10 frames), more than the 5", "--frames", "--max-slides 10"]),
]


@pytest.mark.parametrize("argv, said", REFUSED, ids=[" ".join(a[:4]) for a, _ in REFUSED])
def test_a_combination_that_cannot_take_effect_is_refused_naming_it(capsys, tmp_path, tiny, argv, said):  # noqa: F811
    argv = [a.format(tmp=tmp_path, tiny=tiny[0]) for a in argv]
    code, out, err = cli(capsys, argv)
    assert code == 2 and out == "" and "Traceback" not in err, err
    for text in said:
        assert text in err, err
    assert list(tmp_path.iterdir()) == []                      # nothing written, no folder made


def test_an_export_longer_than_the_stated_limit_is_refused_with_its_count(capsys, tmp_path, monkeypatch):
    import explorer.cli.export as export_cli
    monkeypatch.setattr(export_cli, "MAX_SLIDES", 4)           # the default lesson has 10 frames
    code, _, err = cli(capsys, ["export", "--out", str(tmp_path / "d")])
    assert code == 2 and "would draw 10 slides (10 frames), more than the 4 an export draws unless asked" in err
    assert not (tmp_path / "d").exists()


def test_a_panel_export_takes_the_frames_that_show_the_panel_and_says_so(qapp, capsys, tmp_path):
    code, out, err = cli(capsys, ["export", "--lesson", "beam", "--panel", "beam", "--format", "png",
                                  "--out", str(tmp_path)])
    assert code == 0, err
    assert "--panel beam: frames 5,7-8 show it; the other frames are left out (of 8)" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["05-pick-step0-beam.png", "07-stop-step1-beam.png",
                                                          "08-stop-step1-beam.png"]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_long_export_shows_its_progress_on_a_terminal_and_clears_it(qapp, capsys, tmp_path, monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    code, out, _ = cli(capsys, ["export", "--frames", "1-3", "--format", "png", "--out", str(tmp_path)])
    assert code == 0
    shown = terminal.getvalue()
    assert "\r  1 of 3 (33%): 01-input.png" in shown and "3 of 3 (100%): 03-pick-step0.png" in shown
    assert shown.endswith("\r")                                # the line cleared before the paths
    assert out.split() == [str(tmp_path / n) for n in ("01-input.png", "02-prefill-step0.png", "03-pick-step0.png")]


@pytest.mark.parametrize("max_new_tokens", [1, 16, 32, 33, 100, 4096])
def test_the_recompute_check_of_a_long_run_is_capped(max_new_tokens):
    checked = [i for i in range(max_new_tokens) if checks_step(i, max_new_tokens)]
    if max_new_tokens <= MAX_CHECKED_STEPS:
        assert checked == list(range(max_new_tokens))
    else:
        assert checked[:CHECKED_FIRST] == list(range(CHECKED_FIRST)) and len(checked) == MAX_CHECKED_STEPS
        assert checked[-1] == max_new_tokens - 1               # the last step a run may reach is checked
        gaps = [b - a for a, b in zip(checked[CHECKED_FIRST:], checked[CHECKED_FIRST + 1:])]
        assert max(gaps) - min(gaps) <= 1                      # spread evenly


def test_a_long_trace_says_its_check_was_capped(capsys):
    # the teaching model led through 22 steps by what-ifs (我爱 again and again, then its own 学习 ！ <eos>)
    forces = [a for step in range(2, 21) for a in ("--force", f"{step}:{1 + step % 2}")]
    code, out, err = cli(capsys, ["trace", "--max-new-tokens", "100", *forces])
    assert code == 0, err
    # 100 new tokens at most: steps 0-15, then 16 checks at 16 + floor(k * 83 / 15), k = 0..15: 16, 21, 27, ...
    # of which a run of 22 steps (0-21) reaches 16 and 21
    assert "largest |cached - full recompute| over 18 of 22 steps" in out
    assert "(the check is capped at 32 steps a run: the first 16, then 16 spread evenly up to step 99; " \
           "--no-check skips it)" in out


def test_a_long_trace_shows_its_steps_on_a_terminal_and_prints_the_same_table(capsys, monkeypatch):
    argv = ["trace", "--mode", "sample", "--seed", "2", "--max-new-tokens", "5"]
    _, plain, _ = cli(capsys, argv)
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    code, out, _ = cli(capsys, argv)
    assert code == 0 and "\r  generating: step 5 of at most 5" in terminal.getvalue()
    assert terminal.getvalue().endswith("\r")                  # cleared before the table
    strip = lambda text: [line for line in text.splitlines() if "ms" not in line]   # noqa: E731 (timings)
    assert strip(out) == strip(plain)


def test_ctrl_c_while_an_exports_run_is_computed_stops_it_at_the_next_step(capsys, tmp_path, monkeypatch):
    import os
    import signal

    from explorer.cli.progress import ProgressLine
    steps = []

    def interrupted_at_the_first_step(self, stage, done, total):
        steps.append(done)
        if done == 1:
            os.kill(os.getpid(), signal.SIGINT)                  # Ctrl+C, caught by the export's handler
    monkeypatch.setattr(ProgressLine, "show", interrupted_at_the_first_step)
    code, out, err = cli(capsys, ["export", "--mode", "sample", "--temperature", "50", "--max-new-tokens", "40",
                                  "--prompt-ids", "1,2", "--out", str(tmp_path / "d")])
    assert code == 130 and out == "" and "export cancelled, nothing was written" in err
    assert steps == [1] and list(tmp_path.iterdir()) == []      # stopped after its first step (of 8 uninterrupted)


def test_a_beam_search_applies_the_processors_hugging_face_applies(capsys):
    code, plain, err = cli(capsys, ["trace", "--mode", "beam", "--max-new-tokens", "3"])
    assert code == 0, err
    for flags in (["--repetition-penalty", "3"], ["--logit-bias", "3:-2"], ["--min-new-tokens", "3"]):
        code, out, err = cli(capsys, ["trace", "--mode", "beam", "--max-new-tokens", "3", *flags])
        assert code == 0 and out != plain, (flags, err)
        assert "as in Hugging Face's beam search" in out
