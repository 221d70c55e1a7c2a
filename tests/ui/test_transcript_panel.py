"""The transcript panel as a teacher uses it: the text follows the player's Right/Left with
the frame's token outlined, its details (hover or the line under the text) give the
probability and the surprisal read from the step record, clicking an alternative forces it
(Ctrl+Z takes it back), and reasoning tokens are marked apart."""

import math

from PySide6.QtCore import Qt
from PySide6.QtGui import QHelpEvent
from PySide6.QtWidgets import QApplication, QToolTip

from explorer.core.decode.sampling import SamplingConfig
from explorer.core.models.teaching import load_teaching_model
from explorer.lessons import load_lesson
from explorer.session import Session
from explorer.ui.panels.transcript import TranscriptPanel


def numbers(step, vocab):
    """What the details must say of the token `step` chose: its final probability and -log2 p."""
    p = float(step.distribution.stages[-1].probs[step.selected_id])
    return f"p = {p:.3f}", f"surprisal {-math.log2(p):.2f} bits", vocab.display_piece(step.selected_id)


def shown_panel(qtbot, session, size=(1000, 400)):
    panel = TranscriptPanel(session)
    qtbot.addWidget(panel)
    panel.resize(*size)
    panel.show()
    qtbot.waitExposed(panel)
    panel.text.grab()                                                   # painted now
    return panel


def at_the_start(qtbot, window):
    """The window's transcript in front of its tab group, the player on the first frame."""
    panel = window.panels["transcript"]
    window.docks["transcript"].raise_()
    qtbot.waitUntil(panel.isVisible)
    qtbot.keyClick(window, Qt.Key.Key_Home)
    return panel, window.session


def test_the_transcript_follows_right_and_left_and_outlines_the_frames_token(qtbot, window):
    panel, s = at_the_start(qtbot, window)
    n_prompt = len(s.run.prompt_ids)
    assert panel.text.current is None and "No token chosen yet" in panel.details.text()
    seen = {}                                                            # frame index -> token outlined
    for _ in range(len(s.frames) - 1):
        qtbot.keyClick(window, Qt.Key.Key_Right)
        frame, vocab = s.frame, s.model.vocab
        assert [t.piece for t in panel.text.tokens] == [vocab.display_piece(i) for i in frame.visible_ids]
        newest = len(frame.visible_ids) - 1
        seen[s.cursor] = panel.text.current
        if newest < n_prompt:                                            # the Prefill: nothing chosen on screen
            assert panel.text.current is None
            continue
        assert panel.text.current == newest
        step = s.run.steps[newest - n_prompt]                            # the output's k-th token: step k chose it
        prob, bits, piece = numbers(step, vocab)
        text = panel.details.text()
        assert text.startswith(f"{piece} (step {step.index}") and prob in text and bits in text
        panel.text.grab()
        assert newest in [i for i, _ in panel.text.boxes]                # painted, outlined
    assert len(set(seen.values()) - {None}) == len(s.run.steps)         # every chosen token outlined in turn
    for _ in range(3):
        qtbot.keyClick(window, Qt.Key.Key_Left)
        assert panel.text.current == seen[s.cursor] and len(panel.text.tokens) == len(s.frame.visible_ids)


def test_clicking_an_alternative_forces_it_and_ctrl_z_takes_it_back(qtbot, window):
    panel, s = at_the_start(qtbot, window)
    qtbot.keyClick(window, Qt.Key.Key_Right)
    qtbot.keyClick(window, Qt.Key.Key_Right)                             # the first pick: step 0's token
    own = s.run.steps[0].selected_id
    button = next(b for b in panel.buttons if b.isVisible() and b.isEnabled())
    clicked = int(button.property("token_id"))
    assert clicked != own and s.model.vocab.display_piece(clicked) in button.text()
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: s.run.steps[0].selected_id == clicked)
    assert s.run.steps[0].forced
    qtbot.keyClick(window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: s.run.steps[0].selected_id == own)
    assert not s.run.steps[0].forced


