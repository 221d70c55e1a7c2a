"""Prefix caching: a request that shares its start with a cached one reuses those positions'
K/V and computes only the rest, with the logits of a Prefill from scratch; a changed token
invalidates every cached position from it on. The KV bytes per layer kind (Gemma 3)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from PySide6.QtWidgets import QLabel

from explorer.core.models.decoder import DecoderConfig, DecoderModel, random_params
from explorer.core.decode.generate import generate, prefix_cache_of
from explorer.core.models.kv_memory import kv_memory
from explorer.core.decode.prefix_cache import PrefixCache, match_prefix
from explorer.core.decode.sampling import SamplingConfig
from explorer.core.models.teaching import load_teaching_model
from explorer.core.tokens.vocab import Vocabulary
from explorer.session import Session
from explorer.session.session import FramePlan, Scenario
from explorer.ui.panels.kv import KVGridPanel
from explorer.ui.panels.kv_legend import KVLegend
from explorer.ui.panels.timeline import TimelinePanel
from teacher import drawn_texts, kv_cell_text, kv_written, shows, table_texts

TEACHING = load_teaching_model()
RECOMPUTE_TOLERANCE = 1e-9          # float64: the teaching model's cached steps against a full recompute
FLOAT32_TOLERANCE = 1e-3            # a real model's float32 logits of magnitude ~20 (as its recompute check)
GEMMA_LIKE = DecoderConfig(vocab_size=262_144, d_model=640, n_layers=18, n_heads=4, n_kv_heads=1, head_dim=256,
                           windows=(512, 512, 512, 512, 512, 0) * 3)


# ---------------------------------------------------------------------------- which positions

@pytest.mark.parametrize("cached, new, reused, invalidated", [
    ([1, 2, 3, 4], [1, 2, 3, 4, 5, 6], 4, ()),          # a continuation: every cached position reused
    ([1, 2, 3, 4], [1, 2, 9, 4, 5], 2, (2, 3)),          # position 2 changed: 2 and 3 are stale (3 too: same token)
    ([1, 2, 3, 4], [9, 2, 3, 4], 0, (0, 1, 2, 3)),       # the first token changed: nothing to reuse
    ([1, 2, 3], [1, 2, 3], 2, ()),                       # the same prompt: the last position runs for its logits
    ([1, 2, 3, 4], [1, 2], 1, ()),                       # a shorter request: positions 2, 3 unused, not stale
])
def test_a_changed_token_invalidates_every_cached_position_after_it(cached, new, reused, invalidated):
    match = match_prefix(cached, new)
    assert (match.reused, match.invalidated) == (reused, invalidated)


def test_the_lookup_finds_the_longest_shared_prefix_and_never_changes_what_is_stored():
    first = generate(TEACHING, [1, 2, 3], SamplingConfig(max_new_tokens=2))          # caches 我爱学习 + its pick
    other = generate(TEACHING, [1, 4], SamplingConfig(max_new_tokens=1))
    store = prefix_cache_of(TEACHING, [other, first])
    assert len(store) == 2 and store.positions == len(first.visible_ids) - 1 + 2
    # one position of the teaching model: K and V (2) x 1 head x 4 numbers x 8 bytes (float64) = 64 bytes
    assert store.nbytes == 64 * store.positions
    stored = {ids: cache for ids, cache in store._entries.items()}
    before = {ids: (len(c), c.keys(0).copy()) for ids, c in stored.items()}
    hit = store.lookup([1, 2, 3, 4])
    assert hit.cached_ids == first.visible_ids[:first.cache_len] and hit.reused == 3
    assert hit.stored_bytes == store.nbytes and len(hit.cache) == 3
    run = generate(TEACHING, [1, 2, 3, 4], SamplingConfig(max_new_tokens=3), prefix=hit)
    assert run.steps[0].positions == (3,) and len(run.steps[0].trace.key_ids) == 4
    for ids, cache in stored.items():          # the stored caches and the hit's copy are as they were
        assert len(cache) == before[ids][0] and np.array_equal(cache.keys(0), before[ids][1])
    assert len(hit.cache) == 3
    assert PrefixCache().lookup([1, 2]) is None


def test_the_records_say_how_many_positions_were_reused_and_computed_and_the_time_to_first_token():
    first = generate(TEACHING, [1, 2, 3], SamplingConfig(max_new_tokens=1))
    hit = prefix_cache_of(TEACHING, [first]).lookup([1, 2, 4, 5])
    run = generate(TEACHING, [1, 2, 4, 5], SamplingConfig(max_new_tokens=2), prefix=hit)
    prefill = run.steps[0]
    assert (prefill.reused_positions, prefill.computed_positions) == (2, 2)
    assert (prefill.cache_len_before, prefill.cache_len_after, prefill.positions) == (2, 4, (2, 3))
    assert all(s.reused_positions == 0 for s in run.steps[1:]) and run.prefix is hit
    assert run.time_to_first_token > 0 and first.time_to_first_token > 0      # measured, not asserted on


@settings(max_examples=40, deadline=None)
@given(cached=st.lists(st.integers(0, 6), min_size=1, max_size=8),
       new=st.lists(st.integers(0, 6), min_size=1, max_size=8), shared=st.integers(0, 8))
def test_a_prefill_after_a_cached_prefix_gives_the_logits_of_a_prefill_from_scratch(cached, new, shared):
    new = cached[:shared] + new                     # a request sharing `shared` (or fewer) leading tokens
    first = generate(TEACHING, cached, SamplingConfig(max_new_tokens=1), check_recompute=False)
    hit = prefix_cache_of(TEACHING, [first]).lookup(new)
    run = generate(TEACHING, new, SamplingConfig(max_new_tokens=3), prefix=hit)
    assert hit.reused == match_prefix(cached, new).reused
    assert run.steps[0].positions == tuple(range(hit.reused, len(new)))
    scratch = TEACHING.prefill(new)[0].logits                                        # [n, V]
    assert np.max(np.abs(run.steps[0].trace.logits - scratch[hit.reused:])) < RECOMPUTE_TOLERANCE
    assert run.max_recompute_diff < RECOMPUTE_TOLERANCE          # every Decode step after it too
    assert run.output_ids == generate(TEACHING, new, SamplingConfig(max_new_tokens=3)).output_ids


def test_a_rerun_that_reuses_the_prefill_rebuilds_its_cache_from_the_prefix_too():
    """A what-if at step 1 reuses the Prefill's trace and recomputes Decode 1 on a cache rebuilt
    from the traces: the reused positions must come from the prefix cache's copy."""
    first = generate(TEACHING, [1, 2, 3], SamplingConfig(max_new_tokens=1))
    hit = prefix_cache_of(TEACHING, [first]).lookup([1, 2, 3, 5])
    run = generate(TEACHING, [1, 2, 3, 5], SamplingConfig(max_new_tokens=3), prefix=hit)
    what_if = generate(TEACHING, [1, 2, 3, 5], SamplingConfig(max_new_tokens=3), prefix=hit, reuse=run,
                       overrides={0: 4})
    fresh = generate(TEACHING, [1, 2, 3, 5], SamplingConfig(max_new_tokens=3), prefix=hit, overrides={0: 4})
    assert what_if.steps[0].trace is run.steps[0].trace
    assert what_if.output_ids == fresh.output_ids and what_if.max_recompute_diff < RECOMPUTE_TOLERANCE


