"""`lesson_problems`: every problem of a hand-edited lesson, each on its line (`FILE:LINE:
key: what`), and lessons written in one language. The corpus is built here from a small
valid lesson whose lines are numbered in its own comments; every expected line below is
counted by hand from them."""

from __future__ import annotations

import re
import tomllib

import pytest

from explorer.catalog import registry as model_registry
from explorer.lessons import LessonError, lesson_problems, lessons_dir
from explorer.lessons.problems import key_lines, line_of
from explorer.lessons.schema import parse_lesson

VALID = """\
format = "token-explorer/lesson"                                   # 1
version = 1                                                        # 2
prompt = "我爱"                                                    # 3
                                                                   # 4
[title]                                                            # 5
en = "A lesson of my own"                                          # 6
zh = "我自己的一课"                                                # 7
                                                                   # 8
[summary]                                                          # 9
en = "Two counts after every step."                                # 10
zh = "每一步之后数两个数。"                                        # 11
                                                                   # 12
[model]                                                            # 13
kind = "teaching"                                                  # 14
                                                                   # 15
[settings]                                                         # 16
mode = "greedy"                                                    # 17
max_new_tokens = 3                                                 # 18
                                                                   # 19
[[frames]]                                                         # 20
show = "input"                                                     # 21
title = { en = "The prompt {ids}", zh = "提示{ids}" }              # 22
                                                                   # 23
[[frames]]                                                         # 24
show = "prefill"                                                   # 25
step = 0                                                           # 26
[frames.explain]                                                   # 27
what = { en = "The cache holds {cache}.", zh = "缓存长{cache}。" } # 28
                                                                   # 29
[[frames]]                                                         # 30
show = "pick"                                                      # 31
step = 0                                                           # 32
                                                                   # 33
[[checks]]                                                         # 34
when = "after"                                                     # 35
question = { en = "How long is the cache?", zh = "缓存多长？" }    # 36
answer = { en = "Two.", zh = "两个。" }                            # 37
"""


def edited(*edits: tuple[str, str]) -> str:
    text = VALID
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


def problems_of(tmp_path, text: str, name: str = "mine.lesson.toml") -> list[str]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return [str(p) for p in lesson_problems(path)]


def only_in(lang: str, text: str = VALID) -> str:
    """The lesson with every text in `lang` alone: the other language's lines and entries removed."""
    other = "zh" if lang == "en" else "en"
    text = "".join(line for line in text.splitlines(keepends=True) if not line.startswith(f"{other} = "))
    text = re.sub(f'{other} = "[^"]*", ' if other == "en" else f', {other} = "[^"]*"', "", text)
    assert not re.search(rf"\b{other} = ", text)
    return text


def test_the_valid_lesson_has_no_problems(tmp_path):
    assert problems_of(tmp_path, VALID) == []


# ---------------------------------------------------------------------------- the corpus

MODEL_PATH = "<where the model would be>"      # filled in by the test: the registry's path in an empty cache