def test_the_tooltip_and_a_click_give_a_tokens_numbers(qtbot):
    session = Session(load_teaching_model(), [1, 2], SamplingConfig(mode="sample", temperature=1.5, seed=3))
    session.last()
    panel = shown_panel(qtbot, session)
    boxes = dict(panel.text.boxes)
    step = session.run.steps[0]
    prob, bits, piece = numbers(step, session.model.vocab)
    centre = boxes[2].center().toPoint()                                  # the first chosen token, after 我 爱
    event = QHelpEvent(QHelpEvent.Type.ToolTip, centre, panel.text.mapToGlobal(centre))
    QApplication.sendEvent(panel.text, event)
    tip = QToolTip.text()
    assert tip.startswith(f"{piece} (step 0") and prob in tip and bits in tip and "top 5:" in tip
    qtbot.mouseClick(panel.text, Qt.MouseButton.LeftButton, pos=boxes[0].center().toPoint())   # a prompt token
    assert "part of the prompt" in panel.details.text() and not any(b.isVisible() for b in panel.buttons)
    qtbot.mouseClick(panel.text, Qt.MouseButton.LeftButton, pos=centre)
    assert prob in panel.details.text() and bits in panel.details.text()
    session.set_lang("zh")
    assert f"意外度 {bits.split()[1]} 比特" in panel.details.text() and "被选中时的概率" not in panel.details.text()


def test_reasoning_tokens_are_marked_apart(qtbot):
    lesson = load_lesson("reasoning-budget")
    session = lesson.build_session()
    budget_32 = [name for name, _ in lesson.scenarios].index("budget-32")
    session.go(next(i for i, plan in enumerate(lesson.plans)                 # its stop: </think>, then the answer
                    if plan.scenario == budget_32 and session.frames[i].kind == "stop"))
    panel = shown_panel(qtbot, session, (1200, 400))
    tokens = panel.text.tokens
    vocab = session.model.vocab
    opening, closing = vocab.reasoning_markers
    first = next(i for i, t in enumerate(tokens) if t.id == opening)
    end = next(i for i, t in enumerate(tokens) if t.id == closing)
    assert all(t.reasoning for t in tokens[first:end + 1]) and not any(t.reasoning for t in tokens[end + 1:])
    assert not any(t.reasoning for t in tokens[:first])
    panel.pin(first + 1)
    assert ", reasoning)" in panel.details.text()
    panel.pin(end + 1)
    assert "reasoning" not in panel.details.text()


def test_a_frame_naming_the_transcript_shows_it_on_its_slide_without_buttons(qapp):
    from explorer.export.spec import ExportSpec
    from explorer.ui.fonts import register_fonts
    from explorer.ui.slides.job import slide_pictures

    session = Session(load_teaching_model(), [1, 2])
    session.last()
    register_fonts()
    pictures = slide_pictures(session, ExportSpec(None, panel="transcript"))
    try:
        (panel, rect, _), = pictures.lay_out()
        assert panel.panel_id == "transcript" and panel.on_slide and rect.width() > 1000
        assert panel.force_row.isHidden() and "p = " in panel.details.text()
        panel.text.grab()
        assert len(panel.text.boxes) == len(session.frame.visible_ids)
    finally:
        pictures.close()


def test_smollm2_sampled_hot_shows_each_steps_surprisal_and_a_long_text_keeps_its_end(qtbot, smollm2):
    session = Session(smollm2, smollm2.vocab.encode("The capital of France is"),
                      SamplingConfig(mode="sample", temperature=1.5, seed=1, max_new_tokens=24), check_recompute=False)
    session.last()
    panel = shown_panel(qtbot, session, (1100, 400))
    n_prompt = len(session.run.prompt_ids)
    assert sorted(i for i, _ in panel.text.boxes) == list(range(n_prompt + 24))     # room for all of it
    for step in session.run.steps:
        panel.pin(n_prompt + step.index)
        prob, bits, piece = numbers(step, smollm2.vocab)
        assert panel.details.text().startswith(piece) and bits in panel.details.text()
    panel.resize(300, 200)                                              # a narrow, short tab
    panel.text.grab()
    painted = sorted(i for i, _ in panel.text.boxes)
    assert painted[-1] == n_prompt + 23 and 0 not in painted           # the newest lines, the start elided