def test_a_prefix_from_a_run_without_one_is_not_taken_for_the_same_forward():
    plain = generate(TEACHING, [1, 2, 3], SamplingConfig(max_new_tokens=2))
    hit = prefix_cache_of(TEACHING, [generate(TEACHING, [1, 2], SamplingConfig(max_new_tokens=1))]).lookup([1, 2, 3])
    run = generate(TEACHING, [1, 2, 3], SamplingConfig(max_new_tokens=2), prefix=hit, reuse=plain)
    assert run.steps[0].positions == (2,) and run.steps[0].reused_positions == 2


@pytest.mark.parametrize("name", ["smollm2", "gemma3"])
def test_on_real_models_the_second_request_equals_a_prefill_from_scratch(request, name):
    model = request.getfixturevalue(name)
    first_ids = model.vocab.encode("The capital of France is Paris. The capital of Italy is")
    second_ids = model.vocab.encode("The capital of France is Paris. The capital of Spain is")
    first = generate(model, first_ids, SamplingConfig(max_new_tokens=1), check_recompute=False)
    hit = prefix_cache_of(model, [first]).lookup(second_ids)
    shared = next(i for i, (a, b) in enumerate(zip(first_ids, second_ids)) if a != b)    # counted here, by hand
    assert hit.reused == shared and hit.match.invalidated == tuple(range(shared, len(first_ids)))
    run = generate(model, second_ids, SamplingConfig(max_new_tokens=1), prefix=hit, check_recompute=False)
    kept = run.steps[0].trace.logits                    # [m, V] a real model keeps the last position's row
    scratch = model.reference_logits(second_ids, len(kept))                              # [m, V] from scratch
    assert np.max(np.abs(kept - scratch)) < FLOAT32_TOLERANCE
    assert run.steps[0].selected_id == int(np.argmax(scratch[-1]))


