"""The distribution panel draws the core's records: bars per stage, removed candidates
named by the stage that removed them, the pick marked only once it is made, the ruler
with u; clicking a bar forces a token; big vocabularies show top 20 + "other"."""


from dataclasses import replace

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import QApplication

from explorer.core.models.decoder import DecoderConfig, DecoderModel, random_params
from explorer.core.decode.generate import generate
from explorer.core.decode.sampling import SamplingConfig, distribution
from explorer.core.models.teaching import load_teaching_model
from explorer.core.tokens.vocab import Vocabulary
from explorer.session import Session
from explorer.ui.panels import distribution_chart
from explorer.ui.panels.controls import SamplingControls
from explorer.ui.panels.distribution import N_SHOWN, DistributionPanel
from teacher import (chart_rows, chart_ruler, click_at, column_ids, column_names, drawn_texts, first_row_height, hover_at,
                     label_showing, marked_id, painted_bar_height, shows, tooltip_at)

SEED = 0          # u = 0.637 at step 0: 学习 when greedy-ish, 你 once T is high enough


@pytest.fixture
def session():
    return Session(load_teaching_model(), [1, 2])


def show(qtbot, widget, size=(900, 600)):
    qtbot.addWidget(widget)
    widget.resize(*size)
    widget.show()
    return widget


@pytest.fixture
def panel(qtbot, session):
    return show(qtbot, DistributionPanel(session))


def go_to(session, kind, step):
    session.go(next(i for i, f in enumerate(session.frames) if f.kind == kind and f.step == step))


def u_of(panel):
    """Where the ruler's u marker is drawn (None: hidden, or no chart)."""
    ruler = chart_ruler(panel)
    return None if ruler is None else ruler.u


def labels_of(panel, stage):
    return list(chart_rows(panel)[stage].labels)


def heights_of(panel, stage):
    return chart_rows(panel)[stage].values


def holder_of(dist, u):
    """The ruler id whose [lo, hi) holds u, from the core's own ruler."""
    inside = (dist.ruler_lo <= u) & (u < dist.ruler_hi)
    return int(dist.ruler_ids[np.flatnonzero(inside)[0]])


# ---------------------------------------------------------------------------- frames

def test_input_frame_shows_a_message_and_no_bars(panel, session):
    session.first()
    assert shows(panel, "No logits yet")
    assert chart_rows(panel) == {} and marked_id(panel) is None and u_of(panel) is None


def test_the_pick_is_marked_only_on_pick_and_stop_frames(panel, session):
    session.set_sampling(mode="sample", temperature=1.5, seed=SEED)
    chosen = session.run.steps[0].selected_id
    go_to(session, "prefill", 0)
    assert not shows(panel, "No logits yet") and marked_id(panel) is None and u_of(panel) is None
    assert not any("chosen" in label for label in labels_of(panel, "final"))
    assert "next frame" in chart_ruler(panel).note
    go_to(session, "pick", 0)
    assert marked_id(panel) == chosen
    column = column_ids(panel).index(chosen)
    assert labels_of(panel, "final")[column].startswith("▼ chosen")
    assert u_of(panel) == session.run.steps[0].distribution.u
    session.last()
    assert marked_id(panel) == session.run.steps[-1].selected_id


def test_each_removed_candidate_is_named_by_the_stage_that_removed_it(panel, session):
    session.set_sampling(mode="sample", temperature=1.5, top_k=3, top_p=0.9)
    go_to(session, "pick", 0)
    dist = session.run.steps[0].distribution
    assert list(chart_rows(panel)) == ["raw", "temperature", "top_k", "top_p", "final"]
    assert "min-p" in label_showing(panel, "penalty").text()
    ids = column_ids(panel)
    kept_after = {stage.name: stage.kept for stage in dist.stages} | {"final": dist.stages[-1].kept}
    for stage, kept in kept_after.items():
        if stage not in chart_rows(panel):
            continue
        for token, label in zip(ids, labels_of(panel, stage)):
            if kept[token]:
                assert not label.startswith("✕")
            else:                                        # "✕ top-k": the stage that removed it, in words
                assert label == "✕ " + dist.removed_by[token].replace("_", "-")
    assert sum(label == "✕ top-k" for label in labels_of(panel, "final")) == 4
    raw = labels_of(panel, "raw")
    assert all(label.count(".") == 1 and len(label) == 5 for label in raw)   # "0.470": 3 decimals
    np.testing.assert_array_equal(heights_of(panel, "top_k"), dist.stages[3].probs[ids])
    drawn = [d.text for d in drawn_texts(panel.chart)]
    assert all(label in drawn for row in chart_rows(panel).values() for label in row.labels if label)


