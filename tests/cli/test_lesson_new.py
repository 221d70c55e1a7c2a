"""`token-explorer lesson new` as a teacher scripting a course runs it: the lesson of a run given
by trace's flags, traced and exported as the run itself is; an existing file is kept unless
--replace; saved shipped lessons export byte for byte as the lessons they were saved from."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from explorer.catalog.load import load_model
from explorer.cli.main import main
from explorer.lessons import load_lesson
from explorer.lessons.writer import lesson_document
from explorer.session import Session

RUN = ["--prompt", "我爱", "--mode", "sample", "--temperature", "1.5", "--top-p", "0.9", "--seed", "4",
       "--max-new-tokens", "4", "--stop", "你你", "--force", "1:4"]


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def trace_json(capsys, *argv) -> dict:
    code, out, err = run_cli(capsys, "trace", *argv, "--json", "--top", "7")
    assert code == 0, err
    data = json.loads(out)
    steps = [{k: v for k, v in s.items() if k != "forward_ms"} for s in data.pop("steps")]
    data.pop("time_to_first_token_ms")
    data.pop("model")           # the lesson's model is named by its table, the run's by its flag
    return data | {"steps": steps}


def test_the_lesson_of_a_run_traces_as_the_run_with_the_same_ids_and_probabilities(capsys, tmp_path):
    out = tmp_path / "hot.lesson.toml"
    code, printed, err = run_cli(capsys, "lesson", "new", "--out", str(out), *RUN)
    assert code == 0, err
    assert printed.strip() == str(out)
    live, saved = trace_json(capsys, *RUN), trace_json(capsys, "--lesson", str(out))
    assert saved == live
    assert live["steps"][1]["forced"] and live["output_ids"][1] == 4
    assert [c["final_prob"] for c in saved["steps"][0]["candidates"]] == \
        [c["final_prob"] for c in live["steps"][0]["candidates"]]


def test_it_writes_what_save_as_lesson_writes_for_that_run(capsys, tmp_path):
    out = tmp_path / "hot.lesson.toml"
    assert run_cli(capsys, "lesson", "new", "--out", str(out), *RUN)[0] == 0
    model = load_model("teaching")
    session = Session(model, model.vocab.encode("我爱"))
    session.set_sampling(mode="sample", temperature=1.5, top_p=0.9, seed=4, max_new_tokens=4, stop_strings=("你你",))
    session.force(1, 4)
    assert out.read_text(encoding="utf-8") == lesson_document(session)


def test_a_lesson_and_flags_over_it_are_saved_too(capsys, tmp_path):
    out = tmp_path / "cold.lesson.toml"
    assert run_cli(capsys, "lesson", "new", "--out", str(out), "--lesson", "sampling", "--temperature", "0.3")[0] == 0
    session = load_lesson("sampling").build_session()
    session.set_sampling(temperature=0.3)
    assert out.read_text(encoding="utf-8") == lesson_document(session)


def test_an_existing_file_is_kept_unless_replace_is_given(capsys, tmp_path):
    out = tmp_path / "mine.lesson.toml"
    out.write_text("my own notes\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "lesson", "new", "--out", str(out), "--prompt", "我爱")
    assert code == 2 and f"{out}: exists; give --replace" in err
    assert out.read_text(encoding="utf-8") == "my own notes\n"
    assert run_cli(capsys, "lesson", "new", "--out", str(out), "--prompt", "我爱", "--replace")[0] == 0
    assert out.read_text(encoding="utf-8").startswith("# Saved by Token Explorer")


@pytest.mark.parametrize("argv, said", [
    (["--out", "x.txt"], "--out x.txt: expected a lesson file name ending in .toml"),
    (["--out", "{dir}/none/x.lesson.toml"], "does not exist"),
    (["--out", "{dir}/x.lesson.toml", "--force", "9:3", "--max-new-tokens", "2"], "--force 9:3"),
    (["--out", "{dir}/x.lesson.toml", "--lesson", "sampling", "--prompt", "我"], "--prompt 我 with --lesson sampling"),
])
def test_bad_requests_say_what_is_wrong_and_write_nothing(capsys, tmp_path, argv, said):
    code, _, err = run_cli(capsys, "lesson", "new", *[a.replace("{dir}", str(tmp_path)) for a in argv])
    assert code == 2 and said in err
    assert list(tmp_path.iterdir()) == []


def export_bytes(capsys, folder, *argv) -> dict[str, bytes]:
    code, _, err = run_cli(capsys, "export", *argv, "--format", "png", "--out", str(folder))
    assert code == 0, err
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_the_lesson_of_a_run_exports_the_same_slides_as_the_run(capsys, tmp_path):
    out = tmp_path / "hot.lesson.toml"
    short = [*RUN[:RUN.index("--max-new-tokens")], "--max-new-tokens", "2"]
    assert run_cli(capsys, "lesson", "new", "--out", str(out), *short)[0] == 0
    live = export_bytes(capsys, tmp_path / "live", *short)
    saved = export_bytes(capsys, tmp_path / "saved", "--lesson", str(out))
    assert list(saved) == list(live) and len(live) == 6
    assert saved == live


def export_bytes_fresh(folder, *argv) -> dict[str, bytes]:
    """`export_bytes` in a process of its own, as a teacher runs it: within one process Qt
    may rasterise a large glyph (a question card's "?") a shade differently the first time
    after other slides were drawn, which says nothing about the lesson."""
    done = subprocess.run([sys.executable, "-m", "explorer", "export", *argv, "--format", "png",
                           "--out", str(folder)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("name", ["wo-ai-to-eos", "prefill-decode"])
def test_a_shipped_lesson_saved_unchanged_exports_byte_for_byte(capsys, tmp_path, name):
    out = tmp_path / f"{name}-copy.lesson.toml"
    assert run_cli(capsys, "lesson", "new", "--out", str(out), "--lesson", name)[0] == 0
    original = export_bytes_fresh(tmp_path / "original", "--lesson", name)
    copy = export_bytes_fresh(tmp_path / "copy", "--lesson", str(out))
    assert list(copy) == list(original)
    assert copy == original