# ---------------------------------------------------------------------------- KV bytes per layer kind

def test_the_kv_bytes_of_gemma3_are_given_per_layer_kind():
    """15 sliding-window layers keep at most 512 positions, 3 global layers keep all; one
    position in one layer: K and V (2) x 1 K/V head x 256 numbers x 4 bytes = 2,048 bytes."""
    memory = kv_memory(GEMMA_LIKE, itemsize=4)
    local, glob = memory.kinds
    assert (local.window, local.layers, glob.window, glob.layers) == (512, 15, 0, 3)
    assert local.bytes_per_layer == glob.bytes_per_layer == 2 * 1 * 256 * 4 == 2048
    assert (local.bytes_per_position, glob.bytes_per_position) == (30_720, 6_144)
    assert memory.bytes_per_position == 36_864
    assert memory.bytes_at(100) == 100 * 36_864 == 3_686_400
    assert memory.bytes_at(512) == 18_874_368
    assert memory.bytes_at(600) == 15 * 512 * 2048 + 3 * 600 * 2048 == 19_415_040   # the windows are full


def test_the_kv_bytes_of_the_installed_gemma3_follow_its_config(gemma3):
    memory = kv_memory(gemma3.config, np.dtype(gemma3.dtype).itemsize)
    assert [(k.window, k.layers, k.bytes_per_layer) for k in memory.kinds] == [(512, 15, 2048), (0, 3, 2048)]


def test_a_model_with_only_global_layers_has_one_kind():
    (kind,) = kv_memory(TEACHING.config, 8).kinds
    assert (kind.window, kind.layers, kind.bytes_per_layer) == (0, 1, 64) and kind.bytes_at(10) == 640


def test_the_kv_grid_gives_the_bytes_per_layer_kind(qtbot):
    config = DecoderConfig(vocab_size=50, d_model=8, n_layers=3, n_heads=2, n_kv_heads=1, head_dim=4,
                           d_ff=8, positions="rope", windows=(3, 3, 0))
    model = DecoderModel(config, random_params(config, np.random.default_rng(0)),
                         Vocabulary(tuple(f"t{i}" for i in range(50)), {"eos": 49}), name="windowed")
    session = Session(model, list(range(5)), SamplingConfig(max_new_tokens=1), check_recompute=False)
    panel = KVGridPanel(session)
    qtbot.addWidget(panel)
    panel.resize(1200, 500)
    session.next()                     # the Prefill: 5 positions; one position in one layer = 2 x 1 x 4 x 8 = 64 B
    assert shows(panel, "K/V per position: local 2 × 64 B (≤ 3 kept), global 1 × 64 B; at 5 positions: 704 B")
    (status,) = [label for label in panel.findChildren(QLabel) if "K/V per position" in label.text()]
    assert "64 = 2 × 1 × 4 × 8" in status.toolTip()
    assert "At 5 positions = 2 × 3 × 64 + 1 × 5 × 64 = 704 bytes" in status.toolTip()
    session.set_lang("zh")
    assert shows(panel, "每个位置的K/V：局部2层 × 64 B（最多留3个），全局1层 × 64 B；5个位置：704 B")


# ---------------------------------------------------------------------------- what the panels show

