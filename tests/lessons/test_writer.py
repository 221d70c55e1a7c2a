"""Save as lesson without a window: the document of a session reopens as the same run frame
for frame (every shipped lesson, a teacher's own exploration, a GGUF file by path with its
SHA-256), its TOML is read by the standard library's parser as written, and saving is
atomic and never replaces a file that changed behind the teacher's back without asking."""

from __future__ import annotations

import errno
import hashlib
import os
import tomllib

import numpy as np
import pytest

from explorer.catalog.load import load_model
from explorer.cli.main import main
from explorer.core.errors import ExplorerError
from explorer.lessons import LessonError, lesson_names, load_lesson, parse_lesson
from explorer.lessons.writer import file_digest, lesson_document, save_lesson
from explorer.session import Session
from explorer.session.narration import frame_explanation, frame_title
from gguf_files import llama_tensors, write_llama


def shown(session: Session) -> list[tuple]:
    """Everything a frame shows that a saved lesson must repeat: kind, step, ids, cache,
    the panels of its slide, the selected id and the final probabilities of its step, its
    title and explanation in both languages."""
    rows = []
    for i, f in enumerate(session.frames):
        run, model = session.run_at(i)
        step = None if f.step is None else run.steps[f.step]
        rows.append((f.kind, f.step, f.visible_ids, f.cache_len,
                     f.slide_panels(bool(run.steps[0].trace.layers), session.scenario_results()[0][1] is not None),
                     None if step is None else (step.selected_id, step.forced, tuple(step.distribution.probs)),
                     *(frame_title(f, run, model.vocab, lang) for lang in ("en", "zh")),
                     *(tuple(frame_explanation(f, run, model.vocab, lang).items()) for lang in ("en", "zh"))))
    return rows


def reopened(session: Session, tmp_path, name: str = "saved") -> Session:
    path = tmp_path / f"{name}.lesson.toml"
    path.write_text(lesson_document(session), encoding="utf-8")
    return parse_lesson(path).build_session()


@pytest.mark.parametrize("name", lesson_names())
def test_every_shipped_lesson_saved_unchanged_reopens_as_the_same_frames(name, tmp_path):
    lesson = load_lesson(name)
    session = lesson.build_session()
    again = reopened(session, tmp_path, name)
    assert shown(again) == shown(session)
    assert [f.panels for f in again.frames] == [f.panels or f.slide_panels(bool(session.run_at(i)[0].steps[0].trace.layers),
                                                                             session.scenario_results()[0][1] is not None)
                                                for i, f in enumerate(session.frames)]
    assert again.content.title == lesson.title and again.content.checks == lesson.checks
    assert [r.output_ids for r, _ in again.scenario_results()] == [r.output_ids for r, _ in session.scenario_results()]


def teachers_run() -> Session:
    """A teacher's own exploration of the teaching model: sampled hot with a seed, a what-if
    at step 1, a stop string, a length limit."""
    model = load_model("teaching")
    session = Session(model, model.vocab.encode("我爱"))
    session.set_sampling(mode="sample", temperature=1.7, top_k=5, top_p=0.95, seed=11, max_new_tokens=6,
                         stop_strings=("！！",), order=("temperature", "top_k", "top_p", "min_p", "repetition_penalty"))
    session.force(1, 4)
    return session


def test_a_teachers_exploration_reopens_as_the_same_run_with_every_setting(tmp_path):
    session = teachers_run()
    text = lesson_document(session)
    data = tomllib.loads(text)                      # the standard library's reading, not ours
    assert data["model"] == {"kind": "teaching"}
    assert data["prompt"] == "我爱" and data["forces"] == {"1": 4}
    assert data["settings"] == {"mode": "sample", "temperature": 1.7, "top_k": 5, "top_p": 0.95, "min_p": 0.0,
                                "repetition_penalty": 1.0, "seed": 11,
                                "order": ["temperature", "top_k", "top_p", "min_p", "repetition_penalty"],
                                "max_new_tokens": 6, "stop_strings": ["！！"], "num_beams": 2, "length_penalty": 1.0}
    assert [(f["show"], f.get("step")) for f in data["frames"]] == \
        [(f.kind, -1 if f.kind == "stop" else f.step) for f in session.frames]
    assert all(set(f["title"]) == {"en", "zh"} and len(f["explain"]) == 5 for f in data["frames"])
    again = reopened(session, tmp_path)
    assert shown(again) == shown(session)
    assert again.run.steps[1].forced and again.config == session.config


def test_texts_with_quotes_line_breaks_and_control_characters_are_written_as_tomllib_reads_them(tmp_path):
    model = load_model("teaching")
    session = Session(model, [1, 2])
    odd = ('say "hi"\\now', "line\nbreak\ttab", "del\x7fend", "零\u200bwidth")
    session.set_sampling(stop_strings=odd)
    assert tuple(tomllib.loads(lesson_document(session))["settings"]["stop_strings"]) == odd
    assert reopened(session, tmp_path).config.stop_strings == odd


