"""A lesson on the teacher's own GGUF model ([model] kind = "gguf", file = a path beside the
lesson): parsed without loading the model, opened off the UI thread like a lesson on an
installed model, and, when the file is not on this computer, listed on the start page with
where it was looked for and refused by name when opened."""

from __future__ import annotations

import numpy as np

from explorer.lessons.schema import parse_lesson
from gguf_files import llama_tensors, write_llama
from teacher import at_rest, shows

LONG = 120_000           # ms: a generous bound for a slow, shared machine, never a speed claim

LESSON = '''format = "token-explorer/lesson"
version = 1
prompt = "the"

[title]
en = "My own model"
zh = "我自己的模型"

[summary]
en = "The prompt on a model from this computer."
zh = "本机模型上的提示。"

[model]
kind = "gguf"
file = "tiny.gguf"

[settings]
mode = "greedy"
max_new_tokens = 2

[[frames]]
show = "prefill"
step = 0
panels = ["kv", "attention"]
title = { en = "Prefill of {n} tokens", zh = "{n}个Token的Prefill" }
[frames.explain]
what = { en = "The prompt went through every layer.", zh = "提示经过了每一层。" }
why = { en = "A Prefill reads the whole prompt at once.", zh = "Prefill一次读完整个提示。" }
how = { en = "Look at the cache.", zh = "看缓存。" }
misconception = { en = "Nothing was generated yet.", zh = "还没有生成任何内容。" }
check = { en = "Cache {cache}.", zh = "缓存{cache}。" }
'''


def lesson_beside(tmp_path, with_model: bool):
    folder = tmp_path / "lessons"
    folder.mkdir()
    if with_model:
        write_llama(folder / "tiny.gguf", llama_tensors(np.random.default_rng(3)))
    path = folder / "mine.toml"
    path.write_text(LESSON, encoding="utf-8")
    return path


def test_a_lesson_on_a_gguf_file_is_parsed_without_loading_it_and_opens_off_the_ui_thread(qtbot, window, tmp_path,
                                                                                           monkeypatch):
    path = lesson_beside(tmp_path, with_model=True)
    import explorer.catalog.load as catalog_load
    loads = []
    real = catalog_load.load_model
    monkeypatch.setattr("explorer.lessons.models.load_model", lambda key: loads.append(key) or real(key))
    lesson = parse_lesson(path)
    assert loads == []                                               # parsing reads no weights
    assert lesson.real_models == (str(path.parent / "tiny.gguf"),) and lesson.absent_models() == {}
    assert window.lesson_switcher.switch_lesson(lesson)
    qtbot.waitUntil(lambda: at_rest(window) and window.session.model.name == "tiny", timeout=LONG)
    assert window.errors == [] and loads == [str(path.parent / "tiny.gguf")]
    assert window.session.frame.kind == "prefill"


def test_a_lesson_whose_gguf_file_is_absent_says_where_it_looked(qtbot, window, tmp_path):
    path = lesson_beside(tmp_path, with_model=False)
    lesson = parse_lesson(path)
    where = str(path.parent / "tiny.gguf")
    assert list(lesson.absent_models()) == [where] and where in lesson.absent_models()[where]
    before = window.session.model
    assert not window.lesson_switcher.switch_lesson(lesson)
    assert where in window.errors[-1] and "not on this computer" in window.errors[-1]
    assert window.session.model is before
    row = window.lesson_switcher.show_start_page()._row(lesson, "en", current=False)   # as the page lists a lesson
    assert shows(row, "Its model is not here") and shows(row, where)


def test_a_lesson_saved_with_another_file_of_its_model_opens_on_this_one_and_says_what_differs(qtbot, window,
                                                                                              tmp_path):
    path = lesson_beside(tmp_path, with_model=True)
    model_file = path.parent / "tiny.gguf"
    saved_with = "0" * 64                                     # the SHA-256 of a file that is no longer there
    path.write_text(LESSON.replace('file = "tiny.gguf"', f'file = "tiny.gguf"\nsha256 = "{saved_with}"'),
                    encoding="utf-8")
    window.lesson_switcher.open_lesson_file(str(path))
    qtbot.waitUntil(lambda: at_rest(window) and window.session.model.name == "tiny", timeout=LONG)
    assert window.errors == []
    assert "another model file than it was saved with" in window.statusBar().currentMessage()
    note = window.panels["lesson"].model_note
    assert not note.isHidden()
    text = window.panels["lesson"].text()
    assert "Not the model it was saved with" in text and str(model_file) in text and "000000000000" in text
    window.set_lang("zh")
    assert "不是保存时的模型" in window.panels["lesson"].text()
