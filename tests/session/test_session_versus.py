"""The A/B view's runs: the teacher's B (A's scenario with settings changed, or on another
model), a lesson frame's declared comparison, and what is refused."""

import numpy as np
import pytest

from explorer.core.decode.generate import generate
from explorer.core.decode.sampling import SamplingConfig
from explorer.core.errors import SettingError
from explorer.core.models.teaching import load_teaching_model
from explorer.lessons.models import logits_model
from explorer.lessons.reader import LessonError
from explorer.lessons.schema import parse_lesson
from explorer.session import Session
from explorer.session.versus import VersusSpec, frame_versus, parse_changes, spec_of


def _versus(s: Session, spec):
    s.versus_spec = spec
    return frame_versus(s)


def _at_step(s: Session, step: int) -> Session:
    while s.frame.step != step or s.frame.kind != "pick":
        s.next()
    return s


def test_parse_changes_reads_the_settings_names_and_checks_each_value():
    assert parse_changes("temperature=1.5, seed=3") == {"temperature": 1.5, "seed": 3}
    assert parse_changes("top-p=0.9,order=top_p,temperature") == {"top_p": 0.9, "order": "top_p,temperature"}
    assert parse_changes("mode=sample, stop_strings=.|!") == {"mode": "sample", "stop_strings": (".", "!")}
    for text, named in [("temprature=2", "unknown setting 'temprature'"), ("seed=three", "seed = 'three': expected an integer"),
                        ("temperature", "'temperature' is not NAME=VALUE"), ("top_p=7", "top_p"),
                        ("mode=beam", "mode=beam makes a tree"), ("temperature=nan", "temperature"),
                        ("seed=" + "9" * 5000, "(5,005 characters): expected at most 1,000 characters"),
                        ("seed=" + "9" * 30, "seed = '99999999"), ("seed=3, seed=4", "seed is given twice"),
                        ("," * 900, "is not NAME=VALUE"), ("temperature=1_0", "expected a number")]:
        with pytest.raises(SettingError) as caught:
            parse_changes(text)
        assert named in str(caught.value) and len(str(caught.value)) < 400        # a long line is quoted short


def test_identical_settings_never_part_and_are_zero_apart():
    s = _at_step(Session(load_teaching_model(), [1, 2], SamplingConfig(mode="sample", seed=4)), 0)
    v = _versus(s, spec_of({"seed": 4}))
    assert v.comparison.first_divergence is None
    assert v.comparison.distances == (0.0,) * len(s.run.steps)
    assert v.b_label("en") == "the same settings"


def test_two_temperatures_with_one_seed_are_apart_from_step_0_by_the_total_variation():
    model = load_teaching_model()
    s = _at_step(Session(model, [1, 2], SamplingConfig(mode="sample", seed=1)), 0)
    v = _versus(s, spec_of({"temperature": 2.0}))
    a, b = v.comparison.a, v.comparison.b
    assert a is s.run and b.config.temperature == 2.0 and b.config.seed == 1
    expected = generate(model, [1, 2], SamplingConfig(mode="sample", seed=1, temperature=2.0), check_recompute=False)
    assert b.output_ids == expected.output_ids                      # B is the scenario with the change, nothing else
    p, q = a.steps[0].distribution.probs, b.steps[0].distribution.probs
    assert v.comparison.distances[0] == pytest.approx(0.5 * np.abs(p - q).sum(), abs=1e-12) and v.comparison.distances[0] > 0
    assert v.b_label("en") == "temperature 2" and v.b_label("zh") == "温度 2"
    assert _versus(s, spec_of({"temperature": 2.0})) is v                   # computed once per A and B


def test_b_follows_a_what_if_and_a_slider():
    s = _at_step(Session(load_teaching_model(), [1, 2]), 0)
    spec = spec_of({"mode": "sample", "seed": 2})
    s.force(0, 4)
    assert _versus(s, spec).comparison.b.steps[0].selected_id == 4      # the same forced token
    s.set_sampling(max_new_tokens=2)
    assert len(_versus(s, spec).comparison.b.steps) <= 2


