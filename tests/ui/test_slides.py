"""Composed slides: every frame of every lesson, in both languages, laid out large with
slide-sized type, no app chrome and nothing cut off."""

from contextlib import contextmanager

import pytest
import pyqtgraph as pg
from PySide6.QtCore import QRect, QRectF
from PySide6.QtWidgets import QAbstractButton, QAbstractSlider, QComboBox, QLabel, QLineEdit

from explorer.session.panels import SLIDE_PANELS
from explorer.export.spec import ExportSpec
from explorer.lessons import lesson_names, load_lesson
from explorer.ui.fonts import register_fonts
from explorer.ui.slides.job import slide_pictures
from explorer.ui.panels.distribution_chart import StageChart
from explorer.ui.panels.kv_legend import KVLegend
from explorer.ui.slides.layout import BODY_PX, GAP_PX, SlideGeometry
from teacher import axis_labels, drawn_texts, shown_texts, table_texts

AXIS_PX = 22          # axis and tick labels at least 22 px at 1080 (body and cells 28: BODY_PX)
CHROME = (QAbstractButton, QComboBox, QAbstractSlider, QLineEdit)   # buttons, check boxes, sliders, scroll bars


@pytest.fixture(scope="module")
def sessions():
    """lesson -> its session, built once (the real model's runs take a while): tests use copies."""
    built = {}

    def session_of(lesson):
        if lesson not in built:
            built[lesson] = load_lesson(lesson).build_session()
        return built[lesson].copy()
    return session_of


@contextmanager
def composer(session, lang="en", **spec):
    """The slide composer of an export with these settings, closed afterwards."""
    register_fonts()
    pictures = slide_pictures(session, ExportSpec(None, lang=lang, **spec))
    try:
        yield pictures
    finally:
        pictures.close()


def placed_on_every_frame(session, pictures):
    for index in range(len(session.frames)):
        session.go(index)
        yield index, pictures.lay_out()


def check_slide(where, frame, pictures, placed, unit=1.0):
    body = pictures.geometry.body
    ids = [panel.panel_id for panel, _, _ in placed]
    named = [p for p in frame.panels if p in ids]
    assert named == [p for p in frame.panels if p in SLIDE_PANELS and p in ids], where                       # the frame's own panels, in its order
    for k, (panel, rect, scale) in enumerate(placed):
        assert body.adjusted(-0.5, -0.5, 0.5, 0.5).contains(rect), (where, panel.panel_id, rect)
        for _, other, _ in placed[k + 1:]:
            assert not rect.intersects(other), (where, panel.panel_id)
        drawn = (panel.width() * scale, panel.height() * scale)        # inside its place, filling it
        assert drawn[0] <= rect.width() + 1 and drawn[1] <= rect.height() + 1, (where, panel.panel_id)
        assert drawn[0] >= rect.width() - 2 or drawn[1] >= rect.height() - 2, (where, panel.panel_id)
        px = panel.font().pointSizeF() * panel.logicalDpiY() / 72 * scale
        assert px >= (BODY_PX if scale == 1 else 22) * unit - 0.5, (where, panel.panel_id, px)
        inside = QRect(0, 0, panel.width(), panel.height())
        if panel.panel_id == "kv":              # the grid's own drawing: whole cells only
            view = panel.grid_view()
            cols, rows = view.places()
            assert rows[-1][0] + view.cell_h <= view.viewport().height() + 1, (where, "kv rows cut")
            assert cols[-1][0] + view.cell_w <= view.viewport().width() + 1, (where, "kv columns cut")
            drawn, n_rows = [r for _, r in rows], len(view.data.row_labels)     # the rows the grid draws from
            if None in drawn:       # layers left out: the first and the last around "…" (or "…" above the last)
                assert drawn[-2:] == [n_rows - 2, n_rows - 1], (where, drawn)
                assert drawn[:2] == [0, 1] or drawn == [None, n_rows - 2, n_rows - 1], (where, drawn)
        if panel.panel_id == "attention":
            keys = key_labels_drawn(panel)
            for (box, _), (other, _) in zip(keys, keys[1:]):
                assert box.right() < other.left(), (where, "key labels overlap", keys)
        if panel.panel_id == "timeline":        # every row it keeps is whole
            table = panel.table
            assert table.verticalHeader().length() <= table.viewport().height() + 1, (where, "timeline rows cut")
        for kind in CHROME:
            for widget in panel.findChildren(kind):
                assert not widget.isVisibleTo(panel), (where, panel.panel_id, type(widget).__name__)
        for label in panel.findChildren(QLabel):
            if not label.isVisibleTo(panel) or not label.text():
                continue
            box = QRect(label.mapTo(panel, label.rect().topLeft()), label.size())
            assert inside.contains(box), (where, panel.panel_id, label.text())
            need = (label.heightForWidth(label.width()) if label.wordWrap()
                    else label.sizeHint().height())
            assert need <= label.height() + 1, (where, panel.panel_id, label.text(), need, label.height())
            if not label.wordWrap():
                assert label.sizeHint().width() <= label.width() + 1, (where, panel.panel_id, label.text())


