"""The timeline's step strip keeps the current step in view on long runs, and its chips
are clicked where they are drawn."""

import numpy as np
from PySide6.QtCore import QPoint, Qt

from explorer.core.models.decoder import DecoderConfig, DecoderModel, random_params
from explorer.core.decode.sampling import SamplingConfig
from explorer.core.tokens.vocab import Vocabulary
from explorer.session import Session
from explorer.ui.panels.timeline import TimelinePanel
from teacher import chips_in_view, current_chip, drawn_texts, table_texts


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
    strip = panel.strip
    assert len(chips_in_view(strip)) < 10                           # far more chips than room
    for index in range(len(session.frames)):
        session.go(index)
        if session.frame.step is not None:                          # a step's chip is the current one
            assert current_chip(strip) in chips_in_view(strip), index
    assert chips_in_view(strip)[-1] == "Stop: length" == current_chip(strip)
    panel.resize(4000, 300)                                         # room for every chip
    qtbot.waitUntil(lambda: strip.width() > 3000)
    labels = chips_in_view(strip)
    assert len(labels) == 31 and labels[0] == "Prefill" and labels[-1] == "Stop: length"   # Decode 1..29 between
    panel.resize(400, 300)
    qtbot.waitUntil(lambda: len(chips_in_view(strip)) < 10)
    session.first()
    assert chips_in_view(strip)[0] == "Prefill" and current_chip(strip) is None   # before any step: from the start


def test_a_click_on_a_slid_chip_goes_to_its_step_and_the_mark_goes_nowhere(qtbot):
    session = long_session()
    panel = shown(qtbot, session, 400)
    session.last()
    strip = panel.strip
    first_seen = next(d for d in drawn_texts(strip) if d.text not in ("›", "…"))     # right of the "…" mark
    qtbot.mouseClick(strip, Qt.MouseButton.LeftButton, pos=first_seen.center())
    assert session.frame.kind == "decode" and f"Decode {session.frame.step}" == first_seen.text
    frame = session.cursor
    qtbot.mouseClick(strip, Qt.MouseButton.LeftButton, pos=QPoint(2, strip.height() // 2))   # on "…"
    assert session.cursor == frame


def test_a_long_prompts_cells_keep_the_ends_of_the_sequences(qtbot):
    session = long_session(new_tokens=2, prompt=range(14))           # 14 tokens at positions 0..13
    panel = shown(qtbot, session, 900)
    session.go(1)                                                     # Prefill
    step, fed, positions, cache_after = table_texts(panel.table)[0][:4]
    assert step == "Prefill"
    assert fed == "t0 t1 t2 t3 t4 …(+4)… t9 t10 t11 t12 t13  [0, 1, 2, 3, 4, …(+4)…, 9, 10, 11, 12, 13]"
    assert positions == "0, 1, 2, 3, 4, …(+4)…, 9, 10, 11, 12, 13"
    assert cache_after.endswith("t11 t12 t13") and "…(+4)…" in cache_after
