"""Export for slides and handouts: headless from the command line and from the window."""

import csv
import errno
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QFont, QFontMetrics, QImage

from explorer.cli import main
from explorer.export.spec import PANELS
from explorer.lessons import lesson_names
from explorer.ui.fonts import CJK_FAMILY, register_fonts

N_FRAMES = 10         # the default lesson, 我爱 to EOS
DECK = "wo-ai-to-eos"


def export(capsys, *argv):
    code = main(["export", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def distinct_colours(image: QImage, step: int = 7) -> int:
    return len({image.pixel(x, y) for x in range(0, image.width(), step) for y in range(0, image.height(), step)})


def pdf_pages(path: Path) -> int:
    return len(re.findall(rb"/Type\s*/Page\b(?!s)", path.read_bytes()))


def test_default_lesson_png_per_frame_and_one_pdf(qapp, capsys, tmp_path):
    out = tmp_path / "new" / "folder"                      # missing folders are created
    code, printed, err = export(capsys, "--out", str(out))
    assert code == 0, err
    pngs = sorted(out.glob("*.png"))
    assert [p.name for p in pngs][:3] == ["01-input.png", "02-prefill-step0.png", "03-pick-step0.png"]
    assert len(pngs) == N_FRAMES
    for p in pngs:
        image = QImage(str(p))
        assert (image.width(), image.height()) == (1920, 1080)
        assert distinct_colours(image) > 20, f"{p.name} looks blank"
    assert pdf_pages(out / f"{DECK}.pdf") == N_FRAMES
    assert printed.split() == [str(p) for p in pngs] + [str(out / f"{DECK}.pdf")]
    assert not [p for p in out.iterdir() if p.name.startswith(".")]   # no staging left


def test_scale_two_and_frame_range(qapp, capsys, tmp_path):
    code, _, err = export(capsys, "--out", str(tmp_path), "--scale", "2", "--frames", "3", "--format", "png")
    assert code == 0, err
    (png,) = tmp_path.glob("*.png")
    image = QImage(str(png))
    assert png.name == "03-pick-step0.png" and (image.width(), image.height()) == (3840, 2160)


def test_chinese_export_draws_glyphs(qapp, capsys, tmp_path):
    code, _, err = export(capsys, "--out", str(tmp_path), "--lang", "zh", "--frames", "3", "--format", "png")
    assert code == 0, err
    from explorer.core.teaching import load_teaching_model
    from explorer.session import Session
    from explorer.session.narration import frame_title
    session = Session(load_teaching_model(), [1, 2])
    title = frame_title(session.frames[2], session.run, session.model.vocab, "zh")
    metrics = QFontMetrics(QFont(register_fonts()))
    assert register_fonts() == CJK_FAMILY
    assert all(metrics.inFontUcs4(ord(ch)) for ch in title if ord(ch) > 0x2E80)
    english = tmp_path / "en"
    export(capsys, "--out", str(english), "--frames", "3", "--format", "png")
    # the caption strip differs: Chinese text was drawn, not the English one and not boxes
    zh, en = QImage(str(tmp_path / "03-pick-step0.png")), QImage(str(english / "03-pick-step0.png"))
    strip = [(x, y) for x in range(0, 1920, 3) for y in range(990, 1075, 3)]
    assert sum(zh.pixel(x, y) != en.pixel(x, y) for x, y in strip) > 500


def test_a_long_caption_title_stops_short_of_the_counter(qapp):
    from explorer.export.render import Caption, caption_heading
    register_fonts()
    font = QFont(CJK_FAMILY)
    font.setPixelSize(30)                          # the caption's heading
    font.setBold(True)
    metrics = QFontMetrics(font)
    caption = Caption("温度、Top-k与Top-p", "T = 2：A 0.5065，B 0.3072，C 0.1863；同一个u这次选中B",
                      "3 / 12", "", ("#ffffff", "#000000", "#00aa77"))
    for width in (1232, 800):                      # a 1280 and an 848 px slide, less the padding
        heading = caption_heading(metrics, caption, width)
        assert heading.endswith("…") and heading.startswith("温度、Top-k与Top-p  ·  T = 2")
        assert metrics.horizontalAdvance(heading) + metrics.horizontalAdvance("3 / 12") < width
    assert caption_heading(metrics, caption, 3000) == "温度、Top-k与Top-p  ·  " + caption.frame   # room: whole


def test_two_exports_are_byte_identical(tmp_path):
    outs = []
    for name in ("a", "b"):
        out = tmp_path / name
        proc = subprocess.run([sys.executable, "-m", "explorer", "export", "--out", str(out),
                               "--format", "png,pdf,svg,csv,json", "--frames", "1-3"],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert "gradient" not in proc.stderr
        outs.append(out)
    names = sorted(p.name for p in outs[0].iterdir())
    assert names == sorted(p.name for p in outs[1].iterdir()) and len(names) == 3 * 2 + 3
    for name in names:
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name


@pytest.mark.parametrize("lesson, alone, in_range, name, more", [
    # the first slide of a fresh process is drawn only once fonts and layouts settled
    # (it once came out with the menu bar squeezed away and labels cut)
    ("wo-ai-to-eos", "3", "2-3", "03-pick-step0.png", []),
    # the frame before points to the beam tree, which comes forward; this one does not
    ("beam", "6", "5-6", "06-pick-step1.png", []),
    # a 720p slide in Chinese: the window is laid out taller than the slide and drawn smaller,
    # after a frame (the input) that needed less height
    ("sampling", "3", "1-3", "03-pick-step0.png", ["--size", "1280x720", "--lang", "zh"]),
])
def test_a_frame_exported_alone_equals_the_same_frame_in_a_range(tmp_path, lesson, alone, in_range, name, more):
    slides = []
    for frames in (alone, in_range):
        out = tmp_path / frames
        proc = subprocess.run([sys.executable, "-m", "explorer", "export", "--lesson", lesson, "--out", str(out),
                               "--format", "png", "--frames", frames, *more],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        slides.append((out / name).read_bytes())
    assert slides[0] == slides[1]


def test_single_panel_export_holds_that_panel_only(qapp, tmp_path):
    from explorer.export.job import _export_job
    from explorer.export.spec import ExportSpec
    from explorer.lessons import default_lesson
    from explorer.ui.distribution import DistributionPanel
    session = default_lesson().build_session()
    session.go(2)
    spec = ExportSpec(tmp_path, ("png",), panel="distribution", frames=(2,))
    with _export_job(session, spec, DECK, "T") as job:
        widget = job.target()
        assert type(widget) is DistributionPanel and widget.parent() is None
        assert job.caption(2).counter == f"3 / {N_FRAMES}"
        widget.deleteLater()


def test_panel_export_from_the_command_line(qapp, capsys, tmp_path):
    code, printed, err = export(capsys, "--out", str(tmp_path), "--panel", "kv", "--frames", "2-3",
                                "--format", "png,pdf")
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["02-prefill-step0-kv.png", "03-pick-step0-kv.png",
                                                         f"{DECK}-kv.pdf"]
    assert pdf_pages(tmp_path / f"{DECK}-kv.pdf") == 2


def test_handout_data(qapp, capsys, tmp_path):
    code, _, err = export(capsys, "--out", str(tmp_path), "--format", "csv,json", "--intermediates")
    assert code == 0, err
    rows = list(csv.DictReader((tmp_path / f"{DECK}-run.csv").open(encoding="utf-8")))
    selected = [r for r in rows if r["selected"] == "1"]
    assert [int(r["candidate_id"]) for r in selected] == [3, 5, 6]
    assert [int(r["cache_len_after"]) for r in selected] == [2, 3, 4]
    data = json.loads((tmp_path / f"{DECK}-run.json").read_text(encoding="utf-8"))
    assert data["output_ids"] == [3, 5, 6]
    forward = data["steps"][0]["forward"]
    assert len(forward["embeddings"]) == 2 and len(forward["embeddings"][0]) == 4
    assert len(forward["layers"][0]["weights"][0]) == 2          # [head][query][key]
    assert forward["layers"][0]["weights"][0][0][1] == 0.0       # masked future key


def test_list_names_lessons_panels_and_frames(capsys):
    code, out, _ = export(capsys, "--list")
    assert code == 0
    assert DECK in out and all(p in out for p in PANELS)
    assert " 3  Position 1's logits select 学习 (p = 0.4700)" in out


@pytest.mark.parametrize("argv, message", [
    (["--lesson", "nope"], "lesson 'nope' not found"),
    (["--frames", "11"], "'11' is outside 1..10"),
    (["--frames", "2-x"], "is not a frame number or range"),
    (["--format", "png,gif"], "unknown format 'gif'"),
    (["--size", "big"], "--size 'big': expected WIDTHxHEIGHT"),
])
def test_bad_requests_exit_2_with_a_message(capsys, tmp_path, argv, message):
    code, out, err = export(capsys, "--out", str(tmp_path / "o"), *argv)
    assert code == 2 and message in err and "Traceback" not in err
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


def test_unknown_panel_is_refused_by_the_parser(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        main(["export", "--out", str(tmp_path), "--panel", "nope"])
    assert exit_info.value.code == 2 and "invalid choice: 'nope'" in capsys.readouterr().err


def test_unwritable_folder(capsys, tmp_path):
    blocker = tmp_path / "file.txt"
    blocker.write_text("not a folder")
    code, _, err = export(capsys, "--out", str(blocker / "sub"))
    assert code == 2 and "cannot create the folder" in err


def test_full_disk_leaves_nothing_half_written(qapp, capsys, tmp_path, monkeypatch):
    import explorer.export.job as job
    out = tmp_path / "deck"
    out.mkdir()
    (out / "keep.txt").write_text("earlier work")
    real_write, calls = job._write, []

    def failing_write(path, data):
        calls.append(path)
        if len(calls) == 3:
            real_write(path, data[: len(data) // 2])        # half a file, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real_write(path, data)

    monkeypatch.setattr(job, "_write", failing_write)
    code, _, err = export(capsys, "--out", str(out))
    assert code == 2 and "No space left on device" in err and "nothing was written" in err
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


# ---------------------------------------------------------------------------- from the window

def test_window_export_frame_of_one_panel(window, tmp_path):
    from explorer.ui.export_actions import FrameChoice
    window.session.go(4)
    target = tmp_path / "slide.png"
    window.ask_export_frame = lambda: FrameChoice(target, panel="distribution", scale=2)
    window.actions["export_frame"].trigger()
    image = QImage(str(target))
    assert (image.width(), image.height()) == (3840, 2160)
    assert window.session.cursor == 4                        # the window on screen did not move
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.ini", "slide.png"]


def test_window_export_lesson_and_cancel(window, tmp_path):
    window.ask_export_folder = lambda: tmp_path / "deck"
    window.actions["export_lesson"].trigger()
    assert len(list((tmp_path / "deck").glob("*.png"))) == N_FRAMES
    assert (tmp_path / "deck" / f"{DECK}.pdf").exists()

    window.ask_export_folder = lambda: tmp_path / "cancelled"
    from explorer.ui import export_actions
    real = export_actions.QProgressDialog

    class CancelAtOnce(real):
        def wasCanceled(self):
            return self.value() >= 2
    export_actions.QProgressDialog = CancelAtOnce
    try:
        window.actions["export_lesson"].trigger()
    finally:
        export_actions.QProgressDialog = real
    assert list((tmp_path / "cancelled").iterdir()) == []
    assert "cancelled" in window.statusBar().currentMessage()


def test_window_copy_frame_to_clipboard(window, qapp):
    window.session.go(2)
    window.actions["copy_frame"].trigger()
    image = qapp.clipboard().image()
    assert (image.width(), image.height()) == (1920, 1080)
    assert window.errors == []


def test_window_export_to_an_unwritable_place_is_reported(window, tmp_path):
    from explorer.ui.export_actions import FrameChoice
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    window.ask_export_frame = lambda: FrameChoice(blocker / "slide.png")
    window.actions["export_frame"].trigger()
    assert window.errors and "file.txt" in window.errors[-1]


@pytest.mark.parametrize("lesson", lesson_names())
def test_every_lesson_exports_a_deck_of_all_its_frames(qapp, capsys, tmp_path, lesson):
    from explorer.lessons import load_lesson
    frames = len(load_lesson(lesson).build_session().frames)
    code, printed, err = export(capsys, "--lesson", lesson, "--format", "pdf", "--out", str(tmp_path))
    assert code == 0, err
    assert pdf_pages(tmp_path / f"{lesson}.pdf") == frames


def test_export_a_free_run_of_the_real_model(qapp, capsys, tmp_path):
    code, printed, err = export(capsys, "--model", "smollm2", "--max-new-tokens", "2", "--frames", "3",
                                "--format", "png,json", "--out", str(tmp_path))
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["03-pick-step0.png", "smollm2-run.json"]
    assert json.loads((tmp_path / "smollm2-run.json").read_text(encoding="utf-8"))["output_ids"][0] == 7042
