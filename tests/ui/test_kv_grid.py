"""The KV cache grid follows the session: states per frame (the one-off rule), counts,
vectors from the step traces, Chinese labels, and a 500-position x 30-layer model."""


import numpy as np
import pytest
from PySide6.QtCore import QRect
from PySide6.QtWidgets import QWidget

from explorer.core.models.decoder import DecoderConfig, DecoderModel, random_params
from explorer.core.decode.sampling import SamplingConfig
from explorer.core.models.table_model import load_table_model
from explorer.core.models.teaching import load_teaching_model
from explorer.core.tokens.vocab import Vocabulary
from explorer.session import Session
from explorer.ui.fonts import MIN_POINT_SIZE
from explorer.ui.panels.kv import KVGridPanel
from explorer.ui.panels.kv_legend import KVLegend
from explorer.units import byte_size
from teacher import (drawn_texts, kv_cell_rect, kv_cell_text, kv_column_heads, kv_row_heads, kv_states, kv_written,
                     label_showing, shows, tooltip_at)
from paths import RESOURCES

BEAM_TABLE = RESOURCES / "tables" / "beam-example.json"
BYTES_TABLE = BEAM_TABLE.with_name("bytes-example.json")


@pytest.fixture
def session():
    return Session(load_teaching_model(), [1, 2])


def shown(qtbot, panel, width=900, height=500):
    qtbot.addWidget(panel)
    panel.resize(width, height)
    panel.show()
    qtbot.waitExposed(panel)
    return panel


@pytest.fixture
def panel(qtbot, session):
    return shown(qtbot, KVGridPanel(session))


def big_session(prompt_len=500):
    config = DecoderConfig(vocab_size=50, d_model=8, n_layers=30, n_heads=2, n_kv_heads=1, head_dim=4,
                           d_ff=8, positions="rope", max_positions=1024)
    model = DecoderModel(config, random_params(config, np.random.default_rng(0)),
                         Vocabulary(tuple(f"t{i}" for i in range(50)), {"eos": 49}), name="big")
    prompt = np.random.default_rng(1).integers(0, 49, prompt_len)
    return Session(model, prompt, SamplingConfig(max_new_tokens=1), check_recompute=False)


def tooltip_of(panel, row: int, col: int) -> str:
    """What hovering cell (row, col) (row -1: its header) shows."""
    viewport = panel.grid_view().viewport()
    return tooltip_at(viewport, kv_cell_rect(panel, row, col).center())


def legend_of(panel) -> KVLegend:
    return panel.findChild(KVLegend)


def meanings_written(panel) -> bool:
    """Does the legend write the meanings out (else: the swatches alone)?"""
    return "in the cache" in " ".join(d.text for d in drawn_texts(legend_of(panel)))


def test_every_frame_of_the_default_run_shows_the_frame_states(panel, session):
    for index, frame in enumerate(session.frames):
        session.go(index)
        assert kv_column_heads(panel) == [f"{session.model.vocab.display_piece(t)}·{p}"
                                          for p, t in enumerate(frame.visible_ids)]
        assert kv_row_heads(panel) == ["L0 K", "L0 V"]
        for row in range(2):
            assert kv_states(panel, row) == [s.value for s in frame.states], (index, row)


def test_one_off_rule_at_the_first_pick(panel, session):
    session.next()
    session.next()                                    # pick after Prefill
    assert session.frame.kind == "pick"
    assert kv_row_heads(panel) == ["L0 K", "L0 V"]
    assert kv_states(panel) == ["processed", "processed", "selected"]
    assert kv_column_heads(panel) == ["我·0", "爱·1", "学习·2"]
    assert shows(panel, "visible sequence: 3") and shows(panel, "in cache: 2")
    assert kv_cell_text(panel, 0, 2) == "selected"        # empty cell: a label, no numbers


def test_the_end_keeps_the_last_selected_token_out_of_the_cache(panel, session):
    session.last()
    assert kv_states(panel) == ["processed"] * 4 + ["selected"]
    assert shows(panel, "visible sequence: 5") and shows(panel, "in cache: 4")


def test_input_frame_is_all_pending(panel, session):
    assert kv_states(panel) == ["pending", "pending"]
    assert shows(panel, "in cache: 0")
    assert kv_written(panel) == []


def test_the_forward_columns_are_outlined(panel, session):
    session.next()                                    # Prefill writes both prompt positions
    assert kv_written(panel) == [0, 1] and shows(panel, "this forward writes positions 0–1")
    session.next()                                    # pick: no forward on this frame
    assert kv_written(panel) == [] and not shows(panel, "this forward writes")
    session.next()                                    # Decode 1 feeds 学习 at position 2
    assert kv_written(panel) == [2]
    assert shows(panel, "position 2")


