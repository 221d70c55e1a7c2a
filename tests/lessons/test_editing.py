"""The lesson being edited (lessons/editing.py): each edit read by the loader as a file is,
refused with the loader's own message, undone and redone; the texts written back read as
the file did."""

from __future__ import annotations

import tomllib

import pytest

from explorer.lessons import LessonError, lessons_dir, parse_lesson
from explorer.lessons.editing import (AddCheck, AddFrame, DeleteCheck, DeleteFrame, DuplicateFrame, EditableLesson,
                                      MoveFrame, SetCheck, SetFrameText, SetLessonText, SetPanels, lesson_text)

WO_AI = lessons_dir() / "wo-ai-to-eos.toml"


def edited() -> EditableLesson:
    return EditableLesson.open(WO_AI)


@pytest.mark.parametrize("path", sorted(lessons_dir().glob("*.toml")), ids=lambda p: p.stem)
def test_every_shipped_lesson_written_back_reads_as_its_file(path):
    text = lesson_text(tomllib.loads(path.read_text(encoding="utf-8")))
    assert tomllib.loads(text) == tomllib.loads(path.read_text(encoding="utf-8"))
    assert parse_lesson(path, text).plans == parse_lesson(path).plans
    assert not EditableLesson.open(path).changed


def test_a_frame_title_edit_is_read_by_the_loader_and_undone():
    e = edited()
    before = e.lesson.plans[2].extras["title"]
    lesson, _ = e.apply(SetFrameText(2, "title", "en", "Greedy picks {piece}"))
    assert lesson.plans[2].extras["title"]["en"] == "Greedy picks {piece}"
    assert lesson.plans[2].extras["title"]["zh"] == before["zh"]          # the other language kept
    assert e.changed and e.can_undo
    e.undo()
    assert e.lesson.plans[2].extras["title"] == before and not e.changed
    e.redo()
    assert e.lesson.plans[2].extras["title"]["en"] == "Greedy picks {piece}"


def test_an_invalid_edit_is_refused_with_the_loaders_message_and_changes_nothing(tmp_path):
    e = edited()
    text = e.text
    with pytest.raises(LessonError) as refused:
        e.apply(SetFrameText(2, "title", "en", "Picks {nope}"))
    # the same message as the loader gives for that file written by hand
    by_hand = tmp_path / WO_AI.name
    by_hand.write_text(WO_AI.read_text(encoding="utf-8").replace(
        'title = { en = "Position 1\'s logits select 学习 (p = {prob})"', 'title = { en = "Picks {nope}"'),
        encoding="utf-8")
    with pytest.raises(LessonError) as loaded:
        parse_lesson(by_hand)
    assert str(refused.value).partition(": ")[2] == str(loaded.value).partition(": ")[2]
    assert "frames[2].title.en: unknown placeholder" in str(refused.value)
    assert e.text == text and not e.can_undo


def test_typing_a_text_is_one_undo_step_and_a_new_field_another():
    e = edited()
    for typed in ("N", "Ne", "New"):
        e.apply(SetFrameText(0, "title", "en", typed), merge=True)
    e.apply(SetFrameText(0, "explain.why", "en", "Because"), merge=True)
    e.undo()
    assert e.lesson.plans[0].extras["title"]["en"] == "New"
    e.undo()
    assert not e.changed


def test_a_text_in_one_language_falls_back_and_the_last_one_is_required():
    e = edited()
    lesson, _ = e.apply(SetLessonText("title", "zh", ""))
    assert lesson.title["zh"] == lesson.title["en"] and lesson.title.fallback == {"zh": "en"}
    with pytest.raises(LessonError, match="title: missing"):
        e.apply(SetLessonText("title", "en", ""))
    lesson, _ = e.apply(SetLessonText("summary", "en", "Short."))
    assert lesson.summary["en"] == "Short."


def test_frames_deleted_duplicated_moved_and_added():
    e = edited()
    kinds = lambda: [(p.kind, p.step) for p in e.lesson.plans]
    start = kinds()
    e.apply(DeleteFrame(0))
    assert kinds() == start[1:]
    e.apply(DuplicateFrame(0))
    assert kinds() == [start[1]] + start[1:]
    e.apply(MoveFrame(0, 3))
    assert kinds() == start[1:4] + [start[1]] + start[4:]
    e.apply(AddFrame(1, "pick", 1))
    assert kinds()[1] == ("pick", 1) and "title" not in e.lesson.plans[1].extras
    while e.can_undo:
        e.undo()
    assert kinds() == start


def test_panels_and_a_question_are_checked_as_the_loader_checks_them():
    e = edited()
    e.apply(SetFrameText(2, "ask", "en", "Which token comes next?"))
    assert e.lesson.plans[2].extras["ask_panels"] == ("distribution",)
    assert "ask_panel" not in e.data["frames"][2]            # the default: not written
    with pytest.raises(LessonError, match=r"frames\[2\]\.ask_panel: 'timeline' is not shown on this frame"):
        e.apply(SetPanels(2, ("lesson",)))                     # no panel of the run left to hide
    e.apply(SetPanels(2, ("kv", "timeline")))    # the question now hides the first panel shown
    assert e.lesson.plans[2].extras["ask_panels"] == ("kv",)
    lesson, _ = e.apply(SetFrameText(2, "ask", "en", ""))
    assert "ask" not in lesson.plans[2].extras


def test_checks_added_edited_and_deleted():
    e = edited()
    n = len(e.lesson.checks)
    e.apply(AddCheck(n, "before", "en", "What is cached?", "Processed tokens."))
    assert e.lesson.checks[n].question["en"] == "What is cached?" and e.lesson.checks[n].when == "before"
    e.apply(SetCheck(n, "answer", "zh", "已处理的Token。"))
    assert e.lesson.checks[n].answer["zh"] == "已处理的Token。"
    with pytest.raises(LessonError, match=r"checks\[\d+\]\.when: 'later': expected one of before, after"):
        e.apply(SetCheck(n, "when", "en", "later"))
    e.apply(DeleteCheck(n))
    assert len(e.lesson.checks) == n


def test_a_lesson_saved_elsewhere_is_read_from_there(tmp_path):
    e = edited()
    e.apply(SetFrameText(0, "title", "en", "Start"))
    target = tmp_path / "mine.lesson.toml"
    target.write_text(e.text, encoding="utf-8")
    e.saved(target)
    assert not e.changed and e.lesson.id == "mine"
    assert parse_lesson(target).plans == e.lesson.plans


def test_an_edit_that_makes_the_lesson_bigger_than_a_lesson_file_may_be_is_refused():
    from explorer.core.limits import MAX_LESSON_BYTES
    e = edited()
    with pytest.raises(LessonError, match=rf"wo-ai-to-eos\.toml: more than a lesson file may hold \({MAX_LESSON_BYTES:,}"):
        e.apply(SetLessonText("summary", "en", "长" * (MAX_LESSON_BYTES // 3 + 1)))    # 3 bytes a character
    assert not e.changed and not e.can_undo
