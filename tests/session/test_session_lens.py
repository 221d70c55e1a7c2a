"""The session's logit lens: the one of the step on screen, computed once per step shown."""

import numpy as np

from explorer.core.models.teaching import load_teaching_model
from explorer.session import Session
from explorer.session.lens import frame_lens


def test_the_lens_is_the_one_of_the_frame_on_screen():
    model = load_teaching_model()
    s = Session(model, [1, 2])
    assert s.frame.kind == "input" and frame_lens(s) is None                  # no forward yet
    seen = []
    while not s.at_end:
        s.next()
        lens = frame_lens(s)
        assert lens.step == s.frame.step and lens.selected_id == s.step.selected_id
        h = s.step.trace.layers[0].hidden[-1]
        z = h @ model.params.w_out + model.params.b_out                  # the course's h·Wout
        assert lens.ids[0][0] == int(np.argmax(z))
        seen.append(lens)
    assert [lens.step for lens in seen] == [0, 0, 1, 1, 2, 2, 2]       # forward, pick, ..., stop
    assert seen[0] is seen[1]                                          # the pick frame reuses its step's lens
    s.first()
    s.next()
    assert frame_lens(s) is seen[0]                                           # stepping back does not recompute


def test_a_rerun_gives_the_new_steps_lens():
    s = Session(load_teaching_model(), [1, 2])
    s.next()
    before = frame_lens(s)
    s.force(0, 4)
    assert frame_lens(s) is not before and frame_lens(s).selected_id == 4 and frame_lens(s).commit_layer is None


def test_a_slider_rerun_on_the_same_forwards_reuses_the_lens():
    s = Session(load_teaching_model(), [1, 2])
    s.next()
    before = frame_lens(s)
    s.set_sampling(top_k=3)                        # a new Run: the same forwards, the same greedy picks
    assert s.step.trace is not None and frame_lens(s) is before