def test_teaching_model_values_are_drawn_in_the_cells(panel, session):
    session.last()
    for pos in range(4):
        step = next(s for s in session.run.steps if pos in s.positions)
        layer, i = step.trace.layers[0], step.positions.index(pos)
        for row, vec in ((0, layer.k), (1, layer.v)):
            numbers = kv_cell_text(panel, row, pos).split()[1:]
            assert numbers == [f"{x:.2f}" for x in vec[:, i, :].ravel()]


def test_tooltip_shows_the_vector_from_the_step_that_processed_the_position(panel, session):
    session.last()
    v = session.run.steps[1].trace.layers[0].v[0, 0]       # 学习 is fed by Decode 1 at position 2
    tip = tooltip_of(panel, 1, 2)
    assert "L0 V" in tip and "学习" in tip
    assert all(f"{x:.3f}" in tip for x in v)
    assert "no K/V" in tooltip_of(panel, 0, 4)             # the selected <eos> has none


def test_a_tokens_tooltip_names_the_character_it_holds_only_some_bytes_of(qtbot):
    model = load_table_model(BYTES_TABLE)                     # <bos>, then <0xE4> and <0xBD><0xA0>: 你
    session = Session(model, [1], SamplingConfig(max_new_tokens=3))
    panel = shown(qtbot, KVGridPanel(session))
    session.last()
    assert kv_column_heads(panel)[1:3] == ["<0xE4>·1", "<0xBD>…·2"]      # a wide token elided in its header
    assert tooltip_of(panel, -1, 2).startswith("<0xBD><0xA0> at position 2")     # and whole on hover
    for col in (1, 2):                                       # hovering the column's token
        assert "only some of the bytes of 你" in tooltip_of(panel, -1, col)
    assert tooltip_of(panel, -1, 0) == "<bos> at position 0 is processed: its K/V are in the cache"
    session.set_lang("zh")
    assert "只包含“你”的一部分字节" in tooltip_of(panel, -1, 2)


def test_hovering_a_real_models_byte_tokens_names_their_character(qtbot):
    vocab = Vocabulary((b"\xe6\x88", b"\x91", b"!", b"\xe7"), {"eos": 2})
    config = DecoderConfig(vocab_size=4, d_model=8, n_layers=2, n_heads=1, n_kv_heads=1, head_dim=8, d_ff=8)
    model = DecoderModel(config, random_params(config, np.random.default_rng(0)), vocab)
    session = Session(model, [0, 1], SamplingConfig(max_new_tokens=1))     # 我 as two byte tokens
    panel = shown(qtbot, KVGridPanel(session))
    session.last()
    assert "of 我" in tooltip_of(panel, 3, 0) and "L1 V" in tooltip_of(panel, 3, 0)
    assert tooltip_of(panel, -1, 0).startswith("<0xE6><0x88> at position 0 is processed")   # column 0's header
    assert "of 我" in tooltip_of(panel, -1, 0)


def test_a_rerun_updates_the_grid(panel, session):
    session.go(4)                                           # pick at step 1
    session.set_sampling(max_new_tokens=1)                  # the run now stops after Prefill
    assert kv_states(panel) == ["processed", "processed", "selected"]
    assert shows(panel, "in cache: 2")


def test_chinese_labels(panel, session):
    session.go(2)
    session.set_lang("zh")
    assert shows(panel, "可见序列：3") and shows(panel, "已缓存：2")
    assert kv_cell_text(panel, 0, 2) == "已选中"
    assert any("缓存" in d.text for d in drawn_texts(legend_of(panel)))


def test_legend_names_all_three_states_in_words(panel):
    text = " ".join(d.text for d in drawn_texts(legend_of(panel)))
    assert "K/V are in the cache" in text and "not yet processed" in text


def test_text_is_readable_and_follows_the_application_font(panel, app_font_size):
    def sizes():
        return {d.point_size for widget in (panel.grid_view().viewport(), legend_of(panel))
                for d in drawn_texts(widget)}
    assert min(sizes()) >= MIN_POINT_SIZE
    app_font_size(24)
    assert sizes() == {24}


