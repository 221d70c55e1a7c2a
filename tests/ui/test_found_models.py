"""The models on this computer, in the window: the list the Model menu and the model picker
open, filled from fake Ollama, LM Studio and Hugging Face stores, driven by the teacher's
clicks; a model that does not run is listed with its reason and cannot be opened."""

from __future__ import annotations

import json

import numpy as np
import pytest
from gguf import GGUFValueType as V
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QLabel, QStyle

from gguf_files import llama_tensors, tiny, write_llama  # noqa: F401  (tiny: fixture)
from model_stores import stores  # noqa: F401  (stores: fixture)
from teacher import at_rest

from explorer.ui.shell import found_models
from explorer.ui.shell.model_switcher import FIND

@pytest.fixture
def shelves(stores, tmp_path):
    """A runnable Ollama model, a LoRA adapter in LM Studio's folder, an RWKV model in the
    Hugging Face cache."""
    stores.ollama_model("qwen2.5:0.5b", stores.gguf_bytes(1))
    adapter = write_llama(tmp_path / "a.gguf", llama_tensors(np.random.default_rng(5)),
                          extra_kv={"general.type": ("adapter", V.STRING), "adapter.type": ("lora", V.STRING)})
    stores.lmstudio_model("someone/Qwen-LoRA-GGUF/qwen-lora.gguf", adapter.read_bytes())
    rwkv = write_llama(tmp_path / "r.gguf", llama_tensors(np.random.default_rng(6)), arch="rwkv6")
    stores.hf_model("RWKV/rwkv-6-world-GGUF", "rwkv-6-Q8_0.gguf", rwkv.read_bytes())
    return stores


def open_dialog(qtbot, window):
    window.model_switcher.found_action.trigger()
    qtbot.waitUntil(lambda: window.model_switcher.found_dialog is not None
                    and window.model_switcher.found_dialog.isVisible())
    return window.model_switcher.found_dialog


def row_of(dialog, name: str) -> int:
    return next(i for i, m in enumerate(dialog.models) if m.name == name)


def click_row(qtbot, dialog, row: int) -> None:
    table = dialog.table
    rect = table.visualRect(table.model().index(row, 0))
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


def assert_no_clipped_text(dialog) -> None:
    """Every cell's text fits its cell: one line in the columns sized to their contents, the
    reason wrapped inside its row's height."""
    table = dialog.table
    fm = QFontMetrics(table.font())
    last = table.columnCount() - 1
    # an item view draws text inside its cell less this margin on each side (QCommonStyle)
    margin = table.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, table) + 1
    for row in range(table.rowCount()):
        for col in range(table.columnCount()):
            text, width = table.item(row, col).text(), table.columnWidth(col) - 2 * margin
            if col == last:       # a label lays out its text as a document: lines as tall as their glyphs
                probe = QLabel(text, wordWrap=True, font=table.font(), margin=0)
                needed = probe.heightForWidth(width)
                assert needed <= table.rowHeight(row) - 2 * margin, (text, needed, table.rowHeight(row))
            else:
                assert fm.horizontalAdvance(text) <= width, (text, width)
    assert table.horizontalHeader().length() <= table.viewport().width() + 1, "columns beyond the dialog's edge"


