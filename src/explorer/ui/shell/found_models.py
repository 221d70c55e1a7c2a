"""The models already on this computer (Ollama, LM Studio, the Hugging Face cache, folders the
teacher added), one row each with what its header says: architecture, parameters,
quantisation, size, the memory it needs and whether it runs here, or why not. A model that
does not run is shown with its reason and cannot be opened."""

from __future__ import annotations

import json
import math

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QTextLayout, QTextOption
from PySide6.QtWidgets import (QAbstractItemView, QDialog, QDialogButtonBox, QFileDialog, QHeaderView, QLabel,
                               QStyle, QTableWidget, QTableWidgetItem, QVBoxLayout)

from ...catalog.local import FoundModel, find_models, searched_places
from ...catalog.memory import available_memory
from ...i18n import add_messages, tr
from ...units import byte_size

add_messages({
    "found.title": {"en": "Models on this computer", "zh": "本机上的模型"},
    "found.looked": {"en": "Looked in: {places}", "zh": "查找位置：{places}"},
    "found.none": {"en": "No GGUF models found. Add a folder that holds some, or open a file with Model → Open.",
                   "zh": "没有找到GGUF模型。可以添加存放模型的文件夹，或用“模型 → 打开”选择文件。"},
    "found.add_folder": {"en": "Add folder…", "zh": "添加文件夹…"},
    "found.open": {"en": "Open", "zh": "打开"},
    "found.col.name": {"en": "Model", "zh": "模型"},
    "found.col.source": {"en": "Found in", "zh": "来源"},
    "found.col.arch": {"en": "Architecture", "zh": "架构"},
    "found.col.params": {"en": "Parameters", "zh": "参数量"},
    "found.col.quant": {"en": "Quantisation", "zh": "量化"},
    "found.col.size": {"en": "File size", "zh": "文件大小"},
    "found.col.memory": {"en": "Memory needed", "zh": "所需内存"},
    "found.col.runs": {"en": "Runs here?", "zh": "能否运行"},
    "found.yes": {"en": "yes", "zh": "能"},
    "found.too_big": {"en": "No: needs about {needed} of memory, {available} is available",
                      "zh": "不能：约需{needed}内存，当前可用{available}"},
    "found.no": {"en": "No: {reason}", "zh": "不能：{reason}"},
    "found.source.ollama": {"en": "Ollama", "zh": "Ollama"},
    "found.source.lmstudio": {"en": "LM Studio", "zh": "LM Studio"},
    "found.source.huggingface": {"en": "Hugging Face", "zh": "Hugging Face"},
    "found.source.folder": {"en": "your folder", "zh": "你的文件夹"},
})

COLUMNS = ("name", "source", "arch", "params", "quant", "size", "memory", "runs")
REASON_WIDTH = 360        # px: the why-not column wraps at this width instead of widening the dialog


def parameters(n: int) -> str:
    """A parameter count as model names give it: "494M", "1.5B", "180k"."""
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            value = n / size
            return f"{value:.1f}{unit}" if value < 10 else f"{value:.0f}{unit}"
    return str(n)


def wrapped_height(text: str, font: QFont, width: int) -> int:
    """Pixels `text` takes wrapped at `width`, each line as tall as the glyphs it holds."""
    layout = QTextLayout(text, font)
    option = QTextOption()
    option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
    layout.setTextOption(option)
    layout.beginLayout()
    height = 0.0
    while (line := layout.createLine()).isValid():
        line.setLineWidth(width)
        height += line.height()
    layout.endLayout()
    return math.ceil(height)


def saved_folders(text: str) -> list[str]:
    """The folders kept in the settings' "model_folders" (a JSON list of paths)."""
    try:
        folders = json.loads(text) if text else []
    except ValueError:
        return []
    return [f for f in folders if isinstance(f, str)] if isinstance(folders, list) else []