def test_two_models_with_different_tokenizers_are_refused_with_the_reason():
    s = _at_step(Session(load_teaching_model(), [1, 2]), 0)
    other = logits_model(("a", "b", "c"), (1.0, 2.0, 3.0))
    v = _versus(s, VersusSpec(model=other))
    assert v.comparison is None and "different tokenizers" in v.reason and "cannot be compared" in v.reason
    assert _versus(s, None).comparison is None and "temperature=1.5" in _versus(s, None).reason


LESSON = """format = "token-explorer/lesson"
version = 1
prompt_ids = [1, 2]
[title]
en = "A and B"
[summary]
en = "Two seeds."
[model]
kind = "teaching"
[settings]
mode = "sample"
seed = 1
temperature = 3.0
[[scenarios]]
name = "other"
settings = {{ seed = 5 }}
[[frames]]
show = "pick"
step = 0
panels = ["versus"]
compare = "{compare}"
title = {{ en = "A beside B" }}
"""


def _lesson(tmp_path, compare: str):
    path = tmp_path / "ab.toml"
    path.write_text(LESSON.format(compare=compare), encoding="utf-8")
    return parse_lesson(path)


def test_a_lesson_frame_declares_its_comparison(tmp_path):
    s = _lesson(tmp_path, "other").build_session()
    v = _versus(s, spec_of({"temperature": 0.1}))             # the lesson's comparison, not the teacher's B
    assert v.b_label("en") == "other: seed 5"
    assert v.comparison.a is s.run and v.comparison.b.config.seed == 5
    s.set_sampling(temperature=0.5)                                   # the teacher's change applies to both
    v = _versus(s, None)
    assert v.comparison.a.config.temperature == v.comparison.b.config.temperature == 0.5


@pytest.mark.parametrize("compare, message", [("hot", "frames[0].compare: 'hot' is not a scenario (known: base, other)"),
                                              ("base", "'base' is the frame's own scenario")])
def test_a_bad_comparison_is_named_with_its_line(tmp_path, compare, message):
    with pytest.raises(LessonError) as caught:
        _lesson(tmp_path, compare)
    assert str(caught.value).startswith("ab.toml:21: ") and message in str(caught.value)


def test_a_lesson_comparing_runs_of_two_tokenizers_is_refused_by_frame(tmp_path):
    text = LESSON.format(compare="other").replace(
        'settings = { seed = 5 }', 'model = { kind = "logits", pieces = ["a", "b"], logits = [1.0, 2.0] }\n'
        'prompt_ids = [0]\nsettings = { max_new_tokens = 1 }')
    path = tmp_path / "two.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(LessonError) as caught:
        parse_lesson(path).build_session()
    assert str(caught.value) == ("two.toml:23: frames[0].compare: teaching and logits have different tokenizers "
                                 "(7 and 3 pieces): the same prompt is other ids, so their steps cannot be compared")


def test_two_models_sharing_a_tokenizer_are_compared(tmp_path):
    """B on another model whose ids are the same pieces (the teaching model's vocabulary with
    other weights), pinned as B: both run, step for step."""
    import json
    from explorer.core.models.teaching import default_params_path, load_teaching_model as load
    data = json.loads(default_params_path().read_text(encoding="utf-8"))
    data["name"] = "teaching, other weights"
    tensors = data["tensors"]
    first = next(iter(tensors))                           # one weight matrix changed: other scores, same pieces
    tensors[first] = (np.asarray(tensors[first]) * -1.0).tolist()
    path = tmp_path / "other.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    other = load(path)
    s = _at_step(Session(load(), [1, 2], SamplingConfig(max_new_tokens=3)), 0)
    v = _versus(s, VersusSpec(model=other))
    expected = generate(other, [1, 2], SamplingConfig(max_new_tokens=3), check_recompute=False)
    assert v.comparison is not None and v.comparison.b.output_ids == expected.output_ids
    assert v.b_label("en").startswith("model ")
    assert v.comparison.distances[0] > 0                  # other weights: another distribution