def test_temperature_only_is_a_single_stage_row(panel, session):
    go_to(session, "pick", 0)
    session.set_sampling(mode="sample", temperature=0.5)
    assert list(chart_rows(panel)) == ["raw", "temperature", "final"]
    session.set_sampling(temperature=1.0)
    assert list(chart_rows(panel)) == ["raw", "final"]


def test_greedy_draws_the_raw_distribution_and_says_the_temperature_is_not_used(panel, session):
    """Greedy takes the top logit as it is: a temperature would only reshape bars it ignores."""
    go_to(session, "pick", 0)
    raw = chart_rows(panel)["raw"].values
    session.set_sampling(temperature=0.5)
    assert session.config.mode == "greedy" and list(chart_rows(panel)) == ["raw", "final"]
    np.testing.assert_array_equal(chart_rows(panel)["final"].values, raw)
    assert shows(panel, "temperature (T=0.5, not used: this mode takes the top token)")


# ---------------------------------------------------------------------------- live sliders

def test_dragging_temperature_redraws_the_core_distribution_and_u_picks(qtbot, session, panel):
    controls = show(qtbot, SamplingControls(session), (320, 600))
    session.set_sampling(mode="sample", seed=SEED)
    go_to(session, "pick", 0)
    logits = session.run.steps[0].trace.last_logits
    slider = controls.slider("temperature")
    picks = []
    for tenths in range(0, 31):
        slider.setValue(tenths * 10)
        t = tenths / 10
        assert session.config.temperature == t
        ref = distribution(logits, SamplingConfig(mode="sample", temperature=t, seed=SEED))
        np.testing.assert_array_equal(heights_of(panel, "final"), ref.probs[column_ids(panel)])
        assert sorted(column_ids(panel)) == list(range(7))
        assert marked_id(panel) == ref.selected_id == session.run.steps[0].selected_id
        ruler = chart_ruler(panel)
        if ref.u is None:
            assert t == 0 and ruler.u is None and "greedy" in ruler.note
        else:
            assert ruler.u == ref.u
            assert ref.selected_id == holder_of(ref, ref.u)
            np.testing.assert_array_equal(ruler.ids, ref.ruler_ids)
            np.testing.assert_array_equal(ruler.hi, ref.ruler_hi)
        expected = generate(session.model, session.prompt_ids, session.config)
        assert session.run.output_ids == expected.output_ids
        picks.append(ref.selected_id)
    assert len(set(picks)) > 1          # u crossed at least one interval boundary on the way


def test_arrow_keys_on_the_slider_rerun_at_every_step(qtbot, session, panel):
    controls = show(qtbot, SamplingControls(session), (320, 600))
    session.set_sampling(mode="sample", temperature=0.5)
    go_to(session, "pick", 0)
    runs = []
    session.subscribe("run_changed", lambda s: runs.append(s.config.temperature))
    for _ in range(5):
        qtbot.keyClick(controls.slider("temperature"), Qt.Key.Key_Right)
    assert runs == [0.51, 0.52, 0.53, 0.54, 0.55]
    ref = distribution(session.run.steps[0].trace.last_logits,
                       SamplingConfig(mode="sample", temperature=0.55))
    np.testing.assert_array_equal(heights_of(panel, "final"), ref.probs[column_ids(panel)])


# ---------------------------------------------------------------------------- what-if

def click_bar(qtbot, panel, stage, token_id):
    """A real left click on the foot of a token's bar."""
    row, column = list(chart_rows(panel)).index(stage), column_ids(panel).index(token_id)
    click_at(qtbot, panel.chart, panel.chart.bar_center(row, column))