class FoundModelsDialog(QDialog):
    """Accepted with `chosen` set to the key (what `load_model` takes) of a model that runs
    here. "Add folder…" adds a folder to `folders` (the caller remembers them) and looks again."""

    def __init__(self, parent, lang: str, folders: list[str], available: int | None = None):
        super().__init__(parent)
        self.lang, self.folders = lang, list(folders)
        self.available = available_memory() if available is None else available
        self.chosen: str | None = None
        self.models: list[FoundModel] = []
        self.ask_folder = self._ask_folder           # tests answer it
        self.setObjectName("found-models-dialog")
        self.setWindowTitle(tr("found.title", lang))
        layout = QVBoxLayout(self)
        self.places = QLabel(wordWrap=True)
        self.places.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.places)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels([tr(f"found.col.{c}", lang) for c in COLUMNS])
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(True)
        self.table.verticalHeader().setVisible(False)
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.table.itemDoubleClicked.connect(lambda _item: self._open())
        layout.addWidget(self.table)
        self.empty = QLabel(tr("found.none", lang), wordWrap=True)
        layout.addWidget(self.empty)
        buttons = QDialogButtonBox()
        self.add_button = buttons.addButton(tr("found.add_folder", lang), QDialogButtonBox.ButtonRole.ActionRole)
        self.open_button = buttons.addButton(tr("found.open", lang), QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.addButton(tr("cancel", lang), QDialogButtonBox.ButtonRole.RejectRole)
        self.add_button.clicked.connect(self.add_folder)
        self.open_button.clicked.connect(self._open)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.refresh()

    def refresh(self) -> None:
        """Look again in every place, and show what is there."""
        lang = self.lang
        self.places.setText(tr("found.looked", lang, places=tr("list.names", lang).join(
            f"{tr('found.source.' + source, lang)} {path}" for source, path in searched_places(self.folders))))
        self.models = find_models(self.folders)
        self.table.setRowCount(len(self.models))
        for row, m in enumerate(self.models):
            s = m.summary
            cells = (m.name, tr(f"found.source.{m.source}", lang), s.architecture or "?",
                     parameters(s.parameters) if s.parameters else "", s.quantisation, byte_size(s.file_size),
                     byte_size(s.memory) if s.memory else "", self.verdict(m))
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(f"{m.path}\n{text}" if col == 0 else text)
                item.setData(Qt.ItemDataRole.UserRole, row)
                if not self.runs(m):
                    item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsSelectable)
                    item.setForeground(self.palette().placeholderText())
                self.table.setItem(row, col, item)
        header, last = self.table.horizontalHeader(), len(COLUMNS) - 1
        header.setStretchLastSection(False)      # a fixed width: rows are as tall as their wrapped reasons
        for col in range(last):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(last, QHeaderView.ResizeMode.Fixed)
        self.table.setColumnWidth(last, REASON_WIDTH)
        self.table.resizeRowsToContents()
        # the view sizes a row by its font's line spacing; a line with Chinese in it stands
        # taller (the CJK fallback font), and its last line would be cut to "…"
        margin = 2 * (self.table.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameVMargin, None, self.table) + 1)
        for row in range(len(self.models)):
            text = self.table.item(row, last).text()
            needed = wrapped_height(text, self.table.font(), REASON_WIDTH - margin) + margin
            self.table.setRowHeight(row, max(self.table.rowHeight(row), needed))
        self.table.setVisible(bool(self.models))
        self.empty.setVisible(not self.models)
        self.resize(self._fitting_width(), min(720, self.sizeHint().height() + 24 * len(self.models)))
        self._selection_changed()

    def _fitting_width(self) -> int:
        """Wide enough for every column, at least REASON_WIDTH for the reasons."""
        columns = sum(self.table.columnWidth(c) for c in range(len(COLUMNS)))
        return min(1500, columns + 2 * self.table.frameWidth() + 40)

    def too_big(self, m: FoundModel) -> bool:
        return self.available is not None and m.summary.memory > self.available

    def runs(self, m: FoundModel) -> bool:
        return m.summary.supported and not self.too_big(m)

    def verdict(self, m: FoundModel) -> str:
        if not m.summary.supported:
            return tr("found.no", self.lang, reason=m.summary.problem)
        if self.too_big(m):
            return tr("found.too_big", self.lang, needed=byte_size(m.summary.memory),
                      available=byte_size(self.available))
        return tr("found.yes", self.lang)

    def selected(self) -> FoundModel | None:
        rows = {i.row() for i in self.table.selectedItems()}
        return self.models[rows.pop()] if len(rows) == 1 else None

    def select(self, key: str) -> None:
        """Select the row of the model with this key (as a click does)."""
        row = next(i for i, m in enumerate(self.models) if m.key == key)
        self.table.selectRow(row)

    def _selection_changed(self) -> None:
        m = self.selected()
        self.open_button.setEnabled(m is not None and self.runs(m))

    def _open(self) -> None:
        m = self.selected()
        if m is not None and self.runs(m):
            self.chosen = m.key
            self.accept()

    def add_folder(self) -> None:
        folder = self.ask_folder()
        if folder and folder not in self.folders:
            self.folders.append(folder)
            self.refresh()

    def _ask_folder(self) -> str:
        return QFileDialog.getExistingDirectory(self, tr("found.add_folder", self.lang))
