"""The window on a tiny model of every family (tests/support/family_files.py): opened from
Model → Open model file…, stepped with the keyboard, its panels drawn, one frame exported as a
slide. Gemma 2's windowed layers are marked in the KV grid as Gemma 3's are."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage

from explorer.ui.shell.export_actions import FrameChoice
from family_files import FAMILIES, WINDOW, write_family
from teacher import at_rest, kv_row_heads, shows

LONG = 120_000           # ms: a generous bound for a slow, shared machine, never a speed claim


@pytest.mark.parametrize("arch", sorted(FAMILIES))
def test_a_tiny_model_of_each_family_opens_steps_and_exports_a_slide(qtbot, window, tmp_path, arch):
    path = write_family(tmp_path / f"tiny-{arch}.gguf", arch, "q8_0")
    window.model_switcher.ask_gguf_path = lambda: str(path)
    window.actions["open_gguf"].trigger()
    qtbot.waitUntil(lambda: at_rest(window) and not window.session.behind and window.session.model.name == path.stem,
                    timeout=LONG)
    assert window.errors == []
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    start = window.session.cursor
    qtbot.keyClick(window.focusWidget() or window, Qt.Key_Right)
    qtbot.waitUntil(lambda: window.session.cursor == start + 1 and at_rest(window), timeout=LONG)
    for name in ("attention", "kv", "distribution"):
        assert window.panels[name].has_content(), name
    layers = window.session.model.config.n_layers
    heads = kv_row_heads(window.panels["kv"], every=True)
    assert [h.split(" ")[0] for h in heads[::2]] == [f"L{i}" for i in range(layers)]
    if arch == "gemma2":                      # every other layer reads only the latest WINDOW positions
        assert heads[0] == f"L0 K · {WINDOW}" and heads[2].startswith("L1 K · ")
        assert shows(window.panels["kv"], f"read only the latest {WINDOW} positions")
    target = tmp_path / "slide.png"
    window.ask_export_frame = lambda: FrameChoice(target, panel=None, scale=1)
    window.actions["export_frame"].trigger()
    image = QImage(str(target))
    assert (image.width(), image.height()) == (1920, 1080)
    colours = {image.pixel(x, y) for x in range(0, 1920, 40) for y in range(0, 1080, 40)}
    assert len(colours) > 10                  # a slide with panels on it, not a blank page
