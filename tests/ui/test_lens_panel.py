"""The logit lens panel as a teacher uses it: it follows the player's Right/Left, frames the
selected token in every row, marks the commitment layer, and stays off for a table model."""

import numpy as np
from PySide6.QtCore import Qt

from explorer.core.models.teaching import load_teaching_model
from explorer.session import Session
from explorer.ui.panels.lens import LensPanel, shown_layers


def softmax64(z):
    e = np.exp(np.asarray(z, np.float64) - np.max(z))
    return e / e.sum()


def test_the_lens_follows_right_and_left(qtbot, window):
    panel = window.panels["lens"]
    window.docks["lens"].raise_()                                      # its tab in front of the beam tree's
    qtbot.waitUntil(panel.isVisible)
    s = window.session
    qtbot.keyClick(window, Qt.Key.Key_Home)
    assert panel.lens is None and not panel.has_content()              # the input frame: no forward yet
    seen = []
    for _ in range(len(s.frames) - 1):
        qtbot.keyClick(window, Qt.Key.Key_Right)
        step = s.step
        h = step.trace.layers[0].hidden[-1]                             # the one layer's residual stream
        want = softmax64(h @ s.model.params.w_out + s.model.params.b_out)   # the course's h·Wout + b
        assert panel.lens.step == step.index
        panel.grid.grab()                                                  # painted now
        (layer, texts), = panel.grid.drawn                             # one layer: one row
        best = int(np.argmax(want))
        assert layer == 0 and texts[0].startswith(f"{s.model.vocab.display_piece(best)} {want[best]:.2f}")
        assert s.model.vocab.display_piece(step.selected_id) in panel.commit_note.text()
        seen.append(panel.lens.step)
    qtbot.keyClick(window, Qt.Key.Key_Left)
    assert panel.lens.step == s.step.index == seen[-2]
    assert seen == sorted(seen) and seen[0] == 0 and seen[-1] == len(s.run.steps) - 1


def test_a_forced_token_is_framed_below_the_top_and_nothing_commits(qtbot):
    model = load_teaching_model()
    session = Session(model, [1, 2])
    session.force(0, 4)                                                # 你 instead of 学习
    session.first()
    session.next()                                                     # the Prefill of the forced run
    panel = LensPanel(session)
    qtbot.addWidget(panel)
    panel.resize(900, 300)
    panel.show()
    qtbot.waitExposed(panel)
    panel.grid.grab()                                                  # painted now
    (_, texts), = panel.grid.drawn
    assert texts[-1] == "你 #2 0.26" and texts[0].startswith("学习 0.47 · z = ") and "not top-1 at the last layer" in panel.commit_note.text()
    session.set_lang("zh")
    assert "最后一层不是第一" in panel.commit_note.text() and "原始logit lens" in panel.caption.text()


def test_many_layers_keep_the_first_and_the_last_around_a_gap():
    assert shown_layers(3, 10) == [0, 1, 2]
    assert shown_layers(30, 8) == [0, None, 24, 25, 26, 27, 28, 29]


def test_a_frame_naming_the_lens_shows_it_on_its_slide_at_body_type(qapp):
    from dataclasses import replace

    from explorer.export.spec import ExportSpec
    from explorer.ui.fonts import register_fonts
    from explorer.ui.slides.job import slide_pictures
    from explorer.ui.slides.layout import BODY_PX

    session = Session(load_teaching_model(), [1, 2])
    session.next()
    frame = replace(session.frame, panels=("lens", "timeline"))
    assert frame.slide_panels(has_layers=True, has_beam=False) == ("lens", "timeline")
    assert frame.slide_panels(has_layers=False, has_beam=False) == ("timeline",)    # a table model: no lens
    register_fonts()
    pictures = slide_pictures(session, ExportSpec(None, panel="lens"))
    try:
        (panel, rect, scale), = pictures.lay_out()
        assert panel.panel_id == "lens" and panel.on_slide and rect.width() > 1000
        assert panel.font().pointSizeF() * panel.logicalDpiY() / 72 * scale >= BODY_PX - 0.5
        panel.grid.grab()
        (layer, texts), = panel.grid.drawn
        assert layer == 0 and texts[0].startswith("学习 0.47 · z = ")
    finally:
        pictures.close()


def test_smollm2s_thirty_layers_end_on_paris(qtbot, smollm2):
    from explorer.core.decode.sampling import SamplingConfig
    session = Session(smollm2, smollm2.vocab.encode("The capital of France is"), SamplingConfig(max_new_tokens=1),
                      check_recompute=False)
    session.next()
    panel = LensPanel(session)
    qtbot.addWidget(panel)
    panel.resize(1100, 500)                                            # room for some of the 30 rows
    panel.show()
    qtbot.waitExposed(panel)
    panel.grid.grab()
    layers = [layer for layer, _ in panel.grid.drawn]
    assert layers[:2] == [0, None] and layers[-1] == 29 and len(layers) < 30   # the middle elided around a gap
    assert panel.grid.drawn[-1][1][0].startswith("␣Paris ")                   # the last layer's top-1
    assert f"from layer {panel.lens.commit_layer} on" in panel.commit_note.text() and "float32" in panel.caption.text()
