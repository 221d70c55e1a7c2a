"""The explanation panel: a setting that changes a number rewrites just that paragraph,
and the text then reads exactly as a freshly built panel shows it."""

import pytest

from explorer.core.models.teaching import load_teaching_model
from explorer.session import Session
from explorer.ui.panels.explanation import ExplanationPanel
from teacher import dotted_in, links_in


def fragments(panel):
    """(text, link, dotted) of every fragment of the document, in order."""
    out, block = [], panel.view.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            f = it.fragment()
            fmt = f.charFormat()
            out.append((f.text(), fmt.anchorHref(), fmt.underlineStyle()))
            it += 1
        block = block.next()
    return out


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_changed_number_rewrites_one_paragraph_and_reads_like_a_fresh_panel(qtbot, lang):
    session = Session(load_teaching_model(), [1, 2])
    session.set_lang(lang)
    session.set_sampling(mode="sample", temperature=0.7, seed=0)
    session.go(next(i for i, f in enumerate(session.frames) if f.kind == "pick"))
    panel = ExplanationPanel(session)
    qtbot.addWidget(panel)
    full_resets = []
    set_html = panel.view.setHtml
    panel.view.setHtml = lambda html: (full_resets.append(1), set_html(html))
    before = panel.view.toPlainText()
    for t in (1.1, 1.6, 2.4):
        session.set_sampling(temperature=t)
    assert panel.view.toPlainText() != before            # the pick's numbers changed
    assert full_resets == []                              # ... without rebuilding the text
    fresh = ExplanationPanel(session)
    qtbot.addWidget(fresh)
    assert panel.view.toPlainText() == fresh.view.toPlainText()
    assert fragments(panel) == fragments(fresh)
    shown, fresh_shown = panel.view.document(), fresh.view.document()
    assert dotted_in(shown) == dotted_in(fresh_shown) and links_in(shown, "term") == links_in(fresh_shown, "term")


def test_another_language_rebuilds_the_headings(qtbot):
    session = Session(load_teaching_model(), [1, 2])
    panel = ExplanationPanel(session)
    qtbot.addWidget(panel)
    session.set_lang("zh")
    assert "发生了什么" in panel.view.toPlainText() and "What happened" not in panel.view.toPlainText()
