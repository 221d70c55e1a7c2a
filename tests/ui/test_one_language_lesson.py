"""A teacher's lesson written in English only, opened in a Chinese window: its English texts
are shown (on slides too, without a mark), and the lesson panel says they are English only."""

from __future__ import annotations

from explorer.lessons.schema import parse_lesson
from explorer.session.narration import frame_caption, frame_explanation, frame_title

ENGLISH_ONLY = """\
format = "token-explorer/lesson"
version = 1
prompt = "我爱"
title = { en = "My own lesson: two counts" }
summary = { en = "After every step, count the tokens on screen and the tokens in the cache." }
model = { kind = "teaching" }
settings = { mode = "greedy", max_new_tokens = 3 }

[[frames]]
show = "prefill"
step = 0
title = { en = "Prefill of {ids}" }
[frames.explain]
what = { en = "The prompt went in at once; the cache holds {cache}." }

[[checks]]
when = "after"
question = { en = "How long is the cache after the first pick?" }
answer = { en = "Two: the picked token is not in it yet." }
"""


def test_an_english_only_lesson_opens_in_a_chinese_window_with_its_note(qtbot, window, tmp_path):
    path = tmp_path / "mine.lesson.toml"
    path.write_text(ENGLISH_ONLY, encoding="utf-8")
    lesson = parse_lesson(path)
    window.actions["lang_zh"].trigger()
    assert window.lesson_switcher.switch_lesson(lesson)
    panel = window.panels["lesson"]
    assert panel.heading.text() == "My own lesson: two counts"
    assert panel.summary.text() == "After every step, count the tokens on screen and the tokens in the cache."
    assert panel.fallback_note.text() == "本课只有英文文本，以英文显示。 (English only)"
    assert "课后自测" in panel.text() and "1. How long is the cache after the first pick?" in panel.text()
    session = window.session
    frame, run, vocab = session.frame, session.run, session.model.vocab
    assert frame_title(frame, run, vocab, "zh") == "Prefill of [1, 2]"
    assert frame_explanation(frame, run, vocab, "zh")["what"] == "The prompt went in at once; the cache holds 2."
    assert frame_caption(frame, run, vocab, "zh") == "The prompt went in at once; the cache holds 2."   # a slide: no mark
    view = panel.checks("after")[0]
    qtbot.waitUntil(lambda: view.isVisible() and view.height() > view.question.height())   # laid out: the picture shows it
    panel.grab().save(str(tmp_path / "lesson-panel-zh.png"))
    window.actions["lang_en"].trigger()
    assert panel.fallback_note.isHidden() and "English only" not in panel.text()


def test_a_lesson_partly_translated_counts_the_texts_in_one_language(qtbot, window, tmp_path):
    path = tmp_path / "mixed.lesson.toml"
    path.write_text(ENGLISH_ONLY.replace('{ en = "My own lesson: two counts" }',
                                         '{ en = "My own lesson: two counts", zh = "我自己的一课：两个数" }'),
                    encoding="utf-8")
    window.actions["lang_zh"].trigger()
    assert window.lesson_switcher.switch_lesson(parse_lesson(path))
    panel = window.panels["lesson"]
    assert panel.heading.text() == "我自己的一课：两个数"
    assert panel.fallback_note.text() == "本课有5段文本只有英文。 (English only)"
