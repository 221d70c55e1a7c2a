"""Question frames as a teacher uses them: the frame arrives with its panel covered by the
question, the Reveal key (sent to whatever widget has the focus) or Next shows it, going
back behaves as the deck does; the deck has a question slide before each answer, without
the hidden panel's content, and the answer's speaker notes are marked."""

from pathlib import Path

import numpy as np
import pytest
from pptx import Presentation
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication

from explorer.export.spec import ExportSpec
from explorer.lessons import LessonError, load_lesson
from explorer.ui.fonts import register_fonts
from explorer.ui.slides.job import export_session

LESSON = "prefill-decode"
PICK_1 = 4          # its frames: input, prefill, pick 0 (asks about the cache), decode 1, pick 1 (asks the token)


def press(qtbot, window, key) -> None:
    qtbot.keyClick(QApplication.focusWidget() or window, key)


def play(window, lesson: str):
    load_lesson(lesson).play_in(window.session)
    QApplication.processEvents()
    return window.session


def card_text(panel) -> str:
    return panel._card.question.text() if panel.covered else ""


def test_a_question_frame_hides_its_panel_until_reveal_from_any_widget(qtbot, window):
    s = play(window, LESSON)
    dist, timeline, kv = (window.panels[p] for p in ("distribution", "timeline", "kv"))
    s.go(PICK_1 - 1)
    press(qtbot, window, Qt.Key.Key_Right)
    assert s.cursor == PICK_1 and s.asking
    assert dist.covered and "Which token will greedy decoding pick as y1?" in card_text(dist)
    assert dist._card.isVisible() and dist._card.geometry() == dist.rect()        # all of it
    assert "Which token" in window.panels["player"].title.text()
    # the pick is not on screen anywhere else either: the cache grid and the timeline show the step before it
    assert kv._grid_data().pieces == ("我", "我", "学习", "你", "学习") and not timeline.covered
    assert "Question for the class" in window.panels["explanation"].view.toPlainText()

    window.panels["controls"].slider("temperature").setFocus()      # the keys are on a slider
    press(qtbot, window, Qt.Key.Key_V)
    assert not s.asking and not dist.covered and s.cursor == PICK_1
    assert kv._grid_data().pieces[-1] == "！"                          # y1 is on screen now
    assert "What happened" in window.panels["explanation"].view.toPlainText()


def test_next_reveals_and_back_goes_through_the_answer_as_the_deck_does(qtbot, window):
    """A clicker only sends Page Down / Page Up: Next first reveals, then moves on; Back from
    the frame after lands on the answer (the slide before it in the deck), Back again shows
    the question. A jump (Home, End, a step clicked) arrives with the question open."""
    s = play(window, LESSON)
    dist = window.panels["distribution"]
    s.go(PICK_1)
    window.panels["kv"].setFocus()
    press(qtbot, window, Qt.Key.Key_PageDown)
    assert s.cursor == PICK_1 and not dist.covered                   # revealed, not moved
    press(qtbot, window, Qt.Key.Key_PageDown)
    assert s.cursor == PICK_1 + 1
    press(qtbot, window, Qt.Key.Key_PageUp)
    assert s.cursor == PICK_1 and not dist.covered                   # back on the answer
    press(qtbot, window, Qt.Key.Key_PageUp)
    assert s.cursor == PICK_1 and dist.covered                       # back on the question
    press(qtbot, window, Qt.Key.Key_Home)
    s.go(PICK_1)
    assert dist.covered


def test_a_question_on_two_panels_covers_both_and_asks_once(qtbot, window):
    s = play(window, LESSON)
    s.go(2)                                    # y0 picked: how long is the cache?
    timeline, kv, dist = (window.panels[p] for p in ("timeline", "kv", "distribution"))
    assert timeline.covered and kv.covered and not dist.covered
    assert "How long is the KV cache" in card_text(timeline)
    assert "hidden until the answer" in card_text(kv)