def test_a_gguf_file_opened_by_path_is_saved_with_its_sha256_and_another_file_there_is_named_as_a_difference(
        tmp_path, capsys):
    path = write_llama(tmp_path / "mine.gguf", llama_tensors(np.random.default_rng(5)))
    model = load_model(str(path))
    session = Session(model, model.vocab.encode("the"))
    session.set_sampling(max_new_tokens=2)
    saved = tmp_path / "lessons" / "mine.lesson.toml"
    saved.parent.mkdir()
    saved.write_text(lesson_document(session), encoding="utf-8")
    table = tomllib.loads(saved.read_text(encoding="utf-8"))["model"]
    first = hashlib.sha256(path.read_bytes()).hexdigest()
    assert table == {"kind": "gguf", "file": str(path.resolve()), "sha256": first}
    assert shown(parse_lesson(saved).build_session()) == shown(session)
    assert parse_lesson(saved).model_differences() == ()

    write_llama(path, llama_tensors(np.random.default_rng(6)))      # another model under the same name
    second = hashlib.sha256(path.read_bytes()).hexdigest()
    lesson = parse_lesson(saved)
    replayed = lesson.build_session()                                 # it plays, on the file that is there
    assert shown(replayed) != shown(session)
    (difference,) = lesson.model_differences()
    assert (difference.path, difference.digest, difference.expected) == (path.resolve(), second, first)
    said = str(difference)
    assert str(path.resolve()) in said and first[:12] in said and second[:12] in said and "may differ" in said

    assert main(["trace", "--lesson", str(saved), "--json"]) == 0     # the command line says it too
    err = capsys.readouterr().err
    assert f"note: {saved}" in err and str(path.resolve()) in err and first[:12] in err


def test_a_sha256_on_a_model_that_is_no_gguf_file_is_refused_by_name(tmp_path):
    text = lesson_document(Session(load_model("teaching"), [1, 2]))
    path = tmp_path / "bad.lesson.toml"
    bad = text.replace('kind = "teaching"', 'kind = "teaching"\nsha256 = "00"')
    path.write_text(bad, encoding="utf-8")
    line = bad.splitlines().index('sha256 = "00"') + 1
    with pytest.raises(LessonError, match=rf"bad\.lesson\.toml:{line}: model\.sha256: expected the SHA-256"):
        parse_lesson(path)


def test_a_model_built_in_code_cannot_be_named_and_says_so():
    from explorer.core.models.teaching import load_teaching_model
    with pytest.raises(ExplorerError, match="not loaded from a name or a file"):
        lesson_document(Session(load_teaching_model(), [1, 2]))


# ---------------------------------------------------------------------------- saving

def test_saving_writes_the_file_and_replaces_only_what_it_wrote_or_was_allowed_to(tmp_path):
    path = tmp_path / "class.lesson.toml"
    asked = []

    def ask(p, changed):
        asked.append((p, changed))
        return False

    digest = save_lesson(path, "first\n", None, ask)
    assert path.read_text() == "first\n" and digest == hashlib.sha256(b"first\n").hexdigest() and not asked
    digest = save_lesson(path, "second\n", digest, ask)          # its own file: no question
    assert path.read_text() == "second\n" and not asked
    path.write_text("edited by hand\n")                          # changed on disk since
    assert save_lesson(path, "third\n", digest, ask) is None
    assert path.read_text() == "edited by hand\n" and asked == [(path, True)]
    assert save_lesson(path, "third\n", digest, lambda p, changed: True) is not None
    assert path.read_text() == "third\n"
    other = tmp_path / "someone-elses.lesson.toml"
    other.write_text("theirs\n")
    assert save_lesson(other, "mine\n", None, ask) is None and asked[-1] == (other, False)
    assert other.read_text() == "theirs\n"


@pytest.mark.parametrize("failure", [errno.ENOSPC, errno.EACCES])
def test_a_full_disk_or_a_read_only_folder_names_the_file_and_keeps_what_was_there(tmp_path, monkeypatch, failure):
    path = tmp_path / "class.lesson.toml"
    path.write_text("kept\n")
    known = file_digest(path)

    def refuse(*_args, **_kw):
        raise OSError(failure, os.strerror(failure))

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(ExplorerError) as caught:
        save_lesson(path, "new\n", known, lambda *_: True)
    assert str(path) in str(caught.value) and os.strerror(failure) in str(caught.value)
    assert path.read_text() == "kept\n"
    assert [p.name for p in tmp_path.iterdir()] == ["class.lesson.toml"]       # no temporary file left


def test_the_api_settings_are_written_when_on_and_read_back(tmp_path):
    model = load_model("teaching")
    session = Session(model, [1, 2])
    session.set_sampling(mode="sample", presence_penalty=0.5, frequency_penalty=-0.25, logit_bias={3: -100.0, 5: 2.5},
                         typical_p=0.8, min_keep=2, xtc_probability=0.5, xtc_threshold=0.2, top_n_sigma=1.5,
                         min_new_tokens=2, order="llama.cpp")
    data = tomllib.loads(lesson_document(session))["settings"]
    assert data["logit_bias"] == {"3": -100.0, "5": 2.5} and data["typical_p"] == 0.8 and data["min_new_tokens"] == 2
    assert data["order"] == ["repetition_penalty", "top_k", "top_p", "min_p", "temperature"]   # the preset, as before
    assert reopened(session, tmp_path).config == session.config
    plain = tomllib.loads(lesson_document(Session(model, [1, 2])))["settings"]
    assert not {"logit_bias", "typical_p", "xtc_probability", "min_keep"} & plain.keys()    # off: not written
