"""The attention heatmap shows the weights core recorded: the current step's forward,
masked cells distinct from zero weights, the full matrix equal to a full recompute,
layer/head pickers for bigger models, and Chinese labels."""


import numpy as np
import pyqtgraph as pg
import pytest

from explorer.core.models.attention import attention_weights
from explorer.core.models.decoder import DecoderConfig, DecoderModel, random_params
from explorer.core.decode.sampling import SamplingConfig
from explorer.core.models.table_model import load_table_model
from explorer.core.models.teaching import load_teaching_model, teaching_vocabulary
from explorer.core.tokens.vocab import Vocabulary
from explorer.session import Session
from explorer.ui.panels.attention import AttentionPanel
from teacher import axis_texts, boundary_row, cell_point, heatmap, plot_items, plot_texts, plot_view, shown_texts, shows, tooltip_at
from paths import RESOURCES

BEAM_TABLE = RESOURCES / "tables" / "beam-example.json"


@pytest.fixture
def session():
    return Session(load_teaching_model(), [1, 2])


def make_panel(qtbot, session):
    panel = AttentionPanel(session)
    qtbot.addWidget(panel)
    panel.resize(900, 500)
    panel.show()
    qtbot.waitExposed(panel)
    return panel


@pytest.fixture
def panel(qtbot, session):
    return make_panel(qtbot, session)


def two_by_two(scale=1.0, seed=1):
    """2 layers, 2 query heads sharing 1 K/V head; a large scale saturates the softmax."""
    config = DecoderConfig(n_layers=2, n_heads=2, n_kv_heads=1, head_dim=4, d_model=8)
    model = DecoderModel(config, random_params(config, np.random.default_rng(seed), scale=scale),
                         teaching_vocabulary(), name="two")
    return Session(model, [1, 2, 3], SamplingConfig(max_new_tokens=4))


def expected_image(layer_trace, head):  # [n, t], NaN where masked
    return np.where(layer_trace.mask, attention_weights(layer_trace, head), np.nan)


def message(panel) -> str:
    """The message written over an empty heatmap ("" while it draws weights)."""
    return plot_texts(panel).get((0, 0), "") if heatmap(panel).size == 0 else ""


def masked(panel) -> np.ndarray:
    """[r, t] True where the heatmap draws a masked cell (no weight: NaN in its image)."""
    return np.isnan(heatmap(panel))


def ticks(panel) -> tuple[list[str], list[str]]:
    """(row labels, column labels) the heatmap's axes write."""
    plot = plot_view(panel).getPlotItem()
    return axis_texts(plot.getAxis("left")), axis_texts(plot.getAxis("bottom"))


def hover(panel, row, col) -> str:
    return tooltip_at(plot_view(panel).viewport(), cell_point(panel, row, col))


def colour_bar_texts(panel) -> list[str]:
    """The weights written beside the colour bar, bottom to top."""
    (bar,) = plot_items(panel, pg.ColorBarItem)
    return axis_texts(bar.axis)[::-1]


def query_axis_titled(panel) -> bool:
    return plot_view(panel).getPlotItem().getAxis("left").label.isVisible()


def test_input_frame_shows_a_message_and_no_image(panel, session):
    assert message(panel) == "the model has not run yet"
    assert heatmap(panel).size == 0


def test_every_forward_frame_shows_that_steps_weights(panel, session):
    for index, frame in enumerate(session.frames[1:], start=1):
        session.go(index)
        layer = session.run.steps[frame.step].trace.layers[0]
        np.testing.assert_array_equal(heatmap(panel), expected_image(layer, 0))
        np.testing.assert_array_equal(masked(panel), ~layer.mask)
        assert message(panel) == ""


def test_prefill_is_lower_triangular_with_token_labels(panel, session):
    session.next()
    assert masked(panel).tolist() == [[False, True], [False, False]]
    assert np.isnan(heatmap(panel)[0, 1])
    assert ticks(panel) == (["我·0", "爱·1"], ["我·0", "爱·1"])
    assert set(plot_texts(panel)) == {(0, 0), (1, 0), (1, 1)}    # no number in the masked cell


