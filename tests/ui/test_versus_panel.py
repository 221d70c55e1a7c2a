"""The A/B panel as a teacher uses it: type how B differs, step with Right/Left and both runs
follow (both timelines, both distributions, both transcripts at the frame's step), the first
divergence marked on both rows; a bad B line is named and B kept; a pinned model with another
tokenizer is refused with the reason; a lesson frame's comparison is drawn as declared."""

from PySide6.QtCore import Qt

from explorer.core.decode.sampling import SamplingConfig
from explorer.core.models.teaching import load_teaching_model
from explorer.lessons.models import logits_model
from explorer.lessons.schema import parse_lesson
from explorer.session import Session
from explorer.ui.panels.versus import VersusPanel


def shown_panel(qtbot, session, size=(1100, 520)):
    panel = VersusPanel(session)
    qtbot.addWidget(panel)
    panel.resize(*size)
    panel.show()
    qtbot.waitExposed(panel)
    panel.strip.grab()
    return panel


def type_b(qtbot, panel, text: str) -> None:
    panel.edit.clear()
    qtbot.keyClicks(panel.edit, text)
    qtbot.keyClick(panel.edit, Qt.Key.Key_Return)


def test_typing_b_and_stepping_moves_both_runs_together(qtbot, window):
    s = window.session
    s.set_sampling(mode="sample", seed=3, temperature=1.0)
    panel = window.panels["versus"]
    window.docks["versus"].raise_()
    qtbot.waitUntil(panel.isVisible)
    type_b(qtbot, panel, "temperature=3, seed=11")
    assert not panel.error.isVisible()
    assert "temperature 3" in panel.caption.text() and "seed 11" in panel.caption.text()
    qtbot.keyClick(window, Qt.Key.Key_Home)
    c = panel.shown.comparison
    vocab = s.model.vocab
    for _ in range(len(s.frames) - 1):
        qtbot.keyClick(window, Qt.Key.Key_Right)
        c = panel.shown.comparison
        assert c.a is s.run                                         # A is what the other panels show
        step = s.frame.step
        assert panel.strip.current == step
        panel.strip.grab()
        assert panel.strip.drawn["A"] == [vocab.display_piece(st.selected_id) for st in c.a.steps] + \
            ["—"] * (len(panel.strip.drawn["A"]) - len(c.a.steps))
        for col, run in enumerate((c.a, c.b)):                      # both distributions at the frame's step
            if step < len(run.steps):
                st = run.steps[step]
                top = [int(t) for t in st.distribution.top(5)]
                top += [] if st.selected_id in top else [st.selected_id]       # a token drawn from further down
                assert [r[0] for r in panel.bars[col].rows] == [vocab.display_piece(t) for t in top]
                assert [r[2] for r in panel.bars[col].rows] == [t == st.selected_id for t in top]
        n_out = len(s.frame.visible_ids) - len(c.a.prompt_ids)     # both transcripts up to the frame's step
        assert [t.id for t in panel.texts[0].flow.tokens] == list(s.frame.visible_ids)
        assert [t.id for t in panel.texts[1].flow.tokens] == list(c.b.prompt_ids + c.b.output_ids[:n_out])
        d = c.distances[step] if step < len(c.distances) else None
        assert (f"total variation {d:.3f}" in panel.summary.text()) if d is not None else True
    assert c.distances[0] > 0                                       # temperature 1 vs 3: apart from step 0


def test_the_first_divergence_is_marked_on_both_rows(qtbot):
    s = Session(load_teaching_model(), [1, 2], SamplingConfig(mode="sample", seed=0, temperature=2.0))
    panel = shown_panel(qtbot, s)
    for seed in range(1, 40):                                       # a seed that parts from seed 0 somewhere
        type_b(qtbot, panel, f"seed={seed}")
        split = panel.shown.comparison.first_divergence
        if split is not None:
            break
    assert split is not None
    s.next()
    panel.strip.grab()
    assert panel.strip.drawn["split"] == [f"▼ first divergence: step {split}"]
    assert f"first divergence: step {split}" in panel.summary.text()
    a, b = panel.shown.comparison.a, panel.shown.comparison.b
    shown_a, shown_b = panel.strip.drawn["A"], panel.strip.drawn["B"]
    assert shown_a[:split] == shown_b[:split] and shown_a[split] != shown_b[split]
    assert a.steps[split].selected_id != b.steps[split].selected_id if split < min(len(a.steps), len(b.steps)) else True


def test_a_bad_b_line_is_named_and_b_kept(qtbot):
    s = Session(load_teaching_model(), [1, 2])
    panel = shown_panel(qtbot, s)
    type_b(qtbot, panel, "seed=4")
    before = s.versus_spec
    for text, named in [("temprature=2", "unknown setting 'temprature'"), ("top_p=7", "top_p"),
                        ("seed=x", "seed = 'x': expected an integer"), ("mode=beam", "mode=beam")]:
        type_b(qtbot, panel, text)
        assert panel.error.isVisible() and named in panel.error.text() and panel.error.text().startswith("B not changed")
        assert s.versus_spec is before
    type_b(qtbot, panel, "")
    assert not panel.error.isVisible() and s.versus_spec is None and "No B run yet" in panel.caption.text()


def test_a_pinned_model_with_another_tokenizer_is_refused_with_the_reason(qtbot):
    s = Session(logits_model(("a", "b", "c"), (1.0, 2.0, 3.0)), [0], SamplingConfig(max_new_tokens=1))
    panel = shown_panel(qtbot, s)
    panel.pin_button.click()
    s.set_model(load_teaching_model(), [1, 2])                      # A moves to the teaching model
    panel.refresh()
    assert panel.shown.comparison is None
    assert "different tokenizers" in panel.caption.text() and "cannot be compared" in panel.caption.text()
    assert panel.bars[0].rows == [] and panel.bars[1].rows == []


def test_a_lesson_frames_comparison_is_drawn_as_declared(qtbot, tmp_path):
    path = tmp_path / "ab.toml"
    path.write_text('''format = "token-explorer/lesson"
version = 1
prompt_ids = [1, 2]
title = { en = "A and B" }
summary = { en = "Two temperatures." }
model = { kind = "teaching" }
settings = { mode = "sample", seed = 1 }
[[scenarios]]
name = "hot"
settings = { temperature = 4.0 }
[[frames]]
show = "pick"
step = 0
panels = ["versus"]
compare = "hot"
title = { en = "A beside B" }
''', encoding="utf-8")
    s = parse_lesson(path).build_session()
    panel = shown_panel(qtbot, s)
    assert panel.caption.text() == "A: the frame's run · B: hot: temperature 4"
    assert not panel.controls.isEnabled()                          # the lesson's B, not the teacher's
    assert panel.shown.comparison.distances[0] > 0 and "total variation" in panel.summary.text()
