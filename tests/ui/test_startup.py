"""Starting the app: the command and its file argument, the message without a display, the
window's icon and its title (lesson and frame)."""

import os
import subprocess
import sys
from pathlib import Path

import explorer
from explorer.cli.main import build_parser, lesson_file_as_option
from explorer.desktop.icons import PNG_SIZES
from explorer.ui.app import NO_DISPLAY, display_problem, window_request

PACKAGE_ROOT = str(Path(explorer.__file__).resolve().parent.parent)


def test_without_a_display_the_window_says_what_to_use_instead(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env.update(PYTHONPATH=PACKAGE_ROOT, XDG_CONFIG_HOME=str(tmp_path))
    done = subprocess.run([sys.executable, "-m", "explorer"], capture_output=True, text=True, env=env)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"token-explorer: {NO_DISPLAY}\n"
    assert NO_DISPLAY.startswith("no display: use `token-explorer export …` for pictures")


def test_which_environments_have_a_display():
    assert display_problem({}, "linux") == NO_DISPLAY
    assert display_problem({"DISPLAY": ":0"}, "linux") is None
    assert display_problem({"WAYLAND_DISPLAY": "wayland-0"}, "linux") is None
    assert display_problem({"QT_QPA_PLATFORM": "offscreen"}, "linux") is None
    assert display_problem({"QT_QPA_PLATFORM": "vnc:size=1280x720"}, "linux") is None
    assert display_problem({"QT_QPA_PLATFORM": "wayland;offscreen"}, "freebsd14") is None   # a fallback
    assert display_problem({"QT_QPA_PLATFORM": "xcb"}, "linux") == NO_DISPLAY              # needs X11
    assert display_problem({}, "win32") is None and display_problem({}, "darwin") is None


def test_a_file_given_to_the_command_opens_as_the_lesson(tmp_path, monkeypatch):
    commands = build_parser().commands
    assert lesson_file_as_option(["my.toml"], commands) == ["--lesson", "my.toml"]
    assert lesson_file_as_option(["--model", "teaching", "a b.TOML"], commands) == \
        ["--model", "teaching", "--lesson", "a b.TOML"]
    existing = tmp_path / "lesson-without-suffix"
    existing.write_text("")
    assert lesson_file_as_option([str(existing)], commands) == ["--lesson", str(existing)]
    for unchanged in (["trace", "x.toml"], ["--lesson", "beam"], ["tracee"], []):
        assert lesson_file_as_option(unchanged, commands) == unchanged
    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(lesson_file_as_option(["sub/my.toml"], commands))
    assert window_request(args) == {"lesson": str(tmp_path / "sub" / "my.toml")}   # the running window's folder differs
    assert window_request(build_parser().parse_args(["--lesson", "beam", "--model", "smollm2"])) == \
        {"lesson": "beam", "model": "smollm2"}


def test_the_window_has_the_icon_and_names_lesson_and_frame(window):
    assert sorted(s.width() for s in window.windowIcon().availableSizes()) == sorted(PNG_SIZES)
    s = window.session
    n = len(s.frames)
    first = "Input 我爱 = [1, 2]: nothing processed yet"
    assert window.windowTitle() == f"From 我爱 to EOS · 1 / {n}: {first} — Token Explorer"
    s.next()
    s.next()
    assert window.windowTitle().startswith(f"From 我爱 to EOS · 3 / {n}: Position 1's logits select 学习")
    window.set_lang("zh")
    assert window.windowTitle().startswith(f"从“我爱”到EOS · 3 / {n}：") and \
        window.windowTitle().endswith("— Token 探索器")


def test_a_lesson_handed_out_as_name_lesson_toml_keeps_its_name(tmp_path):
    from explorer.lessons import load_lesson
    from explorer.resources import resources_dir

    handout = tmp_path / "first-lesson.lesson.toml"     # the name the launcher's MIME type knows
    handout.write_bytes((resources_dir() / "lessons" / "wo-ai-to-eos.toml").read_bytes())
    assert load_lesson(str(handout)).id == "first-lesson"


def test_an_exported_deck_names_the_app_and_the_lesson_in_its_metadata(qapp, tmp_path, capsys):
    from explorer.cli.main import main

    assert main(["export", "--frames", "1", "--format", "pdf", "--out", str(tmp_path)]) == 0
    (deck,) = tmp_path.glob("*.pdf")
    data = deck.read_bytes()
    # the document information dictionary (UTF-16 text strings) and its XMP copy (UTF-8)
    for key, value in (("Title", "From 我爱 to EOS"), ("Creator", "Token Explorer")):
        assert f"/{key} (".encode() + f"\ufeff{value}".encode("utf-16-be") + b")" in data
    assert '<rdf:li xml:lang="x-default">From 我爱 to EOS</rdf:li>'.encode() in data
    assert b'xmp:CreatorTool="Token Explorer"' in data


def test_a_broken_lesson_file_at_the_first_start_opens_the_default_lesson_and_says_why(qtbot, tmp_path):
    from explorer.lessons import DEFAULT_LESSON_ID
    from explorer.ui.app import first_window

    broken = tmp_path / "broken.toml"
    broken.write_text('format = "token-explorer/lesson"\nversion = 1\n', encoding="utf-8")
    args = build_parser().parse_args(lesson_file_as_option([str(broken)], build_parser().commands))
    window, problem = first_window(args, str(tmp_path / "settings.ini"))
    qtbot.addWidget(window)
    assert problem == "broken.toml:1: title: missing" and window.lesson.id == DEFAULT_LESSON_ID
    good, problem = first_window(build_parser().parse_args(["--lesson", "beam"]), str(tmp_path / "settings.ini"))
    qtbot.addWidget(good)
    assert problem is None and good.lesson.id == "beam"