def check_type(where, placed, unit=1.0):
    """At 1920x1080 every panel keeps the slide's body type at the scale it is drawn at (28 px:
    text, cells, the cache's status line and legend), and the labels a panel paints itself
    (chart ticks and values, the cache grid's cells and headings) stay at least 22 px; the
    cache grid's own words at 28."""
    for panel, _, scale in placed:
        body = panel.font().pointSizeF() * panel.logicalDpiY() / 72 * scale
        assert body >= BODY_PX * unit - 0.5, (where, panel.panel_id, f"drawn at {scale:.2f}: body type {body:.1f} px")
        if panel.panel_id == "kv":
            painted, least = [panel.grid_view().viewport(), panel.findChild(KVLegend)], BODY_PX * unit
        else:
            painted, least = panel.findChildren(StageChart), AXIS_PX * unit
        for widget in painted:
            sizes = [d.point_size * widget.logicalDpiY() / 72 * scale for d in texts_painted(widget)]
            assert min(sizes, default=least) >= least - 0.5, (where, panel.panel_id, type(widget).__name__,
                                                             f"text drawn at {min(sizes):.1f} px")


def texts_painted(widget):
    """What `widget` paints (a slide copy takes no updates: drawable while it is read)."""
    widget.setUpdatesEnabled(True)
    try:
        return drawn_texts(widget)
    finally:
        widget.setUpdatesEnabled(False)


def key_labels_drawn(panel) -> list[tuple[QRectF, str]]:
    """(box, text) of the labels the attention panel's key axis draws, left to right."""
    axis = panel.findChild(pg.PlotWidget).getPlotItem().getAxis("bottom")
    return sorted(axis_labels(axis), key=lambda label: label[0].left())


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("lesson", lesson_names())
def test_every_frame_of_every_lesson_is_a_slide(qapp, sessions, lesson, lang):
    session = sessions(lesson)
    with composer(session, lang) as pictures:
        for index, placed in placed_on_every_frame(session, pictures):
            assert placed, (lesson, index)
            check_slide(f"{lesson} {lang} frame {index + 1}", session.frames[index], pictures, placed)
            check_type(f"{lesson} {lang} frame {index + 1}", placed)


@pytest.mark.parametrize("lesson, lang", [("wo-ai-to-eos", "en"), ("prefill-decode", "zh")])
def test_a_smaller_slide_has_smaller_type_in_proportion(qapp, sessions, lesson, lang):
    session = sessions(lesson)
    with composer(session, lang, width=1280, height=720) as pictures:
        assert pictures.geometry == SlideGeometry(1280, 720, True)
        for index, placed in placed_on_every_frame(session, pictures):
            check_slide(f"720p {lesson} frame {index + 1}", session.frames[index], pictures, placed, unit=720 / 1080)