def test_a_click_between_two_thin_bars_forces_the_nearer_and_hovering_shows_which(qtbot):
    session = big_session()
    panel = show(qtbot, DistributionPanel(session), (900, 700))
    qtbot.waitExposed(panel)
    go_to(session, "pick", 0)
    QApplication.sendPostedEvents()       # the layout settled: the bars are where the mouse will go
    chart, ids = panel.chart, column_ids(panel)                     # 20 thin columns and "other"
    final = list(chart_rows(panel)).index("final")
    foot, column = chart.bar_center(final, 3), chart.bar_center(final, 4).x() - chart.bar_center(final, 3).x()
    assert column < 60                                             # thin: a bar is 0.8 of that
    near_4 = (foot + QPointF(0.56 * column, 0)).toPoint()          # in the gap, nearer column 4
    near_3 = (foot + QPointF(0.44 * column, 0)).toPoint()          # in the gap, nearer column 3
    background = chart.grab().toImage().pixelColor(near_4)
    hover_at(chart, near_4)
    assert chart.hovered == (final, 4)
    assert chart.grab().toImage().pixelColor(near_4) != background     # the gap is tinted: that column is taken
    qtbot.mouseClick(chart, Qt.MouseButton.LeftButton, pos=near_4)
    assert session.overrides == {0: ids[4]} and marked_id(panel) == ids[4]
    assert chart_rows(panel)["final"].labels[4].endswith("forced")
    session.undo()
    qtbot.mouseClick(chart, Qt.MouseButton.LeftButton, pos=near_3)
    assert session.overrides == {0: ids[3]} and marked_id(panel) == ids[3]
    hover_at(chart, chart.bar_center(final, len(ids)).toPoint())   # the "other" bar forces nothing
    assert chart.hovered is None
    qtbot.mouseClick(chart, Qt.MouseButton.LeftButton, pos=chart.bar_center(final, len(ids)).toPoint())
    assert session.overrides == {0: ids[3]}


def test_clicking_a_bar_forces_it_and_back_and_undo_restore(qtbot, session, panel):
    go_to(session, "pick", 0)
    original = session.run.output_ids
    assert original == (3, 5, 6) and not panel.back_button.isEnabled()
    click_bar(qtbot, panel, "final", 4)                              # 你 instead of 学习
    assert session.run.steps[0].forced and session.run.output_ids[0] == 4
    assert session.run.output_ids != original
    assert marked_id(panel) == 4
    column = column_ids(panel).index(4)
    assert "forced" in labels_of(panel, "final")[column]
    assert shows(panel, "forced")
    assert chart_ruler(panel).note.startswith("greedy, overridden")     # not "the most likely is taken"
    assert panel.back_button.isEnabled() and panel.undo_button.isEnabled()

    qtbot.mouseClick(panel.back_button, Qt.MouseButton.LeftButton)
    assert session.run.output_ids == original and not session.run.steps[0].forced
    assert marked_id(panel) == 3 and not panel.back_button.isEnabled()
    assert chart_ruler(panel).note.startswith("greedy: no draw")

    qtbot.mouseClick(panel.undo_button, Qt.MouseButton.LeftButton)
    assert session.run.steps[0].forced and session.run.output_ids[0] == 4
    assert marked_id(panel) == 4 and panel.back_button.isEnabled()


# ---------------------------------------------------------------------------- big vocabulary

def big_session(**config):
    cfg = DecoderConfig(vocab_size=49152, d_model=8, n_layers=1, n_heads=1, n_kv_heads=1,
                        head_dim=8, d_ff=8)
    vocab = Vocabulary(tuple(f"t{i}" for i in range(49152)), {"eos": 2})
    model = DecoderModel(cfg, random_params(cfg, np.random.default_rng(1), scale=1.0), vocab)
    return Session(model, [1, 5, 7], SamplingConfig(max_new_tokens=2, **config),
                   check_recompute=False)


