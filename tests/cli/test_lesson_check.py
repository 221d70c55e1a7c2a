"""`token-explorer lesson check FILE...`: every problem of each file as FILE:LINE: message,
exit 2 if there is any, without opening a window."""

from __future__ import annotations

from explorer.cli.main import main
from paths import RESOURCES

BROKEN = '''format = "token-explorer/lesson"
version = 1
prompt = "我爱"

[title]
en = "Broken on purpose"

[model]
kind = "teaching"

[[frames]]
show = "prefill"
step = "zero"

[[frames]]
show = "nothing"
'''


def test_every_problem_of_a_broken_lesson_is_a_line_with_its_file_and_line(tmp_path, capsys):
    broken = tmp_path / "broken.lesson.toml"
    broken.write_text(BROKEN, encoding="utf-8")
    assert main(["lesson", "check", str(broken)]) == 2
    assert capsys.readouterr().out.splitlines() == [
        f"{broken}:1: summary: missing",                      # a missing top-level key: the top of the file
        f"{broken}:13: frames[0].step: 'zero': expected a step index (0 = Prefill, at most 4096) or -1 for the last step",
        f"{broken}:16: frames[1].show: 'nothing': expected one of input, prefill, decode, pick, stop"]


def test_valid_lessons_pass_and_a_file_not_found_is_a_problem(tmp_path, capsys):
    lessons = [str(RESOURCES / "lessons" / f"{name}.toml") for name in ("beam", "sampling")]
    assert main(["lesson", "check", *lessons]) == 0
    assert capsys.readouterr().out == "2 lesson files: no problems\n"
    assert main(["lesson", "check", *lessons, str(tmp_path / "gone.toml")]) == 2
    assert capsys.readouterr().out == f"{tmp_path / 'gone.toml'}: file not found\n"