def test_a_panel_slide_of_the_cache_fills_the_body(qapp):
    """`--panel kv --frames 6`: the grid is drawn large, not in a corner."""
    session = load_lesson("wo-ai-to-eos").build_session()
    with composer(session, panel="kv") as pictures:
        session.go(5)
        ((panel, rect, scale),) = pictures.lay_out()
        body = pictures.frame_geometry().body            # under the text so far
        assert rect == body and scale == 1
        content = panel.slide_content_size()
        covered = min(content.width(), body.width()) * min(content.height(), body.height())
        assert covered > 0.6 * body.width() * body.height()
        size = min(d.point_size for d in drawn_texts(panel.grid_view().viewport()))
        assert size * panel.logicalDpiY() / 72 > 1.3 * BODY_PX   # grown to fill


def test_thirty_layers_are_elided_around_a_visible_gap(qapp, sessions, smollm2):
    session = sessions("real-model")
    with composer(session, panel="kv") as pictures:
        session.go(1)                                     # the Prefill: 5 positions, 30 layers
        pictures.lay_out()
        panel = pictures.panel_copy("kv")
        cols, rows = panel.grid_view().places()
        drawn = [r for _, r in rows]
        assert drawn[:2] == [0, 1] and drawn[-2:] == [58, 59] and None in drawn     # L0 K/V … L29 K/V
        kept = [r for r in drawn if r is not None]
        assert all(k % 2 == 0 and k + 1 == v for k, v in zip(kept[::2], kept[1::2]))   # whole K/V pairs
        bottom = rows[-1][0] + panel.grid_view().cell_h
        assert bottom <= panel.grid_view().viewport().height()      # the last row is whole, not cut
        assert [c for _, c in cols] == [0, 1, 2, 3, 4]               # five positions have room


def test_a_slide_has_no_interaction_hints(qapp):
    session = load_lesson("wo-ai-to-eos").build_session()
    with composer(session, panel="distribution") as pictures:
        session.go(2)
        ((panel, _, _),) = pictures.lay_out()
        shown = " ".join(label.text() for label in panel.findChildren(QLabel) if label.isVisibleTo(panel))
        assert "Click a bar" not in shown and "学习" in shown


def test_panels_without_anything_to_show_stay_off_the_slide(qapp):
    """A table model has no layers: no empty attention panel or cache grid on its slides;
    before the first forward, no empty distribution (the beam lesson's first frame names one)."""
    session = load_lesson("beam").build_session()
    assert "distribution" in session.frames[0].panels
    with composer(session) as pictures:
        for index, placed in placed_on_every_frame(session, pictures):
            shown = {p.panel_id for p, _, _ in placed}
            assert not shown & {"attention", "kv"}
            assert index > 0 or shown == {"timeline"}


def test_an_empty_panel_asked_for_says_so_without_a_hint_to_click(qapp):
    session = load_lesson("wo-ai-to-eos").build_session()
    with composer(session, panel="distribution") as pictures:
        session.go(0)
        ((panel, _, _),) = pictures.lay_out()
        assert shown_texts(panel) == ["No logits yet: the prompt has not been through the model."]


def test_panel_rects_follow_the_content(qapp):
    """The timeline spans the width above; a grid gets the width it asks for beside a chart."""
    from PySide6.QtCore import QSizeF
    g = SlideGeometry(1920, 1080, True)
    wants = {"timeline": QSizeF(1500, 300), "kv": QSizeF(600, 400), "distribution": None}
    timeline, kv, chart = g.panel_rects(("timeline", "kv", "distribution"), wants)
    assert g.body.height() == 849                  # 1080 less the title, the caption strip and margins
    assert timeline.width() == g.body.width() and timeline.height() == pytest.approx(849 / 2, abs=1)  # its frame
    assert kv.width() == pytest.approx(660) and chart.left() > kv.right()
    assert chart.right() == pytest.approx(g.body.right())
    chart, timeline, kv = g.panel_rects(("distribution", "timeline", "kv"), wants)     # a frame about the chart
    assert timeline.top() == g.body.top() and timeline.height() == pytest.approx(0.3 * 849, abs=1)
    assert chart.height() == pytest.approx(849 - 0.3 * 849 - GAP_PX, abs=1)
    wants["timeline"] = QSizeF(1500, 150)                                                  # a short table: its own size
    _, timeline, _ = g.panel_rects(("distribution", "timeline", "kv"), wants)
    assert timeline.height() == pytest.approx(165, abs=1)
    assert g.panel_rects(("kv",), {"kv": QSizeF(10, 10)}) == [g.body]
    assert isinstance(g.body, QRectF) and g.body.bottom() < g.caption_strip.top()