def test_decode_row_reads_every_cached_key(panel, session):
    session.go(3)                                                  # Decode 1 feeds 学习 at 2
    assert ticks(panel) == (["学习·2"], ["我·0", "爱·1", "学习·2"])
    weights = attention_weights(session.run.steps[1].trace.layers[0], 0)[0]
    assert plot_texts(panel) == {(0, c): f"{w:.2f}" for c, w in enumerate(weights)}


def test_masked_cells_are_not_zero_weights(qtbot):
    session = two_by_two(scale=60.0, seed=0)                       # saturated: exact zero weights
    panel = make_panel(qtbot, session)
    session.next()
    layer = session.run.steps[0].trace.layers[0]
    zero = layer.mask & (attention_weights(layer, 0) == 0)
    assert zero.any(), "the test model should produce a genuine 0 weight"
    image, hidden = heatmap(panel), masked(panel)
    assert np.all(image[zero] == 0) and not hidden[zero].any()
    assert np.all(np.isnan(image[~layer.mask])) and hidden[~layer.mask].all()
    assert shows(panel, "not a zero weight")


def test_full_matrix_equals_the_full_recompute(panel, session):
    panel.full_matrix_toggle.setChecked(True)
    for index, frame in enumerate(session.frames[1:], start=1):
        session.go(index)
        step = session.run.steps[frame.step]
        processed = session.run.visible_ids[:step.cache_len_after]
        reference = session.model.full_forward(processed).layers[0]
        np.testing.assert_allclose(heatmap(panel), expected_image(reference, 0), atol=1e-12)
        assert boundary_row(panel) == (2 if step.index > 0 else None)   # Prefill rows | Decode rows


def test_full_matrix_toggle_back_shows_one_step(panel, session):
    session.last()
    panel.full_matrix_toggle.setChecked(True)
    assert heatmap(panel).shape == (4, 4)
    panel.full_matrix_toggle.setChecked(False)
    assert heatmap(panel).shape == (1, 4)


def test_pickers_only_when_there_is_a_choice(panel, qtbot):
    assert panel.layer_picker.isHidden() and panel.head_picker.isHidden()
    big = make_panel(qtbot, two_by_two())
    assert not big.layer_picker.isHidden() and not big.head_picker.isHidden()
    assert big.layer_picker.count() == 2 and big.head_picker.count() == 2


def test_layer_and_head_pickers_change_the_image(qtbot):
    session = two_by_two()
    panel = make_panel(qtbot, session)
    session.go(3)
    before = heatmap(panel)
    panel.layer_picker.setCurrentIndex(1)
    panel.head_picker.setCurrentIndex(1)
    layer = session.step.trace.layers[1]
    np.testing.assert_array_equal(heatmap(panel), expected_image(layer, 1))
    assert not np.array_equal(before, heatmap(panel), equal_nan=True)
    assert shows(panel, "query head 1 reads K/V head 0")


def test_pickers_are_kept_on_a_rerun(qtbot):
    session = two_by_two()
    panel = make_panel(qtbot, session)
    panel.layer_picker.setCurrentIndex(1)
    session.go(3)
    session.set_sampling(max_new_tokens=3)
    assert panel.layer_picker.currentIndex() == 1
    np.testing.assert_array_equal(heatmap(panel), expected_image(session.step.trace.layers[1], 0))


def test_chinese_labels(panel, session):
    session.set_lang("zh")
    assert message(panel) == "模型还没有运行"
    session.next()
    assert shows(panel, "不是权重为0")
    assert panel.full_matrix_toggle.text().startswith("完整矩阵")
    assert any(text.startswith("Prefill：") for text in shown_texts(panel))


