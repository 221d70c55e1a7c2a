"""The Qt-free session: frames follow the one-off rule, settings rerun, forces undo."""

import pytest

from explorer.core.errors import SettingError
from explorer.core.models.teaching import load_teaching_model
from explorer.session import Session, SessionEvent, TokenState

P, S, Q = TokenState.PROCESSED, TokenState.SELECTED, TokenState.PENDING


@pytest.fixture
def session():
    return Session(load_teaching_model(), [1, 2])


def test_frames_of_the_default_run_follow_the_one_off_rule(session):
    got = [(f.kind, f.visible_ids, f.states, f.cache_len) for f in session.frames]
    assert got == [
        ("input", (1, 2), (Q, Q), 0),
        ("prefill", (1, 2), (P, P), 2),
        ("pick", (1, 2, 3), (P, P, S), 2),
        ("decode", (1, 2, 3), (P, P, P), 3),
        ("pick", (1, 2, 3, 5), (P, P, P, S), 3),
        ("decode", (1, 2, 3, 5), (P, P, P, P), 4),
        ("pick", (1, 2, 3, 5, 6), (P, P, P, P, S), 4),
        ("stop", (1, 2, 3, 5, 6), (P, P, P, P, S), 4),
    ]


def test_cursor_moves_and_emits(session):
    seen = []
    session.subscribe("cursor_changed", lambda s: seen.append(s.cursor))
    session.next(); session.next(); session.last(); session.next(); session.first(); session.prev()
    assert seen == [1, 2, 7, 0]
    assert session.at_end is False and session.step is None


def test_changing_a_setting_reruns_and_keeps_the_cursor_on_the_same_step(session):
    runs = []
    session.subscribe("run_changed", lambda s: runs.append(s.run.output_ids))
    session.go(4)                                         # pick at step 1
    session.set_sampling(mode="sample", temperature=1.0, seed=3)
    assert len(runs) == 1
    assert session.frame.step == 1 and session.frame.kind == "pick"
    assert session.config.mode == "sample"


def test_cursor_falls_back_when_the_step_no_longer_exists(session):
    session.last()                                        # stop frame of step 2
    session.set_sampling(max_new_tokens=1)
    assert session.frame.kind == "stop" and session.run.finish_reason == "length"


def test_a_rejected_setting_changes_nothing(session):
    before = session.run
    with pytest.raises(SettingError, match="top_p"):
        session.set_sampling(top_p=1.5)
    assert session.run is before and session.config.top_p == 1.0


def test_force_reruns_the_rest_and_undo_restores(session):
    session.force(0, 4)                                   # 我爱 -> 你 instead of 学习
    assert session.run.output_ids[0] == 4 and session.run.steps[0].forced
    assert session.overrides == {0: 4}
    session.undo()
    assert session.run.output_ids == (3, 5, 6) and not session.run.steps[0].forced
    assert not session.can_undo


def test_unforce_goes_back_to_the_model_choice(session):
    session.force(1, 4)
    assert session.run.output_ids[:2] == (3, 4)
    session.unforce(1)
    assert session.run.output_ids == (3, 5, 6)
    session.undo()
    assert session.run.output_ids[:2] == (3, 4)


def test_prompt_change(session):
    session.set_prompt_text("我爱学习")
    assert session.run.prompt_ids == (1, 2, 3) and session.run.output_ids[0] == 5


def test_beam_mode_keeps_the_tree(session):
    session.set_sampling(mode="beam", num_beams=2)
    assert session.beam is not None and session.beam.num_beams == 2


def test_play_switches_content_in_place_and_keeps_subscribers(session):
    from explorer.lessons import default_lesson
    seen = []
    session.subscribe("run_changed", lambda s: seen.append(len(s.frames)))
    session.force(0, 4)
    default_lesson().play_in(session)
    assert seen[-1] == 10 and session.cursor == 0 and session.in_lesson
    assert not session.can_undo and session.overrides == {}
    assert session.frames[2].title["en"].startswith("Position 1's logits select")


@pytest.mark.parametrize("checked", [True, False])
def test_the_check_section_cites_a_recompute_only_when_one_was_run(checked):
    import re
    from explorer.session.narration import frame_explanation
    s = Session(load_teaching_model(), [1, 2], check_recompute=checked)
    texts = {f.kind: frame_explanation(f, s.run, s.model.vocab)["check"] for f in s.frames}
    for kind in ("prefill", "decode", "stop"):
        cited = re.search(r"\d\.\de[+-]\d\d", texts[kind])            # e.g. 1.8e-15
        assert bool(cited) == checked and ("explorer trace" in texts[kind]) == (not checked), texts[kind]
        assert "-." not in texts[kind]                  # never a bare "largest difference -."


def test_an_event_name_with_a_typo_is_refused_when_it_is_subscribed(session):
    with pytest.raises(ValueError, match="no event 'run_chagned': the events are run_changed, cursor_changed"):
        session.subscribe("run_chagned", lambda s: None)
    seen = []
    session.subscribe(SessionEvent.CURSOR_CHANGED, lambda s: seen.append(s.cursor))
    session.subscribe("cursor_changed", lambda s: seen.append(-s.cursor))    # a known name as a string still works
    session.next()
    assert seen == [1, -1]
