"""`explorer trace` as a user runs it: the table, the JSON, and clear errors."""

import json
import subprocess
import sys

import pytest

from explorer.cli.main import main
from explorer.core.elide import elided, elided_list
from explorer.lessons import lesson_names, load_lesson


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_trace_json_of_the_default_prompt(capsys):
    code, out, _ = run_cli(capsys, "trace", "--prompt", "我爱", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["prompt_ids"] == [1, 2] and data["output_ids"] == [3, 5, 6]
    assert data["finish_reason"] == "eos"
    steps = data["steps"]
    assert [s["cache_len_after"] for s in steps] == [2, 3, 4]
    assert [s["phase"] for s in steps] == ["prefill", "decode", "decode"]
    assert [s["input_ids"] for s in steps] == [[1, 2], [3], [5]]
    assert [s["positions"] for s in steps] == [[0, 1], [2], [3]]
    assert [s["selected_text"] for s in steps] == ["学习", "！", "<eos>"]
    assert all(s["recompute_max_abs_diff"] < 1e-9 for s in steps)
    first = steps[0]["candidates"]
    assert first[0]["id"] == 3 and len(first) == 7
    assert abs(sum(c["prob"] for c in first) - 1) < 1e-12
    assert data["visible_count"] == 5 and data["cache_len"] == 4


def test_trace_table_in_chinese(capsys):
    code, out, _ = run_cli(capsys, "trace", "--prompt", "我爱", "--lang", "zh")
    assert code == 0
    for text in ("时刻", "本次输入", "结束后KV包含", "位置1的logits", "Decode 2", "可见序列：5个Token", "已进缓存：4",
                 "结束原因：eos"):
        assert text in out


def test_trace_table_in_english_marks_length_as_incomplete(capsys):
    code, out, _ = run_cli(capsys, "trace", "--prompt-ids", "1,2,3", "--max-new-tokens", "2",
                           "--force", "0:4", "--force", "1:5")
    assert code == 0
    assert "visible sequence: 5 tokens   in cache: 4   text shown: 2 characters" in out
    assert "INCOMPLETE" in out and "(forced)" in out


def test_a_long_prompt_is_shortened_in_the_table_and_listed_whole_above_it(capsys):
    ids = [1, 2] * 6 + [1]                                         # 13 tokens at positions 0..12
    code, out, _ = run_cli(capsys, "trace", "--prompt-ids", ",".join(map(str, ids)), "--max-new-tokens", "1")
    assert code == 0
    lines = out.splitlines()
    assert lines[:3] == ["model: teaching (computing in float64)", "settings: greedy, max-new-tokens 1",
                         "prompt: " + " ".join("我爱"[i - 1] for i in ids) + f" {ids}"]
    prefill = next(line for line in lines if line.startswith("Prefill"))
    assert "我 爱 我 爱 我 …(+3)… 我 爱 我 爱 我 [1, 2, 1, 2, 1, …(+3)…, 1, 2, 1, 2, 1]" in prefill
    assert "0,1,2,3,4,…(+3)…,8,9,10,11,12" in prefill


def test_elided_keeps_short_lists_whole():
    assert elided(list("abcdefghijk"), "") == "abcdefghijk"                     # 2 * 5 + 1 items
    assert elided(list("abcdefghijkl"), "") == "abcde…(+2)…hijkl"
    assert elided(["x"] * 9, ",", ends=1) == "x,…(+7)…,x"
    assert elided_list([1, 2]) == str([1, 2]) and elided_list(range(12)) == "[0, 1, 2, 3, 4, …(+2)…, 7, 8, 9, 10, 11]"


@pytest.mark.parametrize("argv, message", [
    (["--prompt", "我恨"], "character '恨' at position 1 is not in the vocabulary"),
    (["--prompt-ids", "1,9"], "id 9 at index 1 is outside the vocabulary"),
    (["--chat"], "--chat: the model 'teaching' has no ChatML chat template"),
    (["--prompt-ids", "1,x"], "--prompt-ids item 2 of 2: 'x' is not an integer; expected an integer from 0 to"),
    (["--prompt", ""], "prompt is empty"),
    (["--prompt-ids", ""], "--prompt-ids '' is empty"),
    (["--max-new-tokens", "0"], "--max-new-tokens '0' is out of range; expected an integer from 1 to 4,096"),
    (["--params", "/nonexistent/p.json"], "p.json: file not found"),
    (["--force", "1"], "--force '1' is not STEP:ID"),
    (["--force", "0:99"], "id 99"),
])
def test_bad_input_exits_2_with_a_message(capsys, argv, message):
    code, out, err = run_cli(capsys, "trace", *argv)
    assert code == 2
    assert message in err
    assert "Traceback" not in err and out == ""


def test_bad_parameter_file_from_the_command_line(capsys, tmp_path):
    bad = tmp_path / "p.json"
    bad.write_text('{"format": "token-explorer/params", "version": 1}', encoding="utf-8")
    code, _, err = run_cli(capsys, "trace", "--params", str(bad))
    assert code == 2 and "p.json: vocabulary: missing" in err


def test_installed_entry_point_runs_as_a_module():
    proc = subprocess.run([sys.executable, "-m", "explorer", "trace", "--prompt-ids", "1,2", "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["output_ids"] == [3, 5, 6]


def test_fit_command_writes_the_same_bytes(capsys, tmp_path):
    from explorer.core.models.teaching import default_params_path
    out = tmp_path / "t.json"
    code, printed, _ = run_cli(capsys, "fit", "--out", str(out))
    assert code == 0 and str(out) in printed
    assert out.read_bytes() == default_params_path().read_bytes()


def test_trace_on_the_real_model(capsys, smollm2):
    code, out, err = run_cli(capsys, "trace", "--model", "smollm2", "--max-new-tokens", "1", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["steps"][0]["selected_text"] == " Paris"
    assert data["steps"][0]["recompute_max_abs_diff"] < 1e-3


def test_model_and_params_together_are_refused(capsys):
    code, _, err = run_cli(capsys, "trace", "--model", "teaching", "--params", "x.json")
    assert code == 2 and "--model teaching with --params x.json: --params is a parameter file of the teaching model" in err


def test_window_options_before_a_sub_command_go_to_it(capsys, smollm2):
    # a teacher who opened the window with `explorer --model smollm2` keeps the option in front
    code, out, err = run_cli(capsys, "--model", "smollm2", "trace", "--max-new-tokens", "1", "--json")
    assert code == 0, err
    assert json.loads(out)["steps"][0]["selected_text"] == " Paris"
    # given on both sides, the one after the sub-command wins
    code, out, err = run_cli(capsys, "--model=missing.gguf", "trace", "--model", "teaching", "--json")
    assert code == 0, err
    assert json.loads(out)["output_ids"] == [3, 5, 6]


def test_a_window_option_the_sub_command_lacks_is_refused_by_name(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--params", "p.json", "model", "list"])
    _, err = capsys.readouterr()
    assert stop.value.code == 2
    assert "`explorer model` has no --params" in err


def test_a_lesson_with_several_scenarios_names_each_block(capsys):
    code, out, _ = run_cli(capsys, "trace", "--lesson", "stop-reasons")
    headers = [line for line in out.splitlines() if line.startswith("scenario ")]
    assert code == 0 and headers == ["scenario “base”", "scenario “stop-string”", "scenario “length”",
                                     "scenario “cancelled”", "scenario “tool”", "scenario “after-tool”"]
    code, out, _ = run_cli(capsys, "trace", "--lesson", "stop-reasons", "--lang", "zh")
    assert "情景“tool”" in out
    code, out, _ = run_cli(capsys, "trace", "--lesson", "wo-ai-to-eos")         # one scenario: no header
    assert code == 0 and out.startswith("model: teaching")


TABLE_LESSONS = [name for name in lesson_names()     # these real-model lessons: tests/test_real_lesson.py, test_prefix_lesson.py
                 if name not in ("real-model", "prefix-cache")]


@pytest.mark.parametrize("lesson", TABLE_LESSONS)
def test_every_lesson_traces_with_each_scenarios_own_vocabulary(capsys, lesson):
    """--json and the table, both languages; a logits lesson's candidates are named by the pieces
    its own scenario lists (a scenario with other pieces must not borrow the first one's)."""
    specs = load_lesson(lesson).scenarios
    code, out, err = run_cli(capsys, "trace", "--lesson", lesson, "--json")
    assert code == 0, err
    data = json.loads(out)
    runs = data if isinstance(data, list) else [data]
    assert len(runs) == len(specs)
    for (name, spec), run in zip(specs, runs):
        if "pieces" in spec.model:                       # a logits / projection model: "…" then the pieces
            pieces = ["…", *spec.model["pieces"]]
            for step in run["steps"]:
                assert step["selected_text"] == pieces[step["selected_id"]], (name, step["selected_id"])
                assert all(c["text"] == pieces[c["id"]] for c in step["candidates"]), name
    for lang in ("en", "zh"):
        code, out, err = run_cli(capsys, "trace", "--lesson", lesson, "--lang", lang)
        header = "scenario “" if lang == "en" else "情景“"
        assert code == 0 and out.strip(), err
        assert sum(line.startswith(header) for line in out.splitlines()) == (len(specs) if len(specs) > 1 else 0)