def rope_session(prompt, n_layers=1, max_new_tokens=1, windows=()):
    """A random 50-token rotary model (2 query heads, 1 K/V head) on `prompt`; `windows`:
    how many of the latest positions each layer reads (0 = all), as Gemma 3's layers."""
    config = DecoderConfig(vocab_size=50, d_model=8, n_layers=n_layers, n_heads=2, n_kv_heads=1,
                           head_dim=4, d_ff=8, positions="rope", max_positions=1024, windows=windows)
    model = DecoderModel(config, random_params(config, np.random.default_rng(0)),
                         Vocabulary(tuple(f"t{i}" for i in range(50)), {"eos": 49}))
    return Session(model, prompt, SamplingConfig(max_new_tokens=max_new_tokens), check_recompute=False)


def test_weights_stay_only_in_cells_wide_enough_for_them(qtbot):
    """Decode 1 after an 11-token prompt reads 12 keys: a wide panel prints all 12 weights,
    a narrow one leaves them out rather than running them into each other."""
    session = rope_session(list(range(11)), max_new_tokens=2)
    panel = make_panel(qtbot, session)
    session.go(3)
    weights = attention_weights(session.step.trace.layers[0], 0)[0]   # [12]
    assert plot_texts(panel) == {(0, c): f"{w:.2f}" for c, w in enumerate(weights)}
    panel.resize(320, 500)
    qtbot.waitUntil(lambda: plot_texts(panel) == {})
    assert heatmap(panel).shape == (1, 12)                    # the colours stay
    panel.resize(900, 500)
    qtbot.waitUntil(lambda: len(plot_texts(panel)) == 12)


def test_the_first_keys_label_is_drawn_though_it_reaches_past_the_plots_edge(qtbot):
    session = rope_session(list(range(11)), max_new_tokens=2)
    panel = make_panel(qtbot, session)
    panel.resize(320, 500)
    session.go(3)                                                  # Decode 1: 1 x 12
    qtbot.waitUntil(lambda: plot_texts(panel) == {})
    drawn = ticks(panel)[1]
    assert drawn[0] == "t0·0" and 2 <= len(drawn) < 12
    assert set(drawn) <= set(ticks(panel)[1])


def test_hovering_a_cell_names_its_query_key_and_weight(qtbot):
    """Where the cells are too small for numbers, hovering still reads every weight."""
    session = rope_session(list(range(11)), max_new_tokens=2)
    panel = make_panel(qtbot, session)
    panel.resize(320, 500)
    session.next()                                                 # Prefill: 11 x 11, lower triangle
    weights = attention_weights(session.step.trace.layers[0], 0)   # [11, 11]
    qtbot.waitUntil(lambda: plot_texts(panel) == {})
    assert hover(panel, 7, 3) == f"query t7·7 → key t3·3: weight {weights[7, 3]:.4f}"
    assert hover(panel, 3, 7) == ("query t3·3 → key t7·7: "
                                                     "masked (a future position, not a zero weight)")
    assert hover(panel, 11, 3) == ""           # below the last row
    panel.head_picker.setCurrentIndex(1)
    assert hover(panel, 7, 3).endswith(f"{attention_weights(session.step.trace.layers[0], 1)[7, 3]:.4f}")
    session.set_lang("zh")
    assert hover(panel, 3, 7).startswith("查询 t3·3 → 键 t7·7：被遮蔽")
    assert hover(panel, 10, 0).startswith("查询 t10·10 → 键 t0·0")


def test_500_positions_full_matrix(qtbot):
    session = rope_session(list(range(49)) * 10 + [1] * 10, n_layers=30)
    panel = make_panel(qtbot, session)
    panel.full_matrix_toggle.setChecked(True)
    session.go(1)
    assert heatmap(panel).shape == (500, 500)
    assert plot_texts(panel) == {}                                # too many cells for numbers
    assert not panel.grab().isNull()


def test_a_model_without_layers_says_so(qtbot):
    model = load_table_model(BEAM_TABLE)
    session = Session(model, [6])
    panel = make_panel(qtbot, session)
    session.last()
    assert message(panel) == "this model has no attention layers"
    assert panel.layer_picker.isHidden() and panel.head_picker.isHidden()