CORPUS = {  # name -> (edits of VALID, every problem printed; F is the file as given, … ends a beginning)
    "a bad number": (
        [("max_new_tokens = 3 ", 'max_new_tokens = "three"')],
        ["F:18: settings: max_new_tokens = 'three': expected an integer from 1 to 4096"]),
    "a bad step": (
        [("step = 0                                                           # 26", "step = -5  # 26")],
        ["F:26: frames[1].step: -5: expected a step index (0 = Prefill, at most 4096) or -1 for the last step"]),
    "a step written as true": (
        [("step = 0                                                           # 26", "step = true  # 26")],
        ["F:26: frames[1].step: True: expected a step index (0 = Prefill, at most 4096) or -1 for the last step"]),
    "200,000 samples": (
        [("                                                                   # 33\n",
          "samples = [" + ", ".join(["1"] * 200_000) + "]  # 33\n")],
        ["F:33: frames[2].samples: expected a list of 1 to 64 seeds (integers from 0 to 2147483647), one per "
         "sample; got 200,000"]),
    "a search 2**64 deep": (
        [("                                                                   # 33\n",
          'search = { evaluator = "e", width = 1, branches = 2, depth = 18446744073709551616 }  # 33\n'),
         ('answer = { en = "Two.", zh = "两个。" }                            # 37\n',
          'answer = { en = "Two.", zh = "两个。" }  # 37\n[[evaluators]]  # 38\nname = "e"  # 39\n'
          'default = 0.0  # 40\nscores = { "学习" = 1.0 }  # 41\n')],
        ["F:33: frames[2].search.depth: 18446744073709551616: expected an integer from 1 to 64"]),
    "a score that is not a number": (
        [('answer = { en = "Two.", zh = "两个。" }                            # 37\n',
          'answer = { en = "Two.", zh = "两个。" }  # 37\n[[evaluators]]  # 38\nname = "e"  # 39\n'
          'default = 0.0  # 40\nscores = { "学习" = nan }  # 41\n')],
        ["F:41: evaluators[0].scores.学习: nan: expected a finite number"]),
    "a panel named 100,000 times": (
        [("                                                                   # 33\n",
          "panels = [" + ", ".join(['"kv"'] * 100_000) + "]  # 33\n")],
        ["F:33: frames[2].panels: expected each of player, timeline, …"]),
    "a missing section": (
        [("[model]                                                            # 13\n", "\n"),
         ('kind = "teaching"                                                  # 14\n', "\n")],
        ["F:1: model: missing"]),
    "a missing key of a frame": (
        [('show = "pick"                                                      # 31', "# 31")],
        ["F:30: frames[2].show: missing"]),
    "two bad frames": (
        [('show = "input"  ', 'show = "inptu"  '),
         ("step = 0                                                           # 32", 'step = "one"  # 32')],
        ["F:21: frames[0].show: 'inptu': expected one of input, prefill, decode, pick, stop",
         "F:32: frames[2].step: 'one': expected a step index (0 = Prefill, at most 4096) or -1 for the last step"]),
    "unknown keys": (
        [("                                                                   # 4\n", "temprature = 0.5  # 4\n"),
         ("                                                                   # 29\n", 'colour = "red"  # 29\n')],
        ["F:4: temprature: unknown key (expected one of format, version, order, title, summary, builds_on, model, "
         "prompt, prompt_ids, settings, forces, scenarios, evaluators, frames, checks, speculative)",
         "F:29: frames[1].explain.colour: unknown key (expected one of what, why, how, misconception, check)"]),
    "an empty text and a text of the wrong type": (
        [('title = { en = "The prompt {ids}", zh = "提示{ids}" }', 'title = { en = "" }'),
         ('answer = { en = "Two.", zh = "两个。" }', 'answer = { en = "Two.", zh = 2 }')],
        ['F:22: frames[0].title: missing "en" text (a text needs en or zh or both, each a non-empty string)',
         'F:37: checks[0].answer: missing "zh" text (a text needs en or zh or both, each a non-empty string)']),
    "invalid TOML": (
        [('zh = "我自己的一课"', 'zh = "我自己的一课')],
        ["F:7: not valid TOML: Illegal character '\\n' (column 64)"]),
    "a newer version": (
        [("version = 1 ", "version = 2 "), ('show = "input"  ', 'show = "question"  ')],
        ["F:2: version: written for a newer Token Explorer (format version 2; this one reads up to 1)"]),
    "two unknown placeholders": (
        [("The cache holds {cache}.", "The cache holds {size}."), ("The prompt {ids}", "The prompt {prompt}")],
        ["F:22: frames[0].title.en: unknown placeholder or stray brace: 'prompt' (known here: …",
         "F:28: frames[1].explain.what.en: unknown placeholder or stray brace: 'size' (known here: …"]),
    "a model that is not installed": (
        [('kind = "teaching"  ', 'kind = "installed"'),
         ("                                                                   # 15\n", 'name = "smollm2"  # 15\n')],
        [f"F:15: model.name: model 'smollm2' is not installed (expected {MODEL_PATH}); "
         "install it with: explorer model install smollm2"]),
}


@pytest.mark.parametrize("case", list(CORPUS))
def test_every_problem_of_a_broken_lesson_is_printed_with_its_line(tmp_path, monkeypatch, case):
    monkeypatch.setenv(model_registry.CACHE_ENV, str(tmp_path / "empty-cache"))
    edits, expected = CORPUS[case]
    path = tmp_path / "mine.lesson.toml"
    path.write_text(edited(*edits), encoding="utf-8")
    found = [str(p) for p in lesson_problems(path)]
    expected = [e.replace("F:", f"{path}:", 1).replace(MODEL_PATH, str(model_registry.model_path("smollm2")))
                for e in expected]
    assert len(found) == len(expected) and all(f == e or (e.endswith("…") and f.startswith(e[:-1]))
                                               for f, e in zip(found, expected)), found
    if case != "a model that is not installed":          # read without its model: it is built when opened
        with pytest.raises(LessonError) as info:
            parse_lesson(path)
        assert str(info.value) == found[0].replace(str(path), path.name, 1)     # the first, with its line
        assert [str(p) for p in info.value.problems] == [f.replace(str(path), path.name, 1) for f in found]


