"""The teacher's B on a real model is computed off the UI thread: the A/B view says so with
B's steps done, then draws B; a change of A meanwhile stops the stale B and computes the new
one; Cancel (or Clear B) stops it and the window stays usable. Each B is checked against a
Run generated directly with B's settings. No timer is asserted: the tests wait for what the
panel signals."""

from __future__ import annotations

import threading

from PySide6.QtCore import Qt

from explorer.core.decode.generate import generate
from teacher import wait_idle

LONG = 180_000           # ms: a generous bound for a slow, shared machine, never a speed claim


def type_b(qtbot, panel, text: str) -> None:
    panel.edit.clear()
    qtbot.keyClicks(panel.edit, text)
    qtbot.keyClick(panel.edit, Qt.Key.Key_Return)


def held_jobs(panel, after_step: int):
    """The panel's background start, with B's worker waiting after `after_step` steps until
    the returned event is set (no race with a fast machine)."""
    start, slow, failed = panel._jobs
    go, started = threading.Event(), []

    def held_start(fn, done, fail, progress):
        def held(report):
            def step(n, total):
                report(n, total)
                if n == after_step:
                    go.wait(60)
            return fn(step)
        started.append(fn)
        return start(held, done, fail, progress)
    panel.compute_big_b_with(held_start, slow, failed)
    return go, started


def expected_b(session, **changes):
    a = session.scenario
    return generate(a.model, a.prompt_ids, a.config.with_(**changes), overrides=dict(a.overrides),
                    check_recompute=False)


def test_b_on_a_real_model_is_computed_off_the_ui_thread_and_then_drawn(qtbot, real):
    s, panel = real.session, real.panels["versus"]
    real.docks["versus"].raise_()
    s.set_sampling(mode="sample", seed=5, temperature=0.8)
    wait_idle(qtbot, real)
    go, started = held_jobs(panel, after_step=2)
    type_b(qtbot, panel, "temperature=1.6, seed=9")
    # the UI thread returned at once: B is computing, and the caption says how far it is
    qtbot.waitUntil(lambda: "step 2 of 8" in panel.caption.text(), timeout=LONG)
    assert panel.caption.text().startswith(f"Computing B on {s.model.name}")
    assert panel.shown is None and panel.bars[0].rows == [] and panel.has_content()
    qtbot.keyClick(real, Qt.Key.Key_End)                     # the keys still step A meanwhile
    assert s.cursor == len(s.frames) - 1
    go.set()
    qtbot.waitUntil(lambda: panel.shown is not None and panel.shown.comparison is not None, timeout=LONG)
    b = panel.shown.comparison.b
    want = expected_b(s, temperature=1.6, seed=9)
    assert b.output_ids == want.output_ids and b.finish_reason == want.finish_reason
    assert "temperature 1.6" in panel.caption.text() and len(started) == 1 and real.errors == []
    # stepping back and forth takes the B computed once: nothing more starts
    qtbot.keyClick(real, Qt.Key.Key_Home)
    qtbot.keyClick(real, Qt.Key.Key_Right)
    assert panel.shown.comparison.b is b and len(started) == 1


def test_a_change_of_a_while_b_computes_stops_the_stale_b_and_computes_the_new_one(qtbot, real):
    s, panel, controls = real.session, real.panels["versus"], real.panels["controls"]
    real.docks["versus"].raise_()
    s.set_sampling(mode="sample", seed=5)
    wait_idle(qtbot, real)
    go, started = held_jobs(panel, after_step=1)
    type_b(qtbot, panel, "seed=12")
    qtbot.waitUntil(lambda: "step 1 of" in panel.caption.text(), timeout=LONG)
    controls.max_new_spin.setValue(5)                        # A changes: B must follow it
    wait_idle(qtbot, real)
    go.set()
    qtbot.waitUntil(lambda: panel.shown is not None and panel.shown.comparison is not None
                    and len(panel.shown.comparison.a.steps) == len(s.run.steps), timeout=LONG)
    c = panel.shown.comparison
    assert c.a is s.run and s.config.max_new_tokens == 5 and len(started) == 2
    assert c.b.output_ids == expected_b(s, seed=12).output_ids and len(c.b.steps) <= 5
    assert real.errors == []


def test_cancel_stops_b_and_enter_computes_it_again(qtbot, real):
    s, panel = real.session, real.panels["versus"]
    real.docks["versus"].raise_()
    s.set_sampling(mode="sample", seed=5)
    wait_idle(qtbot, real)
    go, started = held_jobs(panel, after_step=1)
    type_b(qtbot, panel, "temperature=1.3")
    qtbot.waitUntil(lambda: "step 1 of" in panel.caption.text(), timeout=LONG)
    real.cancel_work()                                       # what the status bar's Cancel calls
    go.set()
    qtbot.waitUntil(lambda: panel._task is None, timeout=LONG)
    assert panel.shown is not None and panel.shown.comparison is None
    assert panel.caption.text() == "B was cancelled. Press Enter in the B line to compute it again."
    qtbot.keyClick(real, Qt.Key.Key_Left)                    # stepping does not start it again
    assert len(started) == 1 and panel.shown.comparison is None
    qtbot.keyClick(panel.edit, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: panel.shown is not None and panel.shown.comparison is not None, timeout=LONG)
    assert panel.shown.comparison.b.output_ids == expected_b(s, temperature=1.3).output_ids
    assert len(started) == 2 and real.errors == []


def test_a_failure_computing_b_is_shown_and_not_tried_again(qtbot, real, monkeypatch):
    s, panel = real.session, real.panels["versus"]
    real.docks["versus"].raise_()
    start, slow, failed = panel._jobs
    calls = []

    def broken(fn, done, fail, progress):
        def boom(report):
            calls.append(1)
            raise RuntimeError("the disk went away")
        return start(boom, done, fail, progress)
    panel.compute_big_b_with(broken, slow, failed)
    type_b(qtbot, panel, "seed=4")
    qtbot.waitUntil(lambda: real.errors != [], timeout=LONG)
    assert real.errors[-1].startswith("RuntimeError: the disk went away")
    qtbot.waitUntil(lambda: panel.caption.text().startswith("B could not be computed: RuntimeError"), timeout=LONG)
    qtbot.keyClick(real, Qt.Key.Key_Left)
    qtbot.keyClick(real, Qt.Key.Key_Right)
    assert len(calls) == 1 and s.versus_spec is not None
