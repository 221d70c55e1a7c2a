"""The timeline's step strip keeps the current step in view on long runs, and its chips
are clicked where they are drawn."""

import numpy as np
from PySide6.QtCore import QPoint, Qt

from explorer.core.models.decoder import DecoderConfig, DecoderModel, random_params
from explorer.core.decode.sampling import SamplingConfig
from explorer.core.tokens.vocab import Vocabulary
from explorer.session import Session
from explorer.ui.panels.text_line import TextLine
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


def test_the_window_shows_the_text_so_far_as_the_teacher_steps_through_the_frames(qtbot, window):
    """wo-ai-to-eos: 我爱, then 学习 at the first pick, ！ at the second; the end token adds no text."""
    line = window.panels["timeline"].findChild(TextLine, "text_so_far")
    qtbot.keyClick(window, Qt.Key.Key_Home)
    seen = [line.text()]
    for _ in range(len(window.session.frames) - 1):
        qtbot.keyClick(window, Qt.Key.Key_Right)
        seen.append(line.text())
    assert seen == ["Text so far: 我爱"] * 2 + ["Text so far: 我爱学习"] * 2 + ["Text so far: 我爱学习！"] * 6
    assert line.isVisibleTo(window) and "我爱<b>学习！</b>" in line.toolTip()
    drawn = "".join(d.text for d in drawn_texts(line))
    assert drawn == "Text so far: 我爱学习！"


def test_a_long_text_keeps_its_end_and_reasoning_is_boxed_in_italics(qtbot):
    from explorer.lessons import load_lesson
    lesson = load_lesson("reasoning-budget")
    session = lesson.build_session()
    panel = shown(qtbot, session, 420)
    names = [name for name, _ in lesson.scenarios]
    session.go(next(i for i, (plan, f) in enumerate(zip(lesson.plans, session.frames))   # the 32-token budget:
                    if names[plan.scenario] == "budget-32" and f.kind == "stop"))        # reasoning, then 答：51。
    line = panel.text_line
    assert line.text() == "Text so far (reasoning boxed): 问：17×3=？17×3=10×3+7×3=30+21=51答：51。"
    kinds = [(kind, text) for kind, text, _ in line.fitted(line.width() - 8)]
    assert kinds[:2] == [("label", "Text so far (reasoning boxed): "), ("muted", "…")]
    assert kinds[-1] == ("answer", "答：51。") and kinds[-2][0] == "reasoning" and kinds[-2][1].endswith("=51")
    drawn = "".join(d.text for d in drawn_texts(line))
    assert drawn == "".join(text for _, text in kinds)              # what is painted: the end of the text
    assert line.sizeHint().width() > line.width()
    assert "<i>[17×3=10×3+7×3=30+21=51]</i>" in line.toolTip()
