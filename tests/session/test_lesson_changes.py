"""What the teacher changes on a lesson frame: recorded setting by setting with the lesson's
value, titles computed from the run on screen while they differ, the lesson's texts marked,
a frame with settings of its own applying them on arrival, back to the lesson's settings,
leaving the lesson, a new prompt starting at its first frame. Every shipped lesson is swept:
each sampling setting moved away from the lesson's on every frame."""

import re
from dataclasses import replace

import pytest

from explorer.core.decode.sampling import SamplingConfig
from explorer.core.models.teaching import load_teaching_model
from explorer.i18n import LANGS
from explorer.lessons import lesson_names, load_lesson
from explorer.session import Session
from explorer.session.changes import Change
from explorer.session.narration import frame_explanation, frame_title
from explorer.session.session import DEFAULT_CONFIG

# a value away from any lesson's, per setting (one that every model and mode accepts)
AWAY = {"temperature": (0.56, 1.7), "top_k": (2, 1), "top_p": (0.27, 0.61), "min_p": (0.13, 0.31),
        "repetition_penalty": (1.35, 0.8)}


def frame_index(session, scenario_title_fragment: str) -> int:
    return next(i for i, f in enumerate(session.frames) if f.title and scenario_title_fragment in f.title["en"])


def texts(session, lang="en"):
    f, run, vocab = session.frame, session.run, session.model.vocab
    return frame_title(f, run, vocab, lang), frame_explanation(f, run, vocab, lang)


@pytest.fixture
def sampling():
    return load_lesson("sampling").build_session()


def test_a_changed_temperature_is_named_with_the_lessons_value(sampling):
    s = sampling
    s.go(frame_index(s, "T = 2:"))
    title, explain = texts(s)
    assert title.startswith("T = 2: A 0.5065") and "changed" not in explain
    s.set_sampling(temperature=0.56)
    assert s.frame.changed == (Change("temperature", "2", "0.56"),)
    title, explain = texts(s)
    assert "0.5065" not in title and "T = 2" not in title          # the run's own title, not the lesson's
    assert list(explain)[0] == "changed"
    assert "temperature 0.56 (lesson: 2)" in explain["changed"]
    zh_title, zh_explain = texts(s, "zh")
    assert "0.5065" not in zh_title and "温度 0.56（课程：2）" in zh_explain["changed"]


def test_a_frame_with_settings_of_its_own_applies_them_on_arrival(sampling):
    s = sampling
    s.frames_apply_their_settings = True                     # as the window's player has it
    s.go(frame_index(s, "top-p = 0.8: keep two"))
    s.set_sampling(top_p=0.27)
    assert s.config.top_p == 0.27 and s.frame.changed
    s.next()
    assert s.frame.title["en"] == "The same probabilities, top-p = 0.9: keep three"
    assert s.config.top_p == 0.9 and s.frame.changed == ()
    assert s.set_aside == (Change("top_p", "0.9", "0.27"),)
    title, explain = texts(s)
    assert title == "The same probabilities, top-p = 0.9: keep three" and "changed" not in explain
    final = s.step.distribution
    assert int((final.probs > 0).sum()) == 3                 # the chart keeps three, as the title says


def test_stepped_through_by_code_a_lessons_session_keeps_the_settings_asked_for(sampling):
    """trace, export and an export's copy of the window's session step frame by frame: a
    command line's --temperature holds on every frame (the frames mark the change)."""
    s = sampling
    s.set_sampling(temperature=0.56)
    for i in range(len(s.frames)):
        s.go(i)
        assert s.config.temperature == 0.56 and s.set_aside == (), i
    window_like = load_lesson("sampling").build_session()
    window_like.frames_apply_their_settings = True
    assert window_like.copy().frames_apply_their_settings is False


def test_the_teachers_change_stays_on_frames_of_the_same_scenario():
    s = load_lesson("prefill-decode").build_session()
    s.frames_apply_their_settings = True
    owners = [s.run_at(i)[0] for i in range(len(s.frames))]
    assert all(r is owners[0] for r in owners)            # one scenario for every frame
    s.set_sampling(mode="sample", temperature=1.7)
    s.last()
    assert s.config.temperature == 1.7 and s.set_aside == ()
    assert Change("temperature", "1", "1.7") in s.frame.changed


def test_back_to_the_lessons_settings_drops_every_change(sampling):
    s = sampling
    s.go(frame_index(s, "T = 2:"))
    s.set_sampling(temperature=0.56, top_k=2)
    s.force(0, 2)
    assert len(s.frame.changed) == 3
    s.restore_lesson_settings()
    assert s.frame.changed == () and s.config.temperature == 2.0 and s.overrides == {} and not s.can_undo
    assert texts(s)[0].startswith("T = 2: A 0.5065")


def test_leaving_a_lesson_starts_from_the_defaults_with_the_teachers_own_changes():
    s = load_lesson("sampling").build_session()
    s.set_sampling(seed=5)
    model = load_teaching_model()
    kept = s.free_run(model, (1, 2))
    assert not s.in_lesson and s.content is None
    assert s.config == DEFAULT_CONFIG.with_(seed=5)        # not the lesson's sample mode, T or max tokens
    assert kept == (Change("seed", "0", "5"),)
    assert s.model is model and s.prompt_ids == (1, 2) and s.cursor == 0
    assert s.run.output_ids == (3, 5, 6)


def test_a_new_prompt_in_free_exploration_starts_at_its_first_frame():
    s = Session(load_teaching_model(), [1, 2])
    s.last()
    s.set_prompt_ids([1, 2, 3])
    assert s.cursor == 0 and s.frame.kind == "input"
    s.go(3)
    s.set_sampling(top_k=2)                                  # a setting keeps the frame
    assert s.cursor == 3