def test_500_positions_by_30_layers_paints_only_what_is_visible(qtbot):
    small = KVGridPanel(big_session(prompt_len=5))
    qtbot.addWidget(small)
    session = big_session()
    panel = shown(qtbot, KVGridPanel(session))
    session.go(1)                                           # Prefill: 500 processed positions
    assert kv_row_heads(panel)[0] == "L0 K" and kv_cell_text(panel, -1, 499).endswith("499")
    assert not panel.grab().isNull()
    session.last()
    view = panel.grid_view()
    view.verticalScrollBar().setValue(view.verticalScrollBar().maximum())     # down to the last layer
    assert kv_row_heads(panel)[-1] == "L29 V"
    assert kv_states(panel, 59)[-2:] == ["processed", "selected"]               # positions 499, 500
    assert kv_cell_text(panel, -1, 500).endswith("500")
    assert shows(panel, "in cache: 500")
    assert len(panel.findChildren(QWidget)) == len(small.findChildren(QWidget))
    assert "L29 V" in tooltip_of(panel, 59, 499)


def test_the_counts_say_what_the_cache_weighs_and_the_tooltip_how(panel, session):
    """Teaching model: 1 layer x (K, V) x 1 head x 4 numbers x 8 bytes (float64) = 64 bytes a position."""
    session.last()                                    # 4 positions in the cache
    assert shows(panel, "in cache: 4 (256 B)")
    tip = label_showing(panel, "in cache").toolTip()
    assert tip.startswith("Bytes per cached position = 2 (K and V) × 1 (layers) × 1 (K/V heads) × "
                          "4 (head size) × 8 (float64) = 64.")
    assert "4 positions: 256 bytes. Every token fed in adds 64 bytes." in tip
    session.first()
    assert shows(panel, "in cache: 0 (0 B)")
    session.set_lang("zh")
    session.last()
    assert shows(panel, "已缓存：4（256 B）") and "每送入一个Token，增加64字节" in label_showing(panel, "已缓存").toolTip()


def test_the_cache_weight_of_a_real_model(qtbot, smollm2):
    """SmolLM2: 30 layers x (K, V) x 3 K/V heads x 64 numbers x 4 bytes (float32) = 46,080 a position."""
    session = Session(smollm2, smollm2.vocab.encode("The capital of France is"),
                      SamplingConfig(max_new_tokens=2), check_recompute=False)
    panel = KVGridPanel(session)
    qtbot.addWidget(panel)
    session.last()
    assert session.frame.cache_len == 6 and shows(panel, "in cache: 6 (276 kB)")   # 276,480 bytes
    tip = label_showing(panel, "in cache").toolTip()
    assert "= 46,080." in tip and "6 positions: 276,480 bytes" in tip


@pytest.mark.parametrize("n, text", [(0, "0 B"), (999, "999 B"), (1000, "1 kB"), (276_480, "276 kB"),
                                     (2048 * 46_080, "94.4 MB"), (98_362_432, "98.4 MB")])
def test_byte_sizes_read_as_people_write_them(n, text):
    assert byte_size(n) == text


def test_a_model_without_layers_shows_tokens_but_no_kv_rows(qtbot):
    model = load_table_model(BEAM_TABLE)
    session = Session(model, [6])
    panel = shown(qtbot, KVGridPanel(session))
    session.last()
    assert kv_row_heads(panel) == [] and all(kv_column_heads(panel))
    assert shows(panel, "no layers") and not shows(panel, " B)")
    assert label_showing(panel, "no layers").toolTip() == ""
    assert not panel.grab().isNull()


def test_the_newest_position_stays_in_view_as_the_run_grows(qtbot):
    session = big_session(prompt_len=60)
    panel = shown(qtbot, KVGridPanel(session), 600, 400)
    assert 0 < len(columns_in_view(panel)) < 60            # 60 columns do not fit: it scrolls
    for index in range(len(session.frames)):
        session.go(index)
        newest = session.frame.visible_count - 1        # the input's last token, or the one just selected
        assert newest in columns_in_view(panel), index
    panel.resize(400, 400)
    assert session.frame.visible_count - 1 in columns_in_view(panel)


def test_the_legend_writes_meanings_out_within_the_width_and_only_swatches_when_short(qtbot, session):
    session.go(2)
    panel = shown(qtbot, KVGridPanel(session), 900, 500)
    legend = legend_of(panel)
    assert meanings_written(panel)
    assert len(drawn_texts(legend)) == 7        # 3 cell words and 4 meanings, each on one line
    panel.resize(260, 900)                        # narrow: the meanings wrap, none is cut
    qtbot.waitUntil(lambda: legend.width() <= 260)
    drawn = drawn_texts(legend)
    assert meanings_written(panel) and all(d.box.right() < legend.width() for d in drawn)
    assert len(drawn) > 7                         # some wrap onto more lines
    panel.resize(600, 140)                        # short: the swatches alone, one line
    qtbot.waitUntil(lambda: not meanings_written(panel))
    drawn = drawn_texts(legend)
    assert [d.text for d in drawn] == ["processed", "selected", "pending", "written now"]
    assert len({round(d.box.bottom()) for d in drawn}) == 1
    assert tooltip_at(legend, drawn[1].center()) == "chosen, not yet processed: no K/V yet (empty cell)"
    panel.resize(900, 500)
    qtbot.waitUntil(lambda: meanings_written(panel))