def test_the_image_item_is_updated_in_place(panel, session):
    (item,) = plot_items(panel, pg.ImageItem, visible=False)
    session.next()
    session.last()
    panel.full_matrix_toggle.setChecked(True)
    assert plot_items(panel, pg.ImageItem, visible=False) == [item] and heatmap(panel).shape == (4, 4)


def test_text_follows_the_application_font(panel, session, app_font_size):
    session.next()
    app_font_size(24)
    assert panel.full_matrix_toggle.font().pointSizeF() == 24
    assert ticks(panel) == (["我·0", "爱·1"], ["我·0", "爱·1"])
    assert panel.full_matrix_toggle.font().pointSizeF() >= 11


def test_the_colour_bar_writes_only_as_many_weights_as_fit(qtbot, session):
    session.go(3)                                     # Decode 1: a weight matrix is shown
    panel = make_panel(qtbot, session)
    panel.show()
    qtbot.waitExposed(panel)
    qtbot.waitUntil(lambda: colour_bar_texts(panel) == ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"])
    panel.resize(900, 200)                            # a squeezed dock (a 768-line screen)
    qtbot.waitUntil(lambda: len(colour_bar_texts(panel)) < 6)
    labels = colour_bar_texts(panel)
    assert labels[0] == "0.0" and labels[-1] == "1.0"
    assert not query_axis_titled(panel)              # "queries (token·position)" would be cut
    panel.resize(900, 500)
    qtbot.waitUntil(lambda: query_axis_titled(panel))


def test_a_sliding_window_layer_hatches_the_keys_it_no_longer_reads(qtbot):
    """Layer 0 reads only the latest 4 positions (Gemma 3's local layers read 512), layer 1
    every position: the keys outside the window are masked cells, not zero weights, and
    the picker, the legend and the tooltip say why."""
    session = rope_session(list(range(8)), n_layers=2, windows=(4, 0))
    panel = make_panel(qtbot, session)
    session.next()                                                 # Prefill: 8 x 8
    assert [panel.layer_picker.itemText(i) for i in range(2)] == ["layer 0 · local 4", "layer 1 · global"]
    lt = session.step.trace.layers[0]
    image = heatmap(panel)
    assert np.isnan(image[7, :4]).all() and np.isfinite(image[7, 4:]).all()   # query 7 reads 4..7
    for head in range(lt.q.shape[0]):
        row = attention_weights(lt, head)[7]                       # [8]
        assert row[:4].max() == 0 and np.isclose(row.sum(), 1)
    assert shows(panel, "reads only the latest 4 positions")
    assert hover(panel, 7, 2) == ("query t7·7 → key t2·2: masked (older than this "
                                                     "layer's window of the latest 4 positions, not a zero weight)")
    assert "a future position" in hover(panel, 2, 7)
    panel.layer_picker.setCurrentIndex(1)                          # the global layer reads all
    assert np.isfinite(heatmap(panel)[7]).all()
    assert not shows(panel, "window")
    session.set_lang("zh")
    assert panel.layer_picker.itemText(0) == "第0层 · 局部4"


def test_full_matrix_of_a_speculative_run_shows_the_passes_whose_keys_are_still_in_the_cache(qtbot):
    """A verify pass whose drafts were rolled back read keys the later passes do not have:
    the full matrix stacks only the passes whose every key is in the last one's (no error)."""
    from explorer.lessons import load_lesson
    session = load_lesson("speculative").build_session()
    panel = make_panel(qtbot, session)
    panel.full_matrix_toggle.setChecked(True)
    for i in range(len(session.frames)):
        session.go(i)
        if session.step is None:
            continue
        run, step = session.run, session.step
        keys = step.trace.key_ids
        kept = [s for s in run.steps[:step.index + 1]
                if len(s.trace.key_ids) <= len(keys) and list(s.trace.key_ids) == list(keys[:len(s.trace.key_ids)])]
        assert heatmap(panel).shape == (sum(len(s.trace.ids) for s in kept), len(keys))