def test_a_49k_vocabulary_shows_top_20_and_the_rest_as_other(qtbot):
    session = big_session()
    panel = show(qtbot, DistributionPanel(session))
    go_to(session, "pick", 0)
    dist = session.run.steps[0].distribution
    top = dist.top(N_SHOWN)
    assert column_ids(panel) == top.tolist()
    assert column_names(panel)[:3] == [f"t{i}" for i in top[:3]]
    assert column_names(panel)[-1] == "other (49,132)"
    heights = heights_of(panel, "final")
    assert heights.size == N_SHOWN + 1
    np.testing.assert_array_equal(heights[:-1], dist.probs[top])
    assert heights[-1] == pytest.approx(1 - dist.probs[top].sum(), abs=1e-12)
    ruler = chart_ruler(panel)
    np.testing.assert_array_equal(ruler.ids, dist.ruler_ids[:N_SHOWN])
    np.testing.assert_allclose(ruler.hi, dist.ruler_hi[:N_SHOWN], rtol=0, atol=1e-12)
    # the three most likely and the rest carry their probabilities; the chosen its mark
    raw, final = labels_of(panel, "raw"), labels_of(panel, "final")
    assert raw[:3] == [f"{dist.stages[0].probs[i]:.3f}" for i in top[:3]] and set(raw[3:-1]) == {""}
    assert final[0] == "◀ chosen" and final[1:3] == [f"{dist.probs[i]:.3f}" for i in top[1:3]]
    assert raw[-1] == f"{1 - dist.stages[0].probs[top].sum():.3f}" and final[-1] == f"{1 - dist.probs[top].sum():.3f}"
    go_to(session, "pick", 1)
    assert len(column_ids(panel)) == N_SHOWN and marked_id(panel) == session.run.steps[1].selected_id


def test_a_49k_vocabulary_shows_the_removed_and_the_pick(qtbot):
    # how fast this redraws is measured in benchmarks/bench_window.py, not asserted here
    session = big_session(mode="sample", temperature=0.8, top_k=5, top_p=0.9)
    panel = show(qtbot, DistributionPanel(session))
    go_to(session, "pick", 0)
    dist = session.run.steps[0].distribution
    removed = [label for label in labels_of(panel, "final") if label.startswith("✕")]
    assert removed and set(removed) <= {"✕ top-k", "✕ top-p"}
    assert marked_id(panel) == dist.selected_id
    assert dist.selected_id in column_ids(panel)


@pytest.fixture
def uncapped(monkeypatch):
    """The chart asks for all the room its content needs (the offscreen screen is 800 px
    tall: the share of it the chart may ask for is tested on its own)."""
    monkeypatch.setattr(distribution_chart, "SCREEN_SHARE", 1.0)


def test_the_upright_names_band_follows_the_names_and_the_font(qtbot, uncapped):
    session = big_session()
    panel = show(qtbot, DistributionPanel(session))
    go_to(session, "pick", 0)

    def height(p):
        return p.chart.minimumSizeHint().height()

    short = height(panel)
    font = panel.font()
    font.setPointSizeF(font.pointSizeF() * 1.3)
    panel.setFont(font)
    fresh_session = big_session()          # a panel that only ever had the larger type
    fresh = DistributionPanel(fresh_session)
    fresh.setFont(font)
    show(qtbot, fresh)
    go_to(fresh_session, "pick", 0)
    assert height(panel) == height(fresh) > short + 20    # measured again in the larger type
    chart = panel.chart
    longer_rows = tuple(replace(row, names=tuple(name and name + " and more" for name in row.names))
                        for row in chart.rows)
    before = height(panel)
    chart.set_content(longer_rows, chart.ruler, upright=True)
    assert height(panel) > before          # "other (49,132) and more" is never elided

def test_squeezed_to_its_minimum_each_49k_row_still_holds_its_upright_labels(qtbot, uncapped):
    # removed candidates ("✕ top-k"), the pick ("◀ chosen") and the rest's share, written upwards
    session = big_session(mode="sample", top_k=5)
    panel = show(qtbot, DistributionPanel(session))
    go_to(session, "pick", 0)
    chart = panel.chart
    chart.setFixedSize(chart.width(), chart.minimumSizeHint().height())
    qtbot.waitUntil(lambda: chart.height() == chart.minimumSizeHint().height())
    drawn = drawn_texts(chart)
    feet = [0.0] + [chart.bar_center(r, 0).y() + 3 for r in range(len(chart.rows))]   # each row's axis
    marks = {label for row in chart.rows for label in row.labels} | {"✕", "◀", "▼"}     # a label or its sign alone
    for r, row in enumerate(chart.rows):                    # the labels standing between this axis and the one above
        above = [d for d in drawn if feet[r] < d.box.bottom() <= feet[r + 1] and d.text in marks]
        labels = sorted(label for label in row.labels if label)
        shown = sorted(d.text for d in above)
        assert [t.split()[0] for t in shown] == [t.split()[0] for t in labels], row.name
        assert all(t in labels or t in marks - set(labels) for t in shown), row.name   # whole, or the sign alone
        assert all(d.box.top() >= feet[r] for d in above), row.name          # whole, none reaching into the row above


