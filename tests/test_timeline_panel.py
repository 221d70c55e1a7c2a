"""The timeline's step strip keeps the current step in view on long runs, and its chips
are clicked where they are drawn."""

import numpy as np
from PySide6.QtCore import QPoint, Qt

from explorer.core.decoder import DecoderConfig, DecoderModel, random_params
from explorer.core.sampling import SamplingConfig
from explorer.core.vocab import Vocabulary
from explorer.session import Session
from explorer.ui.timeline import TimelinePanel


def long_session(new_tokens=30, prompt=(1, 2)):
    """A model without an end token: the run always takes `new_tokens` steps."""
    config = DecoderConfig(vocab_size=20, d_model=8, n_layers=1, n_heads=1, n_kv_heads=1, head_dim=8, d_ff=8)
    model = DecoderModel(config, random_params(config, np.random.default_rng(0)),
                         Vocabulary(tuple(f"t{i}" for i in range(20))), name="long")
    return Session(model, list(prompt), SamplingConfig(max_new_tokens=new_tokens), check_recompute=False)


def shown(qtbot, session, width):
    panel = TimelinePanel(session)
    qtbot.addWidget(panel)
    panel.resize(width, 300)
    panel.show()
    qtbot.waitExposed(panel)
    return panel


def test_the_current_step_stays_in_view_on_a_long_run(qtbot):
    session = long_session()
    panel = shown(qtbot, session, 400)
    labels = panel.chip_labels()
    assert len(labels) == 31 and labels[-1] == "Stop: length"      # Prefill, Decode 1..29, the stop
    assert len(panel.chips_in_view()) < 10                          # far more chips than room
    for index in range(len(session.frames)):
        session.go(index)
        if panel.current_chip() is not None:
            assert panel.current_chip() in panel.chips_in_view(), index
    assert panel.chips_in_view()[-1] == "Stop: length"
    session.first()
    assert panel.chips_in_view()[0] == "Prefill"                   # before any step: from the start


def test_a_click_on_a_slid_chip_goes_to_its_step_and_the_mark_goes_nowhere(qtbot):
    session = long_session()
    panel = shown(qtbot, session, 400)
    session.last()
    strip = panel.strip
    rects = strip.chip_rects()
    first_seen = panel.chips_in_view()[0]
    target = panel.chip_labels().index(first_seen)
    qtbot.mouseClick(strip, Qt.MouseButton.LeftButton, pos=rects[target].center().toPoint())
    assert session.frame.step == target and session.frame.kind != "stop"
    frame = session.cursor
    qtbot.mouseClick(strip, Qt.MouseButton.LeftButton, pos=QPoint(2, strip.height() // 2))   # on "…"
    assert session.cursor == frame


def test_a_long_prompts_cells_keep_the_ends_of_the_sequences(qtbot):
    session = long_session(new_tokens=2, prompt=range(14))           # 14 tokens at positions 0..13
    panel = shown(qtbot, session, 900)
    session.go(1)                                                     # Prefill
    step, fed, positions, cache_after = panel.row_texts()[0][:4]
    assert step == "Prefill"
    assert fed == "t0 t1 t2 t3 t4 …(+4)… t9 t10 t11 t12 t13  [0, 1, 2, 3, 4, …(+4)…, 9, 10, 11, 12, 13]"
    assert positions == "0, 1, 2, 3, 4, …(+4)…, 9, 10, 11, 12, 13"
    assert cache_after.endswith("t11 t12 t13") and "…(+4)…" in cache_after