def test_a_grid_is_widened_and_the_timeline_gives_height_before_either_is_drawn_smaller(qapp):
    """A cache grid whose status line and legend wrap needs less height as it widens (`least`):
    beside a chart it gets the width that fits; when no width up to MAX_SHARE does, the
    timeline above gives it height, down to its own least with its slack."""
    from PySide6.QtCore import QSizeF
    from explorer.ui.slides.layout import MAX_SHARE, SLACK, WIDTH_STEP
    g = SlideGeometry(1920, 1080, True)
    ids, wants = ("timeline", "kv", "attention"), {"timeline": QSizeF(1500, 300), "kv": QSizeF(600, 400),
                                                   "attention": None}
    top = 849 / 2                       # a frame about the timeline: half the body
    below = g.body.height() - top - g.px(GAP_PX)

    def grid(at_900):
        return lambda width: below + 200 if width < 900 else at_900

    timeline, kv, chart = g.panel_rects(ids, wants, {"kv": grid(below - 10), "timeline": lambda w: 200})
    assert 900 <= kv.width() <= 900 + WIDTH_STEP + 1 and timeline.height() == pytest.approx(top, abs=1)
    assert chart.left() > kv.right() and chart.right() == pytest.approx(g.body.right())
    timeline, kv, _ = g.panel_rects(ids, wants, {"kv": grid(below + 60), "timeline": lambda w: 200})
    assert timeline.height() == pytest.approx(top - 60, abs=1) and kv.height() == pytest.approx(below + 60, abs=1)
    assert 900 <= kv.width() <= 900 + WIDTH_STEP + 1      # with that height, the width that fits it
    timeline, kv, _ = g.panel_rects(ids, wants, {"kv": grid(below + 60), "timeline": lambda w: top / SLACK - 20})
    assert timeline.height() == pytest.approx(top - 22, abs=1)   # down to its least with its slack, no further:
    assert kv.width() == pytest.approx(MAX_SHARE * (g.body.width() - g.px(GAP_PX)), abs=1)   # the grid elides


def test_a_slides_cache_legend_names_the_cells_its_grid_has(qapp, sessions, gemma3):
    """The window's legend always names the three states; a slide's only those drawn (the
    Prefill has no selected or pending cell) and the outline only while a forward writes."""
    session = sessions("gemma-wo-ai")
    with composer(session, panel="kv") as pictures:
        for index, meanings in ((2, ["its K/V are in the cache", "thick outline: K/V written by this forward"]),
                                (0, ["known input, not yet processed"])):
            session.go(index)
            ((panel, _, _),) = pictures.lay_out()
            drawn = [d.text for d in texts_painted(panel.findChild(KVLegend))]
            assert [t for t in drawn if len(t) > 12] == meanings, (index, drawn)


def test_a_beam_slide_puts_the_final_beams_beside_the_tree_when_they_do_not_fit_under_it(qapp, sessions):
    session = sessions("beam")
    with composer(session, "zh") as pictures:
        session.go(6)                           # timeline above the beam: four paths, the final list
        placed = {p.panel_id: (p, scale) for p, _, scale in pictures.lay_out()}
        beam, scale = placed["beam"]
        assert scale == 1
        tree, final = beam.tree.geometry(), next(label for label in beam.findChildren(QLabel)
                                                 if "联合概率" in label.text() and label.isVisibleTo(beam))
        assert final.geometry().left() >= tree.right() and final.geometry().top() < tree.bottom()
        session.go(7)                           # the beam alone: room under the tree, type grown
        ((beam, _, scale),) = pictures.lay_out()
        final = next(label for label in beam.findChildren(QLabel) if "联合概率" in label.text())
        assert final.geometry().top() >= beam.tree.geometry().bottom() and scale == 1


