"""Export for slides and handouts: headless from the command line and from the window."""

import csv
import errno
import json
import re
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from PySide6.QtGui import QFont, QFontMetrics, QImage

from pptx import Presentation

from teacher import distinct_colours

from explorer.cli.main import main
from explorer.session.panels import SLIDE_PANELS
from explorer.lessons import lesson_names
from explorer.ui.fonts import CJK_FAMILY, register_fonts

N_FRAMES = 10         # the default lesson, 我爱 to EOS
DECK = "wo-ai-to-eos"


def export(capsys, *argv):
    code = main(["export", *argv])
    out, err = capsys.readouterr()
    return code, out, err


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
    from explorer.core.models.teaching import load_teaching_model
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


def test_two_exports_are_byte_identical(tmp_path):
    outs = []
    for name in ("a", "b"):
        out = tmp_path / name
        proc = subprocess.run([sys.executable, "-m", "explorer", "export", "--out", str(out),
                               "--format", "png,pdf,svg,pptx,csv,json", "--frames", "1-3"],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert "gradient" not in proc.stderr
        outs.append(out)
    names = sorted(p.name for p in outs[0].iterdir())
    assert names == sorted(p.name for p in outs[1].iterdir()) and len(names) == 3 * 2 + 4
    for name in names:
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name


@pytest.mark.parametrize("lesson, alone, in_range, name, more", [
    # the first slide of a fresh process is drawn only once fonts and layouts settled
    # (it once came out with the menu bar squeezed away and labels cut)
    ("wo-ai-to-eos", "3", "2-3", "03-pick-step0.png", []),
    # the frame before points to the beam tree, which comes forward; this one does not
    ("beam", "6", "5-6", "06-pick-step1.png", []),
    # a 720p slide in Chinese, after a frame (the input) with other panels
    ("sampling", "3", "1-3", "03-pick-step0.png", ["--size", "1280x720", "--lang", "zh"]),
    # the whole window, laid out taller than the slide and drawn smaller
    ("sampling", "3", "1-3", "03-pick-step0.png", ["--size", "1280x720", "--lang", "zh", "--style", "window"]),
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


def test_single_panel_slide_holds_that_panel_only_filling_the_body(qapp, tmp_path):
    from explorer.export.spec import ExportSpec
    from explorer.lessons import default_lesson
    from explorer.ui.panels.distribution import DistributionPanel
    from explorer.ui.slides.job import slide_pictures, slide_text
    session = default_lesson().build_session()
    session.go(2)
    pictures = slide_pictures(session, ExportSpec(tmp_path, ("png",), panel="distribution", frames=(2,)))
    try:
        ((panel, rect, _),) = pictures.lay_out()
        assert type(panel) is DistributionPanel and panel.parent() is None and rect == pictures.frame_geometry().body
        assert slide_text(session, 2, "en", "T").counter == f"3 / {N_FRAMES}"
    finally:
        pictures.close()


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
    assert DECK in out and all(p in out for p in SLIDE_PANELS)
    assert " 3  Position 1's logits select 学习 (p = 0.4700)" in out


@pytest.mark.parametrize("argv, message", [
    (["--lesson", "nope"], "lesson 'nope' not found"),
    (["--frames", "11"], "'11' is out of range; expected an integer from 1 to 10 (this lesson has 10 frames)"),
    (["--frames", "2-x"], "--frames '2-x': 'x' is not an integer"),
    (["--format", "png,gif"], "unknown format 'gif'"),
    (["--size", "big"], "--size 'big': expected WIDTHxHEIGHT"),
    (["--size", "8192x8192", "--scale", "2"], "at most 8192 on a side, the scale included"),
    (["--size", "4097x2000", "--scale", "2"], "up to 4096 on a side"),
    (["--style", "window", "--panel", "kv"], "a panel slide is composed"),
    (["--format", "pptx", "--panel", "kv", "--frames", "2-3"], "a deck holds a lesson's slides"),
    (["--lesson", "beam", "--panel", "attention"], "--panel attention: none of the 8 frames shows it (its model has no layers"),
    (["--panel", "beam"], "--panel beam: none of the 10 frames shows it (its run is not a beam search)"),
])
def test_bad_requests_exit_2_with_a_message(capsys, tmp_path, argv, message):
    code, out, err = export(capsys, "--out", str(tmp_path / "o"), *argv)
    assert code == 2 and message in err and "Traceback" not in err
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


@pytest.mark.parametrize("argv, message", [
    (["--panel", "nope"], "invalid choice: 'nope'"),
    (["--panel", "controls"], "invalid choice: 'controls'"),      # sliders are not drawn on slides
    (["--style", "poster"], "invalid choice: 'poster'"),
])
def test_unknown_choices_are_refused_by_the_parser(capsys, tmp_path, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["export", "--out", str(tmp_path), *argv])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_an_empty_out_is_refused(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = export(capsys, "--out", "")
    assert code == 2 and "--out '': expected a folder name" in err
    assert list(tmp_path.iterdir()) == []


def test_unwritable_folder(capsys, tmp_path):
    blocker = tmp_path / "file.txt"
    blocker.write_text("not a folder")
    code, _, err = export(capsys, "--out", str(blocker / "sub"))
    assert code == 2 and "file.txt is a regular file (part of the path" in err and "expected a folder" in err


def test_full_disk_leaves_nothing_half_written(qapp, capsys, tmp_path, monkeypatch):
    from explorer.export.files import StagedFiles
    out = tmp_path / "deck"
    out.mkdir()
    (out / "keep.txt").write_text("earlier work")
    real_add, calls = StagedFiles.add, []

    def failing_add(self, name, data):
        calls.append(name)
        if len(calls) == 3:
            real_add(self, name, data[: len(data) // 2])       # half a file, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device", name)
        return real_add(self, name, data)

    monkeypatch.setattr(StagedFiles, "add", failing_add)
    code, _, err = export(capsys, "--out", str(out), "--format", "png,pptx")
    assert code == 2 and "No space left on device" in err and "nothing was written" in err
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]      # no staging files either


def test_a_target_that_is_not_a_regular_file_is_never_replaced(capsys, tmp_path):
    out = tmp_path / "deck"
    out.mkdir()
    (out / "01-input.png").symlink_to("/dev/null")
    (out / f"{DECK}.pdf").mkdir()
    code, _, err = export(capsys, "--out", str(out), "--frames", "1")
    assert code == 2 and "is not a regular file" in err and "Traceback" not in err
    assert (out / "01-input.png").is_symlink() and Path("/dev/null").is_char_device()
    assert sorted(p.name for p in out.iterdir()) == ["01-input.png", f"{DECK}.pdf"]


def test_a_link_to_a_regular_file_is_not_written_through(capsys, tmp_path):
    out = tmp_path / "deck"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere.png"
    elsewhere.write_bytes(b"keep")
    (out / "01-input.png").symlink_to(elsewhere)
    code, _, err = export(capsys, "--out", str(out), "--frames", "1")
    assert code == 2 and f"is a symbolic link to {elsewhere}, which is a regular file; refusing" in err
    assert "nothing was written" in err and elsewhere.read_bytes() == b"keep"
    assert sorted(p.name for p in out.iterdir()) == ["01-input.png"]


def test_a_killed_exports_staging_is_removed_by_the_next_export_and_nothing_else(qapp, capsys, tmp_path):
    """kill -9 while slides are drawn leaves the export's marked staging folder; the next
    export removes that folder only. Decoys stay: a user's file and folder with the staging
    prefix, names an older version's staging had (a lesson id can make a deck look so), a
    folder with a copied marker, a link with the prefix into a user's folder."""
    out = tmp_path / "deck"
    out.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "explorer", "export", "--lesson", "sampling", "--out", str(out),
                             "--format", "png,pdf", "--scale", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    def marked() -> bool:                # the staging folder is made and its marker written: drawing begins
        return any((f / ".token-explorer-staging").is_file() and (f / ".token-explorer-staging").stat().st_size
                   for f in out.iterdir())
    while not marked() and proc.poll() is None:     # (a kill between the mkdir and the marker's write leaves
        time.sleep(0.01)                            # a folder no one can prove is ours: it stays)
    proc.kill()
    proc.communicate(timeout=300)
    (killed,) = list(out.iterdir())
    assert killed.name.startswith(".explorer-export-") and (killed / ".token-explorer-staging").is_file()
    users = tmp_path / "user"
    users.mkdir()
    (users / "thesis.txt").write_text("keep")
    decoys = [".explorer-export-notes.txt", f".explorer-export-{proc.pid}-01-input.png",
              ".explorer-export-999999999-wo-ai-to-eos.pdf", ".explorer-export-mine", ".explorer-export-" + "0" * 24,
              ".explorer-export-link"]
    for name in decoys[:3]:
        (out / name).write_text("mine")
    (out / decoys[3]).mkdir()
    (out / decoys[3] / "a.png").write_text("mine")
    (out / decoys[4]).mkdir(mode=0o700)
    (out / decoys[4] / ".token-explorer-staging").write_bytes((killed / ".token-explorer-staging").read_bytes())
    (out / decoys[5]).symlink_to(users, target_is_directory=True)
    code, _, err = export(capsys, "--out", str(out), "--frames", "1", "--format", "png")
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == sorted([*decoys, "01-input.png"])
    assert (out / decoys[3] / "a.png").exists() and sorted(p.name for p in users.iterdir()) == ["thesis.txt"]


def test_a_failed_export_creates_no_out_folder(qapp, capsys, tmp_path, monkeypatch):
    from explorer.export.files import StagedFiles

    def failing_add(self, name, data):
        raise OSError(errno.ENOSPC, "No space left on device", name)

    monkeypatch.setattr(StagedFiles, "add", failing_add)
    code, _, err = export(capsys, "--out", str(tmp_path / "new" / "deck"), "--frames", "1", "--format", "png")
    assert code == 2 and "nothing was written" in err
    assert list(tmp_path.iterdir()) == []                      # neither the folder nor a staging folder


def test_an_existing_regular_file_is_replaced_whole(qapp, capsys, tmp_path):
    (tmp_path / "01-input.png").write_bytes(b"an older picture")
    code, _, err = export(capsys, "--out", str(tmp_path), "--frames", "1", "--format", "png")
    assert code == 0, err
    assert QImage(str(tmp_path / "01-input.png")).width() == 1920


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_stops_the_export_with_nothing_written(tmp_path, sig):
    """The signal arrives while slides are being drawn (its first file is staged): the
    export stops at its next file, removes what it staged and says so, with exit 130."""
    out = tmp_path / "deck"
    out.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "explorer", "export", "--lesson", "sampling", "--out", str(out),
                             "--format", "png,pdf,pptx", "--scale", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while not any(out.iterdir()) and proc.poll() is None:      # the first file is staged: drawing has begun
        time.sleep(0.01)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130, stderr
    assert "export cancelled, nothing was written" in stderr and "Traceback" not in stderr
    assert stdout == "" and list(out.iterdir()) == []


@pytest.mark.parametrize("lesson", lesson_names())
def test_every_lesson_exports_decks_of_all_its_frames(qapp, capsys, tmp_path, lesson):
    from explorer.lessons import load_lesson
    # one frame per plan (no run needed to count them); a question frame is two slides, question and answer
    starts = [heading for plan in load_lesson(lesson).plans
              for heading in (("Question for the class\n", "Answer\n") if "ask" in plan.extras else ("What happened\n",))]
    code, printed, err = export(capsys, "--lesson", lesson, "--format", "pdf,pptx", "--out", str(tmp_path))
    assert code == 0, err
    assert pdf_pages(tmp_path / f"{lesson}.pdf") == len(starts)
    deck = Presentation(str(tmp_path / f"{lesson}.pptx"))
    assert len(deck.slides) == len(starts)
    for slide, start in zip(deck.slides, starts):
        picture, *boxes = slide.shapes
        assert (picture.width, picture.height) == (deck.slide_width, deck.slide_height)
        assert len(boxes) == 4 and all(box.has_text_frame for box in boxes)     # title, lesson, n / N, line
        assert slide.notes_slide.notes_text_frame.text.startswith(start)


def test_speaker_notes_hold_the_explanation_and_the_self_checks(qapp, capsys, tmp_path):
    from explorer.lessons import load_lesson
    from explorer.session.narration import frame_explanation
    code, _, err = export(capsys, "--lesson", "beam", "--lang", "zh", "--format", "pptx", "--out", str(tmp_path))
    assert code == 0, err
    lesson = load_lesson("beam")
    session = lesson.build_session()
    notes = [s.notes_slide.notes_text_frame.text for s in Presentation(str(tmp_path / "beam.pptx")).slides]
    for index, text in enumerate(notes):
        run, model = session.run_at(index)
        for section, body in frame_explanation(session.frames[index], run, model.vocab, "zh").items():
            assert body in text
        assert "如何检查做对了" in text
    after = [c for c in lesson.checks if c.when == "after"]
    assert after and all(c.question["zh"] in notes[-1] and c.answer["zh"] in notes[-1] for c in after)
    assert not any(c.question["zh"] in notes[0] for c in after)


def px_rect(shape, deck, width=1920) -> tuple[int, int, int, int]:
    """A shape's (left, top, right, bottom) in slide pixels."""
    per_px = deck.slide_width / width
    return tuple(round(v / per_px) for v in (shape.left, shape.top, shape.left + shape.width, shape.top + shape.height))


def inked(image: QImage, box: tuple[int, int, int, int], background) -> tuple[int, int, int, int] | None:
    """The bounding box of the pixels in `box` that differ from `background` (None: all background)."""
    left, top, right, bottom = box
    xs, ys = [], []
    for y in range(top, bottom, 2):
        for x in range(left, right, 2):
            if image.pixelColor(x, y) != background:
                xs.append(x)
                ys.append(y)
    return (min(xs), min(ys), max(xs), max(ys)) if xs else None


@pytest.mark.parametrize("style", ["slide", "window"])
def test_pptx_slides_carry_title_and_caption_as_text_boxes_over_a_picture_without_them(qapp, capsys, tmp_path,
                                                                                       style):
    from PySide6.QtGui import QColor
    from explorer.lessons import load_lesson
    from explorer.session.narration import frame_explanation, frame_title
    code, _, err = export(capsys, "--lesson", "sampling", "--frames", "1-3", "--format", "png,pptx", "--style", style,
                          "--out", str(tmp_path))
    assert code == 0, err
    lesson = load_lesson("sampling")
    session = lesson.build_session()
    deck = Presentation(str(tmp_path / "sampling.pptx"))
    pngs = sorted(tmp_path.glob("*.png"))
    white = QColor("#ffffff")
    for index, (slide, png) in enumerate(zip(deck.slides, pngs)):
        run, model = session.run_at(index)
        title, line = frame_title(session.frames[index], run, model.vocab, "en"), frame_explanation(
            session.frames[index], run, model.vocab, "en")["what"]
        lesson_title = lesson.title_in("en") if style == "slide" else f"{lesson.title_in('en')}  ·  {title}"
        picture, *boxes = slide.shapes
        texts = {box.text_frame.text: box for box in boxes}
        expected = [lesson_title, f"{index + 1} / 12", line] + ([title] if style == "slide" else [])
        assert sorted(texts) == sorted(expected)          # editable, whole (the picture may shorten with "…")
        assert all(not box.text_frame.word_wrap for box in boxes)
        # the picture leaves out what the boxes say, and the PNG file draws it where the boxes are
        embedded = QImage.fromData(picture.image.blob)
        drawn = QImage(str(png))
        for words in ((title,) if style == "slide" else ()) + (line,):
            where = px_rect(texts[words], deck)
            assert inked(embedded, where, white) is None, words
            ink = inked(drawn, where, white)
            assert ink is not None and where[0] <= ink[0] and ink[2] <= where[2], words


def test_the_deck_opens_as_a_standard_office_file(qapp, capsys, tmp_path):
    code, _, err = export(capsys, "--format", "pptx", "--frames", "1-2", "--out", str(tmp_path))
    assert code == 0, err
    with zipfile.ZipFile(tmp_path / f"{DECK}.pptx") as deck:
        assert deck.testzip() is None
        names = deck.namelist()
        assert "[Content_Types].xml" in names and "ppt/presentation.xml" in names
        assert sum(n.startswith("ppt/notesSlides/notesSlide") for n in names) == 2
        assert {info.date_time for info in deck.infolist()} == {(1980, 1, 1, 0, 0, 0)}
        assert b"2000-01-01T00:00:00" in deck.read("docProps/core.xml")


def test_export_a_free_run_of_the_real_model(qapp, capsys, tmp_path, smollm2):
    code, printed, err = export(capsys, "--model", "smollm2", "--max-new-tokens", "2", "--frames", "3",
                                "--format", "png,json", "--out", str(tmp_path))
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["03-pick-step0.png", "smollm2-run.json"]
    assert json.loads((tmp_path / "smollm2-run.json").read_text(encoding="utf-8"))["output_ids"][0] == 7042