def prefix_session(second_prompt=(1, 2, 4, 5)):
    """Request 1 (我爱学习) and request 2 sharing 我爱, on the teaching model."""
    scenarios = (Scenario(TEACHING, (1, 2, 3), SamplingConfig(max_new_tokens=1), name="base"),
                 Scenario(TEACHING, tuple(second_prompt), SamplingConfig(max_new_tokens=2), name="second",
                          prefix_from="base"))
    plans = (FramePlan(0, "prefill", 0), FramePlan(1, "input", None), FramePlan(1, "prefill", 0),
             FramePlan(1, "stop", -1))
    return Session(TEACHING, (1, 2), scenarios=scenarios, plans=plans)


def legend_text(panel) -> str:
    """The KV grid legend's words as drawn, its wrapped lines joined."""
    return " ".join(d.text for d in drawn_texts(panel.findChild(KVLegend)))


def test_the_timeline_says_reused_and_computed_for_such_a_prefill(qtbot):
    session = prefix_session()
    panel = TimelinePanel(session)
    qtbot.addWidget(panel)
    assert table_texts(panel.table)[0][2] == "0, 1, 2"                      # request 1: a Prefill from scratch
    session.go(2)
    assert table_texts(panel.table)[0][2] == "reused 2, computed 2: 2, 3"
    assert "2 positions from the prefix cache" in panel.speed.text()
    session.set_lang("zh")
    assert table_texts(panel.table)[0][2] == "复用2个，计算2个：2, 3"


def test_the_kv_grid_marks_reused_and_invalidated_positions_and_the_prefix_caches_bytes(qtbot):
    session = prefix_session()
    panel = KVGridPanel(session)
    qtbot.addWidget(panel)
    panel.resize(1000, 600)
    panel.show()
    qtbot.waitExposed(panel)
    assert [kv_cell_text(panel, 0, c).split("\n")[0] for c in range(3)] == ["processed"] * 3   # request 1
    assert "prefix cache" not in legend_text(panel)
    session.go(2)                      # request 2's Prefill: 我爱 reused; 学习 at position 2 was cached, 你 is not
    labels = [kv_cell_text(panel, row, c).split("\n")[0] for row in (0, 1) for c in range(4)]
    assert labels == ["reused", "reused", "invalidated", "processed"] * 2
    assert kv_written(panel) == [2, 3]
    legend = legend_text(panel)
    assert "taken from the prefix cache" in legend
    assert "computed again" in legend
    # the prefix cache holds request 1's 3 positions x 64 bytes
    assert shows(panel, "prefix cache: 3 positions (192 B) · reused 2, computed 2 · token changed at position 2: "
                        "1 cached positions invalidated")
    first_run = session.run_at(0)[0]
    k0 = first_run.steps[0].trace.layers[0].k[0, 0]        # [e] a reused cell's key, as request 1 computed it
    assert f"{k0[0]:.3f}" in panel.tooltip_text(0, 0)
    session.set_lang("zh")
    assert kv_cell_text(panel, 0, 0).split("\n")[0] == "复用" and kv_cell_text(panel, 0, 2).split("\n")[0] == "失效"


def test_the_marks_are_readable_in_both_palettes(qtbot):
    from explorer.ui.theme import THEMES, text_on
    from explorer.ui.panels.kv_cells import MARK_FILLS
    from PySide6.QtGui import QColor

    def contrast(a, b):
        def lum(c):
            c = QColor(c)
            ch = [v / 255 for v in (c.red(), c.green(), c.blue())]
            ch = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in ch]
            return 0.2126 * ch[0] + 0.7152 * ch[1] + 0.0722 * ch[2]
        hi, lo = sorted((lum(a), lum(b)), reverse=True)
        return (hi + 0.05) / (lo + 0.05)

    for theme in THEMES.values():
        fills = [getattr(theme, MARK_FILLS[m]) for m in MARK_FILLS] + [theme.processed]
        assert len(set(fills)) == 3, theme.name                   # apart from each other and from processed
        for fill in fills:
            assert contrast(fill, text_on(fill)) >= 4.5, (theme.name, fill)


def test_a_teachers_change_keeps_request_2_on_the_prefix_cache():
    session = prefix_session()
    session.go(2)
    before = session.run
    session.set_sampling(mode="sample", temperature=1.5, seed=3)
    run = session.run
    assert run is not before and run.prefix.reused == 2 and run.steps[0].positions == (2, 3)
    assert run.steps[0].trace is before.steps[0].trace           # the same Prefill, its selection redone
    assert run.max_recompute_diff < RECOMPUTE_TOLERANCE