def test_the_legend_gives_way_before_a_layers_k_and_v_rows_do(qtbot, session):
    session.go(3)                                 # Decode 1: the cells hold their numbers
    panel = shown(qtbot, KVGridPanel(session), 700, 400)
    view = panel.grid_view()
    need = view.header_h + 2 * view.cell_h        # the header, L0 K and L0 V
    seen = set()
    for height in range(200, 420, 10):
        panel.resize(700, height)
        qtbot.wait(5)
        fits = view.viewport().height() >= need
        compact = not meanings_written(panel)
        assert fits or compact, height                         # meanings only while the rows fit
        seen.add((compact, fits))
    assert (True, True) in seen and (False, True) in seen    # some heights fit only with swatches alone


@pytest.mark.parametrize("make_session", [lambda: Session(load_teaching_model(), [1, 2]),
                                          lambda: big_session(prompt_len=40)],
                         ids=["teaching, numbers in cells", "30 layers"])
def test_at_its_minimum_height_the_panel_still_shows_a_layers_k_and_v_rows(qtbot, make_session):
    # a squeezed dock (a 768-line screen) leaves the grid no less than this
    session = make_session()
    session.go(3)
    panel = shown(qtbot, KVGridPanel(session), 700, 400)
    view = panel.grid_view()
    panel.setFixedHeight(panel.minimumSizeHint().height())
    need = view.header_h + 2 * view.cell_h                         # the header, L0 K, L0 V
    qtbot.waitUntil(lambda: view.viewport().height() >= need)     # once the legend gave way
    assert not meanings_written(panel) and panel.height() == panel.minimumSizeHint().height()


def test_sliding_window_layers_are_marked_and_what_they_no_longer_read_is_hatched(qtbot):
    """Layer 0 reads only the latest 3 positions (as Gemma 3's local layers read 512), layer 1
    all: after a 6-token Prefill the last query, at position 5, read positions 3..5, so
    layer 0 no longer reads positions 0..2 (they stay in the cache)."""
    config = DecoderConfig(vocab_size=50, d_model=8, n_layers=2, n_heads=2, n_kv_heads=1, head_dim=4,
                           d_ff=8, positions="rope", max_positions=64, windows=(3, 0))
    model = DecoderModel(config, random_params(config, np.random.default_rng(0)),
                         Vocabulary(tuple(f"t{i}" for i in range(50)), {"eos": 49}), name="windowed")
    session = Session(model, list(range(6)), SamplingConfig(max_new_tokens=2), check_recompute=False)
    panel = shown(qtbot, KVGridPanel(session))
    session.next()
    assert kv_row_heads(panel) == ["L0 K · 3", "L0 V · 3", "L1 K · all", "L1 V · all"]
    assert unread(panel) == [3, 3, 0, 0]
    assert shows(panel, "1 local layers (· 3) read only the latest 3 positions, 1 global ones")
    while session.frame.cache_len < 7:                             # on to Decode 1
        session.next()
    assert unread(panel) == [4, 4, 0, 0]
    session.set_lang("zh")
    assert kv_row_heads(panel)[2] == "L1 K · 全部" and shows(panel, "只读最近3个位置")


def columns_in_view(panel) -> list[int]:
    """The positions whose header and cells are drawn wholly inside the grid's viewport."""
    view = panel.grid_view()
    room = QRect(view.label_w, 0, view.viewport().width() - view.label_w, view.viewport().height())
    drawn = drawn_texts(view.viewport())
    return [col for col in range(panel.session.frame.visible_count)
            if room.contains(head := kv_cell_rect(panel, -1, col)) and any(head.contains(d.center()) for d in drawn)]


def unread(panel) -> list[int]:
    """Per row, how many leading processed positions its layer no longer reads, as hovering
    the cells says."""
    cached = panel.session.frame.cache_len
    return [sum("no longer read by it" in tooltip_of(panel, row, col) for col in range(cached))
            for row in range(len(kv_row_heads(panel)))]