def test_three_panel_gemma_slides_keep_the_first_and_the_last_layer_and_name_every_key(qapp, sessions, gemma3):
    """gemma-wo-ai: the Prefill (cache, attention, timeline; the frame is about the cache) had
    room for "…" and layer 17 only, now (the timeline above it its table alone) for layers 0, 1
    and 17; the KV frame's attention named two of its four keys."""
    session = sessions("gemma-wo-ai")
    with composer(session) as pictures:
        session.go(2)
        placed = {panel.panel_id: panel for panel, _, _ in pictures.lay_out()}
        assert set(placed) == {"timeline", "kv", "attention"}
        labels = placed["kv"].grid_view().data.row_labels
        _, rows = placed["kv"].grid_view().places()
        drawn = [None if r is None else labels[r] for _, r in rows]
        assert drawn == ["L0 K · 512", "L0 V · 512", "L1 K · 512", "L1 V · 512", None, "L17 K · all", "L17 V · all"]
        session.go(10)
        panel = next(p for p, _, _ in pictures.lay_out() if p.panel_id == "attention")
        texts = [text for _, text in key_labels_drawn(panel)]
        assert [t.rpartition("·")[2] for t in texts] == ["0", "1", "2", "3"]       # every key, in order
        assert texts[1:] == ["我·1", "爱·2", "我家·3"]


def test_narrow_key_columns_name_every_nth_key_and_mark_the_rest(qapp):
    from PySide6.QtGui import QFont, QFontMetrics
    from explorer.ui.panels.attention import _key_ticks
    font = QFont()
    font.setPixelSize(25)
    fm = QFontMetrics(font)
    cols = [(i + 0.5, f"tok{i}·{i}") for i in range(30)]
    named, marked = _key_ticks(cols, fm, 900)               # 30 px a column: no label fits
    assert named and named[0] == cols[0] and len(named) < len(cols)
    assert sorted(named + [(x, label) for x, label in cols if (x, "") in marked]) == cols   # every key ticked
    named, marked = _key_ticks(cols[:4], fm, 900)            # 225 px a column: every label whole
    assert named == cols[:4] and marked == []
    named, _ = _key_ticks([(0.5, "<|im_start|>·0"), (1.5, "x·1")], fm, 300)   # 150 px a column
    (_, long), (_, short) = named
    assert long.startswith("<|") and long.endswith("…·0") and fm.horizontalAdvance(long) <= 150
    assert short == "x·1"


@pytest.mark.parametrize("lesson, frame", [("sampling", 3),         # p = 1.000 (T = 0), the mark beside its value
                                           ("real-model", 2)])     # p = 0.773, written upwards over 20 bars
def test_the_chosen_mark_stands_clear_of_its_bar(qapp, sessions, lesson, frame):
    """"▼ chosen" over a tall bar was pushed down onto it (written upwards, with no headroom
    for the word: now the mark alone)."""
    from explorer.ui.panels.distribution_chart import BAR_WIDTH
    session = sessions(lesson)
    with composer(session, panel="distribution") as pictures:
        session.go(frame)
        ((panel, _, _),) = pictures.lay_out()
        chart, last = panel.chart, len(panel.chart.rows) - 1
        panel.setUpdatesEnabled(True)               # slide copies take no updates; grab() needs them
        image = chart.grab().toImage()
        background = image.pixelColor(2, 2)
        foot = chart.bar_center(last, 0)
        half = (chart.bar_center(last, 1).x() - foot.x()) * BAR_WIDTH / 2      # a column's width x the bar's share
        left, right = round(foot.x() - half) + 3, round(foot.x() + half) - 3
        top = round(foot.y())
        while image.pixelColor(left, top - 1) != background:      # up through the bar to its top edge
            top -= 1
        assert top < foot.y() - 50                                  # a tall bar
        assert "chosen" in " ".join(chart.rows[last].labels)
        for y in range(top - 3, top):
            assert all(image.pixelColor(x, y) == background for x in range(left, right)), (lesson, y, top)


def test_a_three_panel_gemma_slide_alone_equals_it_after_other_frames(qapp, sessions, gemma3):
    """The Prefill (timeline, cache, attention) composed first, and after the input frames
    (other panels, other sizes and type): the same pixels."""
    from explorer.ui.slides.job import slide_image, slide_text
    session = sessions("gemma-wo-ai")
    spec = ExportSpec(None)
    images = []
    for frames in ([2], [0, 1, 2]):
        with composer(session) as pictures:
            for index in frames:
                session.go(index)
                image = slide_image(pictures, slide_text(session, index, "en", "gemma"), spec)
            images.append(image)
    assert images[0] == images[1]