def test_the_list_shows_each_model_and_opens_only_those_that_run(qtbot, window, shelves, tmp_path):
    dialog = open_dialog(qtbot, window)
    names = [m.name for m in dialog.models]
    assert set(names) == {"qwen2.5:0.5b", "someone/qwen-lora", "RWKV/rwkv-6-world-GGUF/rwkv-6-Q8_0"}
    cells = lambda row: [dialog.table.item(row, c).text() for c in range(dialog.table.columnCount())]  # noqa: E731
    qwen = cells(row_of(dialog, "qwen2.5:0.5b"))
    assert qwen[1:5] == ["Ollama", "llama", found_models.parameters(dialog.models[row_of(dialog, "qwen2.5:0.5b")]
                                                                   .summary.parameters), "Q8_0"]
    summary = dialog.models[row_of(dialog, "qwen2.5:0.5b")].summary
    assert qwen[-1] == "yes" and qwen[5:7] == [found_models.byte_size(summary.file_size), found_models.byte_size(summary.memory)]
    lora = cells(row_of(dialog, "someone/qwen-lora"))
    assert lora[1] == "LM Studio" and lora[-1].startswith("No: A LoRA adapter")
    rwkv = cells(row_of(dialog, "RWKV/rwkv-6-world-GGUF/rwkv-6-Q8_0"))
    assert rwkv[1] == "Hugging Face" and "Architecture 'rwkv6' is not one this explorer runs" in rwkv[-1]
    assert "looked in" in dialog.places.text().lower() and str(shelves.ollama) in dialog.places.text()

    assert dialog.grab().save(str(tmp_path / "found-models-en.png"))   # a picture to look at when it fails
    assert_no_clipped_text(dialog)

    click_row(qtbot, dialog, row_of(dialog, "someone/qwen-lora"))          # shown, not openable
    assert dialog.selected() is None and not dialog.open_button.isEnabled()
    click_row(qtbot, dialog, row_of(dialog, "qwen2.5:0.5b"))
    assert dialog.open_button.isEnabled()
    qtbot.mouseClick(dialog.open_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.session.model.name == "qwen2.5:0.5b" and at_rest(window))
    assert window.errors == [] and window.model_switcher.found_dialog is None
    assert window.model_switcher.picker.currentData() == "ollama:qwen2.5:0.5b"


def test_the_picker_opens_the_list_and_shows_the_current_model_again(qtbot, window, shelves):
    picker = window.model_switcher.picker
    before = picker.currentData()
    picker.activated.emit(picker.findData(FIND))
    qtbot.waitUntil(lambda: window.model_switcher.found_dialog is not None)
    assert picker.currentData() == before
    window.model_switcher.found_dialog.reject()


def test_a_folder_added_is_searched_and_remembered(qtbot, window, stores, tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "week3").write_bytes(stores.tiny.read_bytes())            # no extension: found by magic
    dialog = open_dialog(qtbot, window)
    assert dialog.models == [] and dialog.empty.isVisible()
    dialog.ask_folder = lambda: str(folder)
    qtbot.mouseClick(dialog.add_button, Qt.MouseButton.LeftButton)
    assert [m.name for m in dialog.models] == ["week3"] and dialog.models[0].source == "folder"
    dialog.reject()
    qtbot.waitUntil(lambda: window.model_switcher.found_dialog is None)
    assert json.loads(window.settings["model_folders"]) == [str(folder)]
    again = open_dialog(qtbot, window)
    assert [m.name for m in again.models] == ["week3"] and str(folder) in again.places.text()
    again.reject()


def test_a_model_bigger_than_the_memory_left_is_listed_with_its_estimate_and_not_opened(qtbot, window, shelves,
                                                                                      monkeypatch):
    monkeypatch.setattr(found_models, "available_memory", lambda: 1000)
    dialog = open_dialog(qtbot, window)
    row = row_of(dialog, "qwen2.5:0.5b")
    needed = found_models.byte_size(dialog.models[row].summary.memory)
    assert dialog.table.item(row, dialog.table.columnCount() - 1).text() == \
        f"No: needs about {needed} of memory, 1 kB is available"
    click_row(qtbot, dialog, row)
    assert not dialog.open_button.isEnabled()
    dialog.reject()


def test_the_list_in_chinese_fits_too(qtbot, window, shelves, tmp_path):
    window.set_lang("zh")
    dialog = open_dialog(qtbot, window)
    assert dialog.windowTitle() == "本机上的模型"
    assert dialog.grab().save(str(tmp_path / "found-models-zh.png"))
    assert_no_clipped_text(dialog)
    dialog.reject()
