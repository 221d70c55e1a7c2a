"""The prompt bar's model picker: the teaching model, the named real models (disabled until
installed) and the GGUF files opened in this window."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QSignalBlocker, Qt, Signal
from PySide6.QtWidgets import QComboBox

from ...i18n import add_messages, tr
from ...catalog.registry import MODELS, TEACHING, installed_path

add_messages({
    "picker.teaching": {"en": "Teaching model", "zh": "教学模型"},
    "picker.teaching.tip": {"en": "The course's model: 7 pieces, one layer, one head",
                            "zh": "课程的模型：7个词、一层、一个头"},
    "picker.not_installed": {"en": "Not installed. Install it from the Model menu, or with: {command}",
                             "zh": "未安装。可以从“模型”菜单安装，或执行：{command}"},
    "picker.other": {"en": "This lesson's model: {name}", "zh": "本课的模型：{name}"},
})

OTHER = "\0other"        # key of the item naming a model that is none of the choices


@dataclass(frozen=True)
class ModelChoice:
    key: str             # what load_model takes: "teaching", a name from MODELS, a .gguf path
    label: str
    enabled: bool
    tooltip: str


def model_choices(lang: str, opened: tuple[str, ...] = ()) -> list[ModelChoice]:
    """Every model the window offers, in order."""
    out = [ModelChoice(TEACHING, tr("picker.teaching", lang), True, tr("picker.teaching.tip", lang))]
    for name, spec in MODELS.items():
        if installed_path(name) is None:
            out.append(ModelChoice(name, spec.label, False,
                                   tr("picker.not_installed", lang, command=spec.install_command)))
        else:
            out.append(ModelChoice(name, spec.label, True, spec.description))
    for path in opened:
        out.append(ModelChoice(path, Path(path).name, True, path))
    return out


class ModelPicker(QComboBox):
    """Emits `chosen(key)` when the teacher picks another model; `show_choices` fills it and
    selects the current one (without emitting)."""

    chosen = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.activated.connect(self._activated)
        self._shown: tuple = ()

    def show_choices(self, choices: list[ModelChoice], current: str, other_name: str, lang: str) -> None:
        items = [(c.key, c.label, c.enabled, c.tooltip) for c in choices]
        if current == OTHER:
            items.insert(0, (OTHER, tr("picker.other", lang, name=other_name), False, ""))
        shown = (tuple(items), current)
        if shown == self._shown:
            return
        self._shown = shown
        with QSignalBlocker(self):
            self.clear()
            for i, (key, label, enabled, tip) in enumerate(items):
                self.addItem(label, key)
                self.setItemData(i, tip, Qt.ItemDataRole.ToolTipRole)
                if not enabled:
                    item = self.model().item(i)
                    item.setEnabled(False)
            self.setCurrentIndex(max(0, self.findData(current)))
        self.setToolTip(self.itemData(self.currentIndex(), Qt.ItemDataRole.ToolTipRole) or "")

    def keys(self) -> list[str]:
        return [self.itemData(i) for i in range(self.count())]

    def tooltip(self, key: str) -> str:
        return self.itemData(self.findData(key), Qt.ItemDataRole.ToolTipRole) or ""

    def _activated(self, index: int) -> None:
        key = self.itemData(index)
        if key != OTHER:
            self.chosen.emit(key)
