"""The API parameters in the window: folded until asked for, each control reruns live, the
distribution chart grows the stage's row (checked against the peers' formulas), a typed
logit bias takes pieces, and a bad one is named in red."""

import numpy as np
import pytest
from PySide6.QtCore import Qt

from explorer.core.models.teaching import load_teaching_model
from explorer.session import Session
from explorer.ui.panels.controls import SamplingControls
from explorer.ui.panels.distribution import DistributionPanel
from teacher import chart_rows, column_ids


@pytest.fixture
def session():
    session = Session(load_teaching_model(), [1, 2])
    session.set_sampling(mode="sample", max_new_tokens=4)
    return session


def shown(qtbot, widget, width, height):
    qtbot.addWidget(widget)
    widget.resize(width, height)
    widget.show()
    return widget


@pytest.fixture
def controls(qtbot, session):
    return shown(qtbot, SamplingControls(session), 360, 900)


@pytest.fixture
def panel(qtbot, session):
    return shown(qtbot, DistributionPanel(session), 900, 800)


def go_to_pick(session, step):
    session.go(next(i for i, f in enumerate(session.frames) if f.kind == "pick" and f.step == step))


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def test_the_api_group_is_folded_until_asked_for(qtbot, controls):
    assert not controls.api_group.isVisible() and controls.api_toggle.text() == "API parameters"
    qtbot.mouseClick(controls.api_toggle, Qt.MouseButton.LeftButton)
    assert controls.api_group.isVisible() and controls.slider("presence_penalty").isVisible()


def test_moving_presence_grows_its_row_with_openais_numbers(qtbot, controls, panel, session):
    """OpenAI: logit - presence * (count in the output > 0), the output only."""
    qtbot.mouseClick(controls.api_toggle, Qt.MouseButton.LeftButton)
    go_to_pick(session, 1)
    assert "presence_penalty" not in chart_rows(panel)
    for ticks in (50, 120, 200):
        controls.slider("presence_penalty").setValue(ticks)
        presence = ticks / 100
        assert session.config.presence_penalty == presence
        step = session.run.steps[1]
        logits = np.array(step.trace.last_logits, dtype=np.float64)
        out = np.zeros(logits.size)
        out[list(session.run.output_ids[:1])] = 1
        expected = softmax(logits - presence * out)
        np.testing.assert_allclose(chart_rows(panel)["presence_penalty"].values, expected[column_ids(panel)], atol=1e-12)
        assert chart_rows(panel)["presence_penalty"].title.endswith(f"−{presence:g} once")
    assert "presence" in controls.order_text.text() and controls.api_toggle.text() == "API parameters (1 on)"
    assert "count the output only" in panel._off.text()
    controls.slider("presence_penalty").setValue(0)
    assert "presence_penalty" not in chart_rows(panel)


def test_typical_p_slider_removes_what_the_formula_says(qtbot, controls, panel, session):
    """Hugging Face's typical: rank by |-log p - H|, keep the smallest prefix reaching the mass."""
    go_to_pick(session, 0)
    controls.spin("typical_p").setValue(0.5)
    probs = softmax(np.array(session.run.steps[0].trace.last_logits, dtype=np.float64))
    shifted = np.abs(-np.log(probs) - (-(probs * np.log(probs)).sum()))
    order = np.argsort(shifted, kind="stable")
    keep = order[:int((np.cumsum(probs[order]) < 0.5).sum()) + 1]
    row = chart_rows(panel)["typical_p"]
    kept = {int(i) for i, role in zip(column_ids(panel), row.roles) if role != "removed"}
    assert kept == {int(i) for i in keep}


def test_a_logit_bias_takes_pieces_and_a_bad_one_is_named(qtbot, controls, panel, session):
    go_to_pick(session, 0)
    controls.bias_edit.setText("学习:-100")
    qtbot.keyClick(controls.bias_edit, Qt.Key.Key_Return)
    assert session.config.logit_bias == ((3, -100.0),) and "logit_bias" in chart_rows(panel)
    assert 3 not in session.run.output_ids
    controls.bias_edit.setText("学:-100")
    qtbot.keyClick(controls.bias_edit, Qt.Key.Key_Return)
    assert controls.error_label.isVisibleTo(controls) and "'学' is not one token" in controls.error_label.text()
    assert session.config.logit_bias == ((3, -100.0),)                          # nothing changed
    controls.bias_edit.setText("")
    qtbot.keyClick(controls.bias_edit, Qt.Key.Key_Return)
    assert session.config.logit_bias == () and "logit_bias" not in chart_rows(panel)