def test_a_new_prompt_in_a_lesson_keeps_the_frame_and_is_named():
    s = load_lesson("prefill-decode").build_session()
    s.go(2)
    s.set_prompt_ids([1, 2, 3])
    assert s.cursor == 2
    assert Change("prompt", "“我我学习你”", "“我爱学习”") in s.frame.changed      # the lesson's prompt: 我我学习你


def authored_numbers(text: str) -> set[str]:
    """Numbers a lesson wrote into a text itself (outside its {placeholders})."""
    return set(re.findall(r"\d+(?:\.\d+)?", re.sub(r"\{[^}]*\}", "", text)))


@pytest.mark.parametrize("name", lesson_names())
def test_no_text_quotes_the_lessons_numbers_unmarked_once_a_setting_moves(name):
    """Every sampling setting moved away from the lesson's on every frame: a title in which the
    lesson wrote numbers of its own is the run's own title instead, and an explanation that
    quotes numbers of its own comes under the note that names the setting, in both
    languages. (A text of placeholders stays: the run on screen fills them in.)"""
    lesson = load_lesson(name)
    session = lesson.build_session()
    session.frames_apply_their_settings = True               # stepped through as the window's player does
    real = any(m for m in lesson.installed_models)
    settings = ["temperature"] if real else list(AWAY)      # a real model reruns in seconds
    for setting in settings:
        session.restore_lesson_settings()
        for i in range(len(session.frames)):
            session.go(i)
            lesson_value = getattr(session.config, setting)
            first, second = AWAY[setting]
            session.set_sampling(**{setting: second if lesson_value == first else first})
            frame = session.frame
            assert any(c.setting == setting for c in frame.changed), (name, i, setting)
            for lang in LANGS:
                title, explain = texts(session, lang)
                if frame.title and authored_numbers(frame.title[lang]):
                    assert title != frame.title[lang], (name, i, setting, lang)
                    assert not authored_numbers(frame.title[lang]) - set(re.findall(r"\d+(?:\.\d+)?", title)) \
                        or title == frame_title(replace(frame, title=None), session.run, session.model.vocab, lang)
                if any(authored_numbers(t[lang]) for t in (frame.explain or {}).values()):
                    assert list(explain)[0] == "changed", (name, i, setting, lang)
                    assert f"{getattr(session.config, setting):g}" in explain["changed"]


def test_a_what_if_on_the_stop_frame_shows_on_the_pick_it_made():
    """The stop frame shows the last step's distribution: forcing a token there makes the run
    go on, and the player shows that step's pick (forced), not another frame of the step."""
    s = Session(load_teaching_model(), [1, 2])
    s.last()
    assert s.frame.kind == "stop" and s.frame.step == 2 and s.run.output_ids == (3, 5, 6)
    s.force(2, 4)                                            # 你 instead of EOS: the run goes on
    assert s.frame.kind == "pick" and s.frame.step == 2 and s.step.forced and s.step.selected_id == 4
    s.set_sampling(top_k=3)                                  # a later change keeps the frame
    assert s.frame.kind == "pick" and s.frame.step == 2


def test_a_what_if_on_a_pick_frame_stays_there():
    s = Session(load_teaching_model(), [1, 2])
    s.go(next(i for i, f in enumerate(s.frames) if f.kind == "pick" and f.step == 1))
    before = s.cursor
    s.force(1, 3)
    assert s.cursor == before and s.frame.kind == "pick" and s.step.forced


def test_a_slides_caption_names_the_change_and_says_what_this_run_did(sampling):
    from explorer.session.narration import frame_caption
    s = sampling
    s.go(frame_index(s, "T = 2:"))
    lesson_caption = frame_caption(s.frame, s.run, s.model.vocab)
    assert lesson_caption.startswith("Dividing by 2")
    s.set_sampling(temperature=0.56)
    caption = frame_caption(s.frame, s.run, s.model.vocab)
    assert caption.startswith("Changed from the lesson: temperature 0.56 (lesson: 2). ")
    assert "Dividing by 2" not in caption


def test_a_title_of_words_and_placeholders_stays_true_on_the_teachers_run():
    """wo-ai-to-eos's first title, "Input 我爱 = {ids}: …", quotes no number of its own: a
    changed temperature leaves it (the run fills in {ids}); a typed prompt replaces it,
    because it quotes the lesson's prompt 我爱."""
    s = load_lesson("wo-ai-to-eos").build_session()
    assert s.frame.title["en"] == "Input 我爱 = {ids}: nothing processed yet"
    s.set_sampling(mode="sample", temperature=1.7)
    assert s.frame.changed and texts(s)[0] == "Input 我爱 = [1, 2]: nothing processed yet"
    s.set_prompt_ids([1, 2, 3])
    title = texts(s)[0]
    assert "我爱 =" not in title and "[1, 2, 3]" in title


def test_every_setting_has_a_name_in_the_changed_badge():
    """An API stage changed on a lesson frame is named like the others (both languages)."""
    from explorer.session.changes import badge_text, config_changes
    lesson = SamplingConfig()
    now = lesson.with_(presence_penalty=0.5, frequency_penalty=0.25, logit_bias={3: -100.0}, typical_p=0.9,
                       min_keep=2, xtc_probability=0.5, xtc_threshold=0.2, top_n_sigma=1.0, min_new_tokens=3)
    changes = config_changes(lesson, now)
    assert len(changes) == 9
    en, zh = badge_text(changes, "en"), badge_text(changes, "zh")
    assert "presence penalty 0.5 (lesson: 0)" in en and "logit bias 3:-100 (lesson: none)" in en
    assert "存在惩罚 0.5（课程：0）" in zh and "XTC阈值 0.2（课程：0.1）" in zh