def test_a_file_that_is_not_there_is_a_problem_without_a_line(tmp_path):
    path = tmp_path / "gone.lesson.toml"
    assert problems_of(tmp_path, VALID, "here.toml") == [] and [str(p) for p in lesson_problems(path)] == [
        f"{path}: file not found"]


INSTALLED = {  # shipped lesson -> (line, key, model) of each installed model it runs on, counted in the file
    "gemma-wo-ai": [(27, "model.name", "gemma3-270m"), (41, "scenarios[1].model.name", "smollm2")],
    "prefix-cache": [(31, "model.name", "smollm2")],
    "real-model": [(25, "model.name", "smollm2")],
    "inside-and-across": [(24, "model.name", "smollm2")],
}


def test_every_shipped_lesson_has_no_problem_but_a_real_model_not_installed(tmp_path, monkeypatch):
    monkeypatch.setenv(model_registry.CACHE_ENV, str(tmp_path / "empty-cache"))
    for path in sorted(lessons_dir().glob("*.toml")):
        expected = [f"{path}:{line}: {key}: model {name!r} is not installed (expected {model_registry.model_path(name)}); "
                    f"install it with: {model_registry.MODELS[name].install_command}"
                    for line, key, name in INSTALLED.get(path.stem, [])]
        assert [str(p) for p in lesson_problems(path)] == expected, path.name


# ---------------------------------------------------------------------------- one language

@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_lesson_in_one_language_is_valid_and_falls_back_to_it(tmp_path, lang):
    text = only_in(lang)
    assert problems_of(tmp_path, text) == []
    path = tmp_path / "mine.lesson.toml"
    lesson = parse_lesson(path)
    other = "zh" if lang == "en" else "en"
    written = {"en": ("A lesson of my own", "How long is the cache?", "The cache holds {cache}."),
               "zh": ("我自己的一课", "缓存多长？", "缓存长{cache}。")}[lang]
    texts = (lesson.title, lesson.checks[0].question, lesson.plans[1].extras["explain"]["what"])
    assert tuple(t[other] for t in texts) == written and tuple(t[lang] for t in texts) == written
    assert all(t.fallback == {other: lang} for t in texts)
    assert lesson.fallbacks(other) == {lang: 6} and lesson.fallbacks(lang) == {}


def test_a_lesson_mixing_languages_falls_back_text_by_text(tmp_path):
    text = edited(('zh = "我自己的一课"', ""), ('what = { en = "The cache holds {cache}.", zh', "what = { zh"))
    assert problems_of(tmp_path, text) == []
    lesson = parse_lesson(tmp_path / "mine.lesson.toml")
    assert lesson.title == {"en": "A lesson of my own", "zh": "A lesson of my own"}
    assert lesson.plans[1].extras["explain"]["what"] == {"en": "缓存长{cache}。", "zh": "缓存长{cache}。"}
    assert lesson.summary.fallback == {} and lesson.fallbacks("zh") == {"en": 1} and lesson.fallbacks("en") == {"zh": 1}


def test_a_placeholder_is_checked_in_the_language_it_is_written_in(tmp_path):
    text = only_in("en", edited(("The cache holds {cache}.", "The cache holds {size}.")))
    found = problems_of(tmp_path, text)
    assert len(found) == 1 and ": frames[1].explain.what.en: unknown placeholder" in found[0], found


def _key_paths(value, path: str = ""):
    """(key path, the key's own name) of every key of a parsed TOML table, as the reader names them."""
    for key, v in value.items():
        here = f"{path}.{key}" if path else key
        yield here, key
        if isinstance(v, dict):
            yield from _key_paths(v, here)
        elif isinstance(v, list) and v and all(isinstance(t, dict) for t in v):
            for i, t in enumerate(v):
                yield from _key_paths(t, f"{here}[{i}]")


@pytest.mark.parametrize("path", sorted(lessons_dir().glob("*.toml")), ids=lambda p: p.stem)
def test_every_key_of_a_shipped_lesson_is_found_on_its_own_line(path):
    """The line of each key path tomllib reads is a line that writes that key: `key =`, a
    header naming it, or an inline table holding it."""
    text = path.read_text(encoding="utf-8")
    lines, data = key_lines(text), tomllib.loads(text)
    written = text.splitlines()
    for where, key in _key_paths(data):
        line = written[line_of(lines, where) - 1]
        assert re.search(rf'(^|[\s{{,.\[]|"){re.escape(key)}"?\s*(=|\]|\.)', line), (where, line)


def test_the_shipped_lessons_are_written_in_both_languages():
    for path in sorted(lessons_dir().glob("*.toml")):
        lesson = parse_lesson(path)
        assert lesson.fallbacks("en") == {} and lesson.fallbacks("zh") == {}, path.name