def test_composing_slides_leaves_the_rest_of_the_application_alone(qapp, sessions):
    """A slide settles its own panels only: an event posted to anything else (the window's
    own panels, when the teacher exports from the window) is still waiting afterwards."""
    from PySide6.QtCore import QCoreApplication, QEvent, QObject

    class Receiver(QObject):
        delivered = 0

        def event(self, event):
            if event.type() == QEvent.Type.User:
                self.delivered += 1
                return True
            return super().event(event)

    receiver = Receiver()
    QCoreApplication.postEvent(receiver, QEvent(QEvent.Type.User))
    session = sessions("wo-ai-to-eos")
    with composer(session) as pictures:
        for index, placed in placed_on_every_frame(session, pictures):
            assert placed, index
    assert receiver.delivered == 0
    QCoreApplication.sendPostedEvents(receiver)
    assert receiver.delivered == 1


def elided_cells(table) -> list[tuple[int, int, str]]:
    """(row, column, text) of every cell of `table` not drawn whole: its text (in lines, where
    the panel wrapped it) wider than its column or taller than its row, measured as the table
    measures a cell, or drawn otherwise than it reads (the view cut it short, ending in "…")."""
    from PySide6.QtGui import QFontMetrics
    from PySide6.QtWidgets import QStyleOptionViewItem
    option = QStyleOptionViewItem()
    option.font, option.fontMetrics, option.widget = table.font(), QFontMetrics(table.font()), table
    panel, model, cut = table.window(), table.model(), []
    panel.setUpdatesEnabled(True)                 # a slide's copy takes no updates: none drawn
    try:
        drawn = drawn_texts(table.viewport())
    finally:
        panel.setUpdatesEnabled(False)
    for r in range(model.rowCount()):
        for c in range(model.columnCount()):
            index, cell = model.index(r, c), table.visualRect(model.index(r, c))
            if table.isColumnHidden(c):
                continue
            size = table.itemDelegate().sizeHint(option, index)
            lines = [d.text.replace("\u2028", "") for d in sorted(drawn, key=lambda d: d.box.top())
                     if cell.contains(d.box.center().toPoint())]
            if size.width() > cell.width() or size.height() > cell.height() or "\n".join(lines) != (index.data() or ""):
                cut.append((r, c, index.data()))
    return cut


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("lesson", lesson_names())
def test_no_timeline_cell_is_cut_on_a_frame_that_shows_the_table(qapp, sessions, lesson, lang):
    """On every frame that names the timeline (the repetition-penalty stop of gemma-wo-ai read
    "Dec…", "停…", "我家…"), the table condenses until every cell is whole."""
    session = sessions(lesson)
    with composer(session, lang) as pictures:
        for index, placed in placed_on_every_frame(session, pictures):
            for panel, _, _ in placed:
                if panel.panel_id == "timeline" and "timeline" in session.frames[index].panels:
                    assert elided_cells(panel.table) == [], (lesson, lang, index + 1)


def test_the_gemma_table_condenses_to_short_labels_and_keeps_every_token(qapp, sessions, gemma3):
    """The repetition-penalty stop, the timeline alone: D1 … D5 with the legend, every token whole."""
    session = sessions("gemma-wo-ai")
    with composer(session, "zh") as pictures:
        session.go(8)
        ((panel, _, scale),) = pictures.lay_out()
        rows = table_texts(panel.table)
        assert [row[0] for row in rows] == ["P", "D1", "D2", "D3", "D4", "D5", "停止"]
        assert [row[5].split(" (")[0] for row in rows] == ["我家", "，", "是", "我的", "梦想", "。", "stop_string"]
        assert panel.legend.isVisibleTo(panel) and panel.legend.text().startswith("步骤：P = Prefill")
        assert elided_cells(panel.table) == [] and scale == 1