def test_many_stages_at_a_large_type_never_ask_for_more_than_their_share_of_the_screen(qtbot):
    session = big_session(mode="sample", temperature=0.8, top_k=5, top_p=0.9, min_p=0.01)
    panel = show(qtbot, DistributionPanel(session))
    go_to(session, "pick", 0)
    font = panel.font()
    font.setPointSizeF(font.pointSizeF() * 2)
    panel.setFont(font)
    chart = panel.chart
    assert len(chart.rows) == 6
    screen = chart.screen().availableGeometry().height()
    share = int(distribution_chart.SCREEN_SHARE * screen)
    assert chart.minimumSizeHint().height() == share
    chart.setFixedSize(chart.width(), share)
    qtbot.waitUntil(lambda: chart.height() == share)
    bottoms = [chart.bar_center(r, 0).y() for r in range(len(chart.rows))]
    assert bottoms == sorted(bottoms) and bottoms[-1] < share     # every row on the chart, in order
    assert not chart.grab().isNull()


def test_hovering_a_bar_tells_its_token_stage_probability_and_mark(qtbot):
    session = big_session(mode="sample", top_k=5)
    panel = show(qtbot, DistributionPanel(session))
    go_to(session, "pick", 0)
    dist, chart = session.run.steps[0].distribution, panel.chart
    top = column_ids(panel)                                       # the candidate of each column
    rows = list(chart_rows(panel))
    final, raw = rows.index("final"), rows.index("raw")

    def hover(row, column, shift=0.0):
        return tooltip_at(chart, (chart.bar_center(row, column) + QPointF(shift, 0)).toPoint())

    assert hover(raw, 0) == f"t{top[0]} · raw softmax: p = {dist.stages[0].probs[top[0]]:.4f}"
    removed = hover(final, 5)                                     # the 6th column: cut by top-k = 5
    assert removed.startswith(f"t{top[5]} · final: p = 0.0000") and removed.endswith("✕ top-k")
    chosen = top.index(dist.selected_id)
    assert hover(final, chosen).endswith("◀ chosen")
    column = chart.bar_center(final, 1).x() - chart.bar_center(final, 0).x()
    assert hover(final, 0, shift=0.45 * column) == hover(final, 0)      # between bars: the nearer one's
    assert hover(final, 0, shift=0.55 * column) == hover(final, 1)


# ---------------------------------------------------------------------------- language

def test_switching_to_chinese_changes_the_labels(panel, session):
    session.set_sampling(temperature=1.5)
    go_to(session, "pick", 0)
    english = (panel.back_button.text(), label_showing(panel, "Step 0").text(), chart_ruler(panel).note)
    session.set_lang("zh")
    assert panel.back_button.text() == "恢复模型的选择" and panel.undo_button.text() == "撤销"
    assert label_showing(panel, "第0步").text().startswith("第0步")
    assert "贪心" in chart_ruler(panel).note
    drawn = [d.text for d in drawn_texts(panel.chart)]
    assert "累积区间" in " ".join(drawn)                               # the ruler's title
    assert shows(panel, "温度 (T=1.5，未使用：这种方式直接取最高的Token)")     # greedy does not use it
    assert english != (panel.back_button.text(), label_showing(panel, "第0步").text(), chart_ruler(panel).note)
    session.first()
    assert shows(panel, "还没有logits")


