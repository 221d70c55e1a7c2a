"""Work bounded by a count known up front is refused before it is done: an export's slide
count (a free run of N new tokens makes at most 2N + 2 frames; a lesson's frames are its
file's), and every refusal of the flags that needs only the settings. Each case runs the
real SmolLM2 in its own process whose generation is replaced by "exit 99": a refusal that
comes before any model runs exits 2 with its message, one that comes after exits 99 (no
timer)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from paths import SRC

NO_GENERATION = """
import sys
import explorer.lessons.lesson as lesson
import explorer.session.session as session
def generated(*args, **kwargs):
    print("a model ran", file=sys.stderr)
    sys.exit(99)
for module, names in ((session, ("generate", "speculative_generate", "beam_search")), (lesson, ("generate",))):
    for name in names:
        setattr(module, name, generated)
from explorer.cli.main import main
sys.exit(main({argv!r}))
"""


def without_generation(argv: list[str], tmp_path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(SRC), QT_QPA_PLATFORM="offscreen")
    return subprocess.run([sys.executable, "-c", NO_GENERATION.format(argv=argv)], env=env, text=True,
                          capture_output=True, cwd=tmp_path, timeout=300)


@pytest.mark.parametrize("argv, said", [
    (["export", "--model", "smollm2", "--max-new-tokens", "300"],
     ["--max-new-tokens 300: this export could draw up to 602 slides", "nothing was run",
      "up to 99 fit", "--frames", "--max-slides 602"]),
    (["export", "--model", "smollm2", "--max-new-tokens", "300", "--format", "html"],      # a student page too
     ["could draw up to 602 slides"]),
    (["export", "--model", "smollm2", "--max-slides", "10"],
     ["a run of up to 8 new tokens with --max-slides 10: this export could draw up to 18 slides"]),
    (["export", "--lesson", "real-model", "--max-slides", "2"], ["would draw", "more than the 2", "--frames"]),
    (["trace", "--model", "smollm2", "--max-new-tokens", "300", "--top-k", "3"], ["--top-k in greedy mode"]),
    (["trace", "--model", "smollm2", "--mode", "beam", "--temperature", "0.5"], ["--temperature"]),
    (["trace", "--model", "smollm2", "--mode", "sample", "--vs", "top_k=3,order=temperature"], ["order", "top_k"]),
    (["lesson", "new", "--model", "smollm2", "--beam-width", "3", "--out", "x.lesson.toml"],
     ["--beam-width in greedy mode"]),
])
def test_a_refusal_known_from_the_flags_comes_before_any_model_runs(tmp_path, smollm2, argv, said):
    done = without_generation(argv if argv[0] != "export" else [*argv, "--out", "deck"], tmp_path)
    assert done.returncode == 2, done.stderr
    assert "a model ran" not in done.stderr and "Traceback" not in done.stderr
    for words in said:
        assert words in done.stderr
    assert list(tmp_path.iterdir()) == []                # no slide, no folder, no lesson file


def test_an_export_within_the_bound_runs_the_model(tmp_path, smollm2):
    """The stand-in generation is reached when the count allows the export (the cases above
    would exit 99 if they ran a model)."""
    done = without_generation(["export", "--model", "smollm2", "--max-new-tokens", "300", "--max-slides", "602",
                               "--out", "deck"], tmp_path)
    assert done.returncode == 99 and "a model ran" in done.stderr
    done = without_generation(["export", "--model", "smollm2", "--max-new-tokens", "300", "--frames", "1-3",
                               "--out", "deck"], tmp_path)
    assert done.returncode == 99


def test_most_frames_of_a_run_is_what_a_run_to_its_length_makes():
    from explorer.core.decode.generate import generate
    from explorer.core.decode.sampling import SamplingConfig
    from explorer.core.models.teaching import load_teaching_model
    from explorer.session.frames import frames_of_run, most_frames_of_run
    model = load_teaching_model()
    for n in (1, 5, 12):
        run = generate(model, [1, 2], SamplingConfig(mode="sample", min_new_tokens=n, max_new_tokens=n))
        assert len(run.steps) == n and len(frames_of_run(run)) == most_frames_of_run(n)


def test_a_lesson_too_big_to_open_again_is_not_written(tmp_path, capsys):
    from explorer.cli.main import main
    out = tmp_path / "long.lesson.toml"
    code = main(["lesson", "new", "--mode", "sample", "--max-new-tokens", "500", "--min-new-tokens", "500",
                 "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "more than a lesson file may hold (1,048,576 bytes)" in err and "fewer new tokens" in err
    assert not out.exists() and list(tmp_path.iterdir()) == []


def numbers_in(value) -> int:
    if isinstance(value, dict):
        return sum(numbers_in(v) for v in value.values())
    if isinstance(value, list):
        return sum(numbers_in(v) for v in value)
    return 1 if value is None or isinstance(value, (int, float)) else 0      # the mask's true/false too


def test_the_numbers_of_an_intermediates_handout_are_counted_before_it_is_built(tmp_path, capsys, monkeypatch):
    import explorer.cli.export as export
    from explorer.catalog.load import load_model
    from explorer.cli.main import main
    from explorer.core.decode.generate import generate
    from explorer.core.decode.sampling import SamplingConfig
    from explorer.export.handouts import intermediate_numbers, trace_dict
    model = load_model("teaching")
    run = generate(model, [1, 2], SamplingConfig(max_new_tokens=5))
    forwards = [trace_dict(step.trace) for step in run.steps]
    ids = sum(numbers_in({k: f[k] for k in ("ids", "positions", "key_ids", "key_positions")}) for f in forwards)
    assert intermediate_numbers(run) == numbers_in(forwards) - ids        # every array, counted from its shape
    monkeypatch.setattr(export, "MAX_HANDOUT_NUMBERS", 100)
    monkeypatch.setattr("explorer.export.handouts.trace_dict", lambda _trace: pytest.fail("the JSON was built"))
    code = main(["export", "--format", "json", "--intermediates", "--prompt-ids", "1,2", "--out", str(tmp_path / "d")])
    err = capsys.readouterr().err
    assert code == 2 and "--intermediates: the JSON handout would hold" in err and "more than the 100 one holds" in err
    assert list(tmp_path.iterdir()) == []


def test_a_lessons_slides_are_counted_from_its_file_as_the_deck_draws_them():
    from explorer.export.spec import deck_slides, planned_slides
    from explorer.lessons import lesson_names, load_lesson
    asking = 0
    for name in lesson_names():
        lesson = load_lesson(name)
        if lesson.real_models:
            continue
        session = lesson.build_session()
        assert planned_slides(lesson.plans) == len(deck_slides(session, range(len(session.frames)))), name
        asking += any(frame.ask for frame in session.frames)
    assert asking >= 2                          # lessons with questions (two slides each) are among them