def test_smollm2s_byte_tokens_wrap_between_tokens_and_every_step_keeps_its_row(qapp, sessions, smollm2):
    """gemma-wo-ai, SmolLM2 beside Gemma: the table of 我爱's byte tokens is wider than the slide
    even condensed, so the long cells wrap, at token boundaries, and every step keeps its row."""
    session = sessions("gemma-wo-ai")
    with composer(session) as pictures:
        session.go(9)
        panel = next(p for p, _, _ in pictures.lay_out() if p.panel_id == "timeline")
        rows = table_texts(panel.table)
        assert [row[0] for row in rows] == ["P", "D1", "D2", "Stop"]
        assert [row[5].split(" (")[0] for row in rows[:3]] == ["<0xE7>", "<0x88>", "<0xB1>"]
        assert "\n" in rows[0][1]                                 # the prompt's six byte tokens, in lines
        assert rows[0][1].replace("\n", " ") == "<0xE6><0x88> <0x91> <0xE7> <0x88> <0xB1>"
        assert elided_cells(panel.table) == []


def test_a_token_longer_than_its_column_breaks_inside_and_reads_whole(qapp):
    """A piece wider than half the slide, in the input and the cache of every row: it breaks
    where its line is full, its lines read it whole and no cell is cut."""
    import numpy as np
    from explorer.core.decode.sampling import SamplingConfig
    from explorer.core.models.decoder import DecoderConfig, DecoderModel, random_params
    from explorer.core.tokens.vocab import Vocabulary
    from explorer.session import Session
    piece = "abcdefghij" * 9
    config = DecoderConfig(vocab_size=4, d_model=8, n_layers=1, n_heads=1, n_kv_heads=1, head_dim=8, d_ff=8)
    model = DecoderModel(config, random_params(config, np.random.default_rng(0)),
                         Vocabulary(("a", "b", piece, "c")), name="long piece")
    session = Session(model, [2], SamplingConfig(max_new_tokens=2), check_recompute=False)
    with composer(session, panel="timeline") as pictures:
        session.go(len(session.frames) - 1)
        ((panel, _, _),) = pictures.lay_out()
        fed = table_texts(panel.table)[0][1]                     # the Prefill's input: the piece alone
        assert fed.count("\n") >= 1 and fed.replace("\n", "") == piece
        assert elided_cells(panel.table) == []


def test_a_slide_shows_the_text_so_far_once_the_model_wrote_a_token(qapp, sessions):
    """wo-ai-to-eos: no line on the input and Prefill slides; 我爱学习 from the first pick on."""
    from explorer.ui.slides.job import slide_image, slide_text
    session = sessions("wo-ai-to-eos")
    spec = ExportSpec(None)
    with composer(session) as pictures:
        for index, expected in ((0, None), (1, None), (2, "Text so far: 我爱学习"), (4, "Text so far: 我爱学习！"),
                                (7, "Text so far: 我爱学习！")):
            session.go(index)
            slide_image(pictures, slide_text(session, index, "en", "lesson"), spec)
            geometry = pictures.frame_geometry()
            assert geometry.text_line == (expected is not None), index
            if expected:
                line = pictures.text_line()
                assert line.text() == expected
                assert "".join(d.text for d in texts_painted(line)) == expected        # whole, nothing cut
                assert line.font().pixelSize() == BODY_PX
                assert geometry.text_line_rect.bottom() < geometry.body.top()
                timeline = pictures.panel_copy("timeline")
                assert not timeline.text_line.isVisibleTo(timeline)               # drawn once, above the panels


def test_an_own_runs_slides_name_the_model_and_the_prompt(qtbot, tmp_path, capsys):
    from explorer.cli.main import main
    from explorer.ui.app import build_window
    window = build_window(settings_path=str(tmp_path / "settings.ini"), model="teaching", compact=False)
    qtbot.addWidget(window)
    assert window.lesson is None
    name = window.session.model.name
    assert window.lesson_names() == ("explorer", f"Own run · {name} · prompt “我爱”")
    assert main(["export", "--model", "teaching", "--list"]) == 0
    assert f"({name} · prompt “我爱”)" in capsys.readouterr().out.replace("Own run · ", "")