def test_a_short_panel_gives_the_chart_the_height_of_its_secondary_lines(qtbot):
    """On a 768-line projector the panel is short: the "off" line and the click hint move
    into the step line's tooltip and the chart takes all the height below it; tall, they return."""
    session = big_session(mode="sample", top_k=5)
    panel = show(qtbot, DistributionPanel(session))
    go_to(session, "pick", 0)
    panel.chart.set_height_cap(120)                           # as the window squeezes it on such a screen
    page = panel.chart.parentWidget()                         # the chart and the "off" line under it
    panel.resize(900, 900)
    off, hint = "Off (no effect): ", "Click a bar to force"

    def step_line():
        return label_showing(panel, "Step 0")

    qtbot.waitUntil(lambda: shows(panel, off))
    assert shows(panel, hint) and step_line().toolTip() == ""
    assert panel.chart.height() < page.height()               # the "off" line has its own room
    off_line = label_showing(panel, off).text()
    panel.resize(900, 280)                                    # rows would get under 24 px
    qtbot.waitUntil(lambda: not shows(panel, off) and panel.chart.height() == page.height())
    assert not shows(panel, hint)
    assert off_line in step_line().toolTip() and hint in step_line().toolTip()
    panel.resize(900, 900)
    qtbot.waitUntil(lambda: shows(panel, off))
    assert step_line().toolTip() == ""


def test_the_rest_columns_two_line_name_stays_inside_a_narrow_chart(qtbot):
    session = big_session()
    panel = show(qtbot, DistributionPanel(session))
    go_to(session, "pick", 0)
    chart = panel.chart                                         # "other (49,132)" on two lines
    for width in (460, 1200):
        panel.resize(width, 600)
        qtbot.waitUntil(lambda: chart.width() < width)
        names = [d for d in drawn_texts(chart) if d.text in {*column_names(panel), "other", "(49,132)"}]
        other, count, column = names[-2], names[-1], names[-3]    # painted in column order
        assert (other.text, count.text) == ("other", "(49,132)")
        box = other.box.united(count.box)
        assert box.right() <= chart.width() and box.width() > column.box.width()   # count kept, inside
        assert box.left() > column.box.center().x()             # still right of its neighbour's name


# ---------------------------------------------------------------------------- the probability axis

@pytest.mark.parametrize("tallest, end", [(0.109, 0.12), (0.2, 0.2), (0.24, 0.25), (0.0004, 0.0004),
                                          (0.00041, 0.0005), (0.271, 0.3), (0.3, 1.0), (0.47, 1.0), (0.73, 1.0)])
def test_a_flat_distribution_ends_its_axis_at_a_round_value_just_above_the_tallest_bar(tallest, end):
    values = np.array([tallest, tallest / 3, 1 - 4 * tallest / 3])
    row = distribution_chart.BarRow("raw", "raw", values, values, ("kept", "kept", "other"), ("", "", ""),
                                    ("a", "b", "other"))
    assert distribution_chart.axis_end((row,)) == pytest.approx(end, rel=1e-9)     # "other" may pass it


def test_a_big_vocabularys_bars_fill_their_rows_against_a_labelled_axis_end(qtbot, uncapped):
    """Gemma 3 gives its top token 0.109 of 262,144: on a 0..1 axis the bars were a few pixels
    tall. The axis ends at a round value just above the tallest candidate, written at its end."""
    session = big_session()
    panel = show(qtbot, DistributionPanel(session), size=(1200, 700))
    go_to(session, "pick", 0)
    chart, dist = panel.chart, session.run.steps[0].distribution
    top = float(dist.probs[column_ids(panel)[0]])
    assert top < 0.05                                            # a flat distribution
    texts = drawn_texts(chart)
    drawn = [d.text for d in texts]
    left_of_bars = chart.bar_center(0, 0).x() - (chart.bar_center(0, 1).x() - chart.bar_center(0, 0).x()) / 2
    ticks = [float(d.text) for d in texts if d.box.right() < left_of_bars and d.text.replace(".", "", 1).isdigit()]
    ends = [t for t in ticks if top <= t <= 1.34 * top]
    assert len(ends) == len(chart.rows) and 1.0 not in ticks     # every row's axis says where it ends
    assert painted_bar_height(chart, 0, 0) > 0.5 * first_row_height(chart)
    rest = f"{1 - dist.stages[0].probs[column_ids(panel)].sum():.3f}"
    assert rest in drawn                                         # the broken "other" bar keeps its value


def test_a_teaching_models_bars_keep_the_whole_axis(qtbot, panel, session):
    go_to(session, "pick", 0)
    chart = panel.chart
    top = float(chart_rows(panel)["raw"].values.max())
    assert top > 0.3
    expected = top / distribution_chart.Y_TOP * first_row_height(chart)
    assert painted_bar_height(chart, 0, int(np.argmax(chart_rows(panel)["raw"].values))) == pytest.approx(expected, abs=3)
