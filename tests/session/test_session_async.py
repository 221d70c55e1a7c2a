"""Session.prepare / apply: a change computed apart from the session (another thread in the
window), installed later; asked-for changes coalesce; stale results are refused. Qt-free."""

import threading

import pytest

from explorer.core.errors import SettingError
from explorer.core.decode.generate import generate
from explorer.core.decode.sampling import SamplingConfig
from explorer.core.models.teaching import load_teaching_model
from explorer.session import Session


@pytest.fixture
def session():
    return Session(load_teaching_model(), [1, 2])


def state(s: Session):
    return (s.run, s.config, s.frames, s.cursor, s.prompt_ids, s.model, s.overrides, s.can_undo, s.behind)


def test_generate_reports_every_step():
    seen = []
    run = generate(load_teaching_model(), [1, 2], SamplingConfig(max_new_tokens=8), on_step=seen.append)
    assert seen == [1, 2, 3] and len(run.steps) == 3


def test_prepare_changes_nothing_and_apply_installs_it(session):
    events = []
    session.subscribe("run_changed", lambda s: events.append(s.run))
    session.go(4)                                              # pick of step 1
    before = state(session)
    pending = session.prepare(config={"mode": "sample", "temperature": 1.0, "seed": 3})
    assert state(session) == before and events == []
    assert pending.user.config == {"mode": "sample", "temperature": 1.0, "seed": 3}
    assert session.apply(pending) is True
    assert len(events) == 1 and session.config.mode == "sample"
    assert session.frame.step == 1 and session.frame.kind == "pick"      # the cursor stayed on its step
    twin = Session(load_teaching_model(), [1, 2])
    twin.set_sampling(mode="sample", temperature=1.0, seed=3)
    assert session.run.output_ids == twin.run.output_ids


def test_prepare_runs_on_another_thread(session):
    out = {}
    worker = threading.Thread(target=lambda: out.setdefault("p", session.prepare(prompt=(1, 2, 3))))
    worker.start()
    worker.join(30)
    assert session.prompt_ids == (1, 2)
    session.apply(out["p"])
    assert session.prompt_ids == (1, 2, 3) and session.run.prompt_ids == (1, 2, 3)


def test_a_stale_pending_is_refused(session):
    pending = session.prepare(config={"max_new_tokens": 1})
    session.set_sampling(top_k=2)                              # installed first
    before = state(session)
    assert session.apply(pending) is False
    assert state(session) == before and session.config.top_k == 2 and session.config.max_new_tokens == 8


def test_a_rejected_change_raises_in_prepare_and_changes_nothing(session):
    before = state(session)
    with pytest.raises(SettingError, match="override step 9"):
        session.prepare(overrides={9: 3})
    assert state(session) == before


def test_cancel_and_progress_reach_generate(session):
    progress = []
    pending = session.prepare(config={"max_new_tokens": 5, "mode": "sample", "seed": 1},
                              prompt=(1, 2), cancel=lambda: len(progress) >= 2,
                              on_step=lambda done, total: progress.append((done, total)))
    assert progress == [(1, 5), (2, 5)] and pending.cancelled
    session.apply(pending)
    assert session.run.finish_reason == "cancelled" and session.run.incomplete
    assert len(session.run.output_ids) == 2


def test_with_a_runner_changes_are_asked_for_and_coalesce(session):
    calls = []
    session.runner = calls.append
    shown = session.run
    session.set_sampling(mode="sample", seed=5)
    session.set_sampling(temperature=0.7)
    session.set_sampling(temperature=1.3)                      # a slider drag: only the last counts
    session.force(0, 4)
    assert calls == [session] * 4
    assert session.run is shown and session.behind and session.config.temperature == 1.0
    assert session.can_undo                                     # the asked-for force can be undone
    pending = session.prepare()                                 # what the runner does, off the UI thread
    assert session.apply(pending) and not session.behind
    assert (session.config.mode, session.config.seed, session.config.temperature) == ("sample", 5, 1.3)
    assert session.overrides == {0: 4} and session.run.output_ids[0] == 4
    session.undo()
    assert session.overrides == {0: 4} and session.behind       # asked for, not shown yet
    session.apply(session.prepare())
    assert session.overrides == {} and not session.can_undo


def test_a_change_asked_for_during_a_computation_stays_asked_for(session):
    session.runner = lambda _s: None
    session.set_sampling(temperature=0.5)
    pending = session.prepare()                                 # the worker starts on temperature 0.5
    session.set_sampling(top_k=2)                               # asked for meanwhile
    assert session.apply(pending)
    assert session.config.temperature == 0.5 and session.config.top_k == 0 and session.behind
    session.apply(session.prepare())                            # the next round computes the rest
    assert (session.config.temperature, session.config.top_k, session.behind) == (0.5, 2, False)


def test_discarding_requests_goes_back_to_what_is_shown(session):
    events = []
    session.subscribe("run_changed", lambda s: events.append(1))
    session.runner = lambda _s: None
    session.set_prompt_ids([1, 2, 3])
    assert session.behind and session.prompt_ids == (1, 2)
    session.discard_requests()
    assert not session.behind and session.prompt_ids == (1, 2) and events == [1]
    pending = session.prepare()
    assert pending.user.prompt is None


def test_without_a_runner_a_change_is_computed_at_once_even_after_asking(session):
    session.runner = lambda _s: None
    session.set_sampling(temperature=0.5)
    in_flight = session.prepare()
    session.runner = None                                       # e.g. back to the teaching model
    session.set_sampling(top_k=2)                               # builds on what was asked for
    assert (session.config.temperature, session.config.top_k, session.behind) == (0.5, 2, False)
    assert session.apply(in_flight) is False                    # the older result is stale


def test_set_model_can_turn_the_recompute_check_off(session):
    assert session.check_recompute
    session.set_model(load_teaching_model(), prompt_ids=[1, 2], check_recompute=False)
    assert not session.check_recompute and session.run.max_recompute_diff is None