@pytest.fixture
def deck(qapp, tmp_path):
    register_fonts()
    out = tmp_path / "deck"
    out.mkdir()
    session = load_lesson(LESSON).build_session()
    files = export_session(session, ExportSpec(out, formats=("png", "pptx")), LESSON, "Prefill and Decode")
    return session, out, [f.name for f in files]


def panel_pixels(path: Path, colour: str) -> int:
    """How many pixels of `colour` a slide picture has (a bar's, a cell's fill)."""
    image = QImage(str(path)).convertToFormat(QImage.Format.Format_RGB32)
    rgb = np.frombuffer(image.constBits(), np.uint32).reshape(image.height(), image.width()) & 0xFFFFFF
    return int(np.count_nonzero(rgb == int(colour.lstrip("#"), 16)))


def test_the_deck_has_a_question_slide_before_each_answer(deck):
    session, out, names = deck
    questions = [i for i, f in enumerate(session.frames) if f.ask]
    assert questions == [2, PICK_1]
    pngs = [n for n in names if n.endswith(".png")]
    assert len(pngs) == len(session.frames) + len(questions)
    assert pngs[PICK_1 + 1:PICK_1 + 3] == ["05-pick-step1-question.png", "05-pick-step1.png"]
    # the distribution's bars: the chosen bar's colour is on the answer, nowhere on the question
    chosen = "#D55E00"
    assert panel_pixels(out / "05-pick-step1.png", chosen) > 500
    assert panel_pixels(out / "05-pick-step1-question.png", chosen) == 0
    # the question about the cache hides the cache grid: no processed cell on its question slide
    processed = "#0072B2"
    assert panel_pixels(out / "03-pick-step0.png", processed) > 5000
    assert panel_pixels(out / "03-pick-step0-question.png", processed) < 500     # the distribution's ruler only


def test_the_answer_slides_notes_are_marked(deck):
    _session, out, names = deck
    notes = [s.notes_slide.notes_text_frame.text for s in Presentation(str(out / f"{LESSON}.pptx")).slides]
    assert len(notes) == len([n for n in names if n.endswith(".png")])
    question, answer = notes[PICK_1 + 1], notes[PICK_1 + 2]
    assert question.startswith("Question for the class\n") and "Which token" in question
    assert "What happened" not in question                     # the explanation tells the answer
    assert answer.startswith("Answer\n") and "What happened" in answer


def test_the_composed_question_slide_covers_the_panel_it_hides(qapp):
    from explorer.ui.slides.job import slide_pictures
    register_fonts()
    session = load_lesson(LESSON).build_session()
    pictures = slide_pictures(session, ExportSpec(None))
    try:
        session.go(PICK_1)
        covered = {panel.panel_id: panel.covered for panel, _, _ in pictures.lay_out()}
        assert covered == {"timeline": False, "distribution": True}
        session.reveal()
        assert not any(panel.covered for panel, _, _ in pictures.lay_out())
    finally:
        pictures.close()


@pytest.mark.parametrize("message", ["frames[2].ask_panel: 'attention' is not shown on this frame",
                                     "frames[2].ask_panel: a panel is hidden only for a question"])
def test_a_bad_question_names_the_frame_and_the_key(tmp_path, message):
    from paths import RESOURCES
    text = (RESOURCES / "lessons" / f"{LESSON}.toml").read_text(encoding="utf-8")
    if "attention" in message:
        text = text.replace('ask_panel = ["kv", "timeline"]\n', 'ask_panel = "attention"\n')
    else:
        start = text.index("ask = {")
        text = text[:start] + text[text.index("\n", start) + 1:]        # the question removed, its panel kept
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    line = next(n for n, row in enumerate(text.splitlines(), start=1) if row.startswith("ask_panel"))
    with pytest.raises(LessonError) as info:
        load_lesson(path)
    assert str(info.value).startswith(f"bad.toml:{line}: " + message), str(info.value)
