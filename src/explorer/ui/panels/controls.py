"""Sampling controls: every setting of the sampler as a widget that reruns the session live
(on every slider tick, not on release)."""

from __future__ import annotations

from contextlib import ExitStack

from PySide6.QtCore import QObject, QSignalBlocker, Qt, Signal
from PySide6.QtWidgets import (QComboBox, QDoubleSpinBox, QGridLayout, QLabel, QLineEdit, QSlider,
                               QSpinBox, QVBoxLayout)

from ...core.tokens.bpe import BPEVocabulary
from ...core.errors import ExplorerError
from ...core.limits import MAX_BEAMS, MAX_NEW_TOKENS, MAX_SEED
from ...core.decode.sampling import MODES, ORDER_PRESETS
from ...i18n import add_messages, stage_label
from ...session import Session
from .panel import Panel

STOP_EXAMPLES = {False: "！, 。", True: "., !"}   # the course's Chinese / a real model's English
TOP_K_SLIDER_MAX = 50         # the spin box goes up to the vocabulary size

# field -> (low, high, decimals) of its slider + spin box pair
NUMBERS = {
    "temperature": (0.0, 3.0, 2),
    "top_k": (0, TOP_K_SLIDER_MAX, 0),
    "top_p": (0.01, 1.0, 2),
    "min_p": (0.0, 1.0, 2),
    "repetition_penalty": (0.5, 2.0, 2),
}

HINTED = {*NUMBERS, "stop_strings"}   # rows with a "0 = off"-style hint below them

add_messages({
    "controls.mode": {"en": "Mode", "zh": "方式"},
    "controls.mode.greedy": {"en": "greedy", "zh": "贪心"},
    "controls.mode.sample": {"en": "sample", "zh": "抽样"},
    "controls.mode.beam": {"en": "beam search", "zh": "束搜索"},
    "controls.temperature": {"en": "Temperature", "zh": "温度"},
    "controls.temperature.hint": {"en": "0 = greedy", "zh": "0 = 贪心"},
    "controls.temperature.unused": {"en": "Not used by greedy or beam search",
                                    "zh": "贪心和束搜索不使用温度：直接取最高的Token"},
    "controls.top_k": {"en": "Top-k", "zh": "Top-k"},
    "controls.top_k.hint": {"en": "0 = off", "zh": "0 = 关闭"},
    "controls.top_p": {"en": "Top-p", "zh": "Top-p"},
    "controls.top_p.hint": {"en": "1 = off", "zh": "1 = 关闭"},
    "controls.min_p": {"en": "Min-p", "zh": "Min-p"},
    "controls.min_p.hint": {"en": "0 = off", "zh": "0 = 关闭"},
    "controls.repetition_penalty": {"en": "Repetition penalty", "zh": "重复惩罚"},
    "controls.repetition_penalty.hint": {"en": "1 = off", "zh": "1 = 关闭"},
    "controls.seed": {"en": "Seed", "zh": "随机种子"},
    "controls.max_new_tokens": {"en": "Max new tokens", "zh": "最多生成Token数"},
    "controls.stop_strings": {"en": "Stop strings", "zh": "停止字符串"},
    "controls.stop_strings.hint": {"en": "comma-separated, Enter to apply",
                                   "zh": "用逗号分隔，按回车应用"},
    "controls.order": {"en": "Order", "zh": "处理顺序"},
    "controls.order.hf": {"en": "Hugging Face / vLLM", "zh": "Hugging Face / vLLM"},
    "controls.order.llama.cpp": {"en": "llama.cpp", "zh": "llama.cpp"},
    "controls.num_beams": {"en": "Beam width", "zh": "束宽"},
    "controls.rejected": {"en": "{setting}: not applied. {error}", "zh": "{setting}：未应用。{error}"},
})


class NumberControl(QObject):
    """A slider and a spin box for one number; moving either moves the other and emits
    `changed(value)` (an int when decimals is 0). The slider counts in steps of
    10**-decimals, so its value v means v / 10**decimals exactly as typed."""

    changed = Signal(object)

    def __init__(self, low: float, high: float, decimals: int, parent=None):
        super().__init__(parent)
        self.scale = 10 ** decimals
        self.decimals = decimals
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(round(low * self.scale), round(high * self.scale))
        self.slider.setPageStep(max(1, self.scale // 10))
        self.spin = QSpinBox() if decimals == 0 else QDoubleSpinBox(decimals=decimals)
        self.spin.setRange(low, high)
        self.spin.setSingleStep(1 / self.scale)
        self.spin.setKeyboardTracking(False)       # typing "1.5" does not rerun at "1" first
        self.slider.valueChanged.connect(self._from_slider)
        self.spin.valueChanged.connect(self._from_spin)

    def value(self):
        return self.spin.value()

    def set_value(self, value) -> None:
        """Show a value without emitting (the session changed it). Widgets already showing
        it are left alone: a spin box repaints on every setValue, even an unchanged one."""
        with QSignalBlocker(self.slider), QSignalBlocker(self.spin):
            if self.spin.value() != value:
                self.spin.setValue(value)
            _set_value(self.slider, round(value * self.scale))

    def _from_slider(self, ticks: int) -> None:
        value = ticks if self.decimals == 0 else ticks / self.scale
        with QSignalBlocker(self.spin):
            self.spin.setValue(value)
        self.changed.emit(value)

    def _from_spin(self, value) -> None:
        with QSignalBlocker(self.slider):
            self.slider.setValue(round(value * self.scale))
        self.changed.emit(value)


class SamplingControls(Panel):
    panel_id = "controls"
    title_key = "controls.title"

    def __init__(self, session: Session, parent=None):
        super().__init__(session, parent)
        self.mode_combo = QComboBox()
        for mode in MODES:
            self.mode_combo.addItem(mode, mode)
        self.numbers = {name: NumberControl(*spec, parent=self) for name, spec in NUMBERS.items()}
        self.seed_spin = QSpinBox(maximum=MAX_SEED)
        self.max_new_spin = QSpinBox(minimum=1, maximum=MAX_NEW_TOKENS)
        self.beams_spin = QSpinBox(minimum=1, maximum=MAX_BEAMS)
        self.stop_edit = QLineEdit()
        self.order_combo = QComboBox()
        for preset in ORDER_PRESETS:
            self.order_combo.addItem(preset, preset)
        self.order_text = QLabel(wordWrap=True)
        self.error_label = self.tinted(QLabel(wordWrap=True), "error")
        self._labels: dict[str, QLabel] = {}
        self._hints: dict[str, QLabel] = {}
        self._layout()
        self._connect()
        self.refresh()

    def slider(self, name: str) -> QSlider:
        return self.numbers[name].slider

    def spin(self, name: str):
        return self.numbers[name].spin

    # ------------------------------------------------------------------ building
    def _layout(self) -> None:
        grid = QGridLayout()
        grid.setColumnStretch(1, 1)
        rows = [("mode", self.mode_combo), *self.numbers.items(), ("seed", self.seed_spin),
                ("max_new_tokens", self.max_new_spin), ("num_beams", self.beams_spin),
                ("stop_strings", self.stop_edit), ("order", self.order_combo)]
        r = 0
        for name, widget in rows:
            self._labels[name] = QLabel()
            grid.addWidget(self._labels[name], r, 0)
            if isinstance(widget, NumberControl):
                grid.addWidget(widget.slider, r, 1)
                grid.addWidget(widget.spin, r, 2)
            else:
                grid.addWidget(widget, r, 1, 1, 2)
            r += 1
            if name in HINTED:
                self._hints[name] = self.tinted(QLabel(wordWrap=True), "muted")
                grid.addWidget(self._hints[name], r, 1, 1, 2)
                r += 1
        grid.addWidget(self.order_text, r, 1, 1, 2)
        layout = QVBoxLayout(self)
        layout.addLayout(grid)
        layout.addWidget(self.error_label)
        layout.addStretch(1)
        self.error_label.hide()

    def _connect(self) -> None:
        self.mode_combo.currentIndexChanged.connect(
            lambda _i: self._apply("mode", self.mode_combo.currentData()))
        for name, control in self.numbers.items():
            control.changed.connect(lambda value, name=name: self._apply(name, value))
        self.seed_spin.valueChanged.connect(lambda v: self._apply("seed", v))
        self.max_new_spin.valueChanged.connect(lambda v: self._apply("max_new_tokens", v))
        self.beams_spin.valueChanged.connect(lambda v: self._apply("num_beams", v))
        self.stop_edit.editingFinished.connect(
            lambda: self._apply("stop_strings", parse_stop_strings(self.stop_edit.text())))
        self.order_combo.currentIndexChanged.connect(
            lambda _i: self._apply("order", self.order_combo.currentData()))

    # ------------------------------------------------------------------ applying
    def _apply(self, field: str, value) -> None:
        """Rerun with one setting changed; a rejected value is named in red, nothing changes."""
        try:
            self.session.set_sampling(**{field: value})
        except ExplorerError as err:
            self.error_label.setText(self.tr("controls.rejected", setting=self._setting_name(field),
                                             error=err))
            self.error_label.show()
            return
        self.error_label.hide()

    def _setting_name(self, field: str) -> str:
        return self.tr(f"controls.{field}")

    # ------------------------------------------------------------------ showing the session
    def refresh(self) -> None:
        self._retranslate()
        config = self.session.config
        vocab_size = len(self.session.model.vocab)
        with ExitStack() as blocked:
            for widget in (self.mode_combo, self.seed_spin, self.max_new_spin, self.beams_spin,
                           self.stop_edit, self.order_combo, self.spin("top_k"), self.slider("top_k")):
                blocked.enter_context(QSignalBlocker(widget))
            if self.spin("top_k").maximum() != vocab_size:
                self.spin("top_k").setMaximum(vocab_size)
            if self.slider("top_k").maximum() != min(TOP_K_SLIDER_MAX, vocab_size):
                self.slider("top_k").setMaximum(min(TOP_K_SLIDER_MAX, vocab_size))
            for name, control in self.numbers.items():
                control.set_value(getattr(config, name))
            self.mode_combo.setCurrentIndex(self.mode_combo.findData(config.mode))
            _set_value(self.seed_spin, config.seed)
            _set_value(self.max_new_spin, config.max_new_tokens)
            _set_value(self.beams_spin, config.num_beams)
            if parse_stop_strings(self.stop_edit.text()) != config.stop_strings:
                self.stop_edit.setText(", ".join(config.stop_strings))
            self.order_combo.setCurrentIndex(self._order_index(config.order))
        english = isinstance(self.session.model.vocab, BPEVocabulary)   # a real model's prompts
        self.stop_edit.setPlaceholderText(STOP_EXAMPLES[english])
        beam = config.mode == "beam"
        self._labels["num_beams"].setVisible(beam)
        self.beams_spin.setVisible(beam)
        self.order_text.setText(" → ".join(stage_label(s, self.session.lang) for s in config.order))

    def _order_index(self, order: tuple[str, ...]) -> int:
        """The preset showing `order`, or -1 (no preset) for a custom order."""
        for preset, stages in ORDER_PRESETS.items():
            if stages == order:
                return self.order_combo.findData(preset)
        return -1

    def _retranslate(self) -> None:
        for name, label in self._labels.items():
            label.setText(self._setting_name(name))
        unused = self.session.config.mode != "sample"     # greedy and beam search ignore the temperature
        for name, hint in self._hints.items():
            hint.setText(self.tr("controls.temperature.unused" if name == "temperature" and unused
                                 else f"controls.{name}.hint"))
        self._labels["temperature"].setEnabled(not unused)     # greyed, still movable for a later sample
        for combo, keys in ((self.mode_combo, [f"controls.mode.{m}" for m in MODES]),
                            (self.order_combo, [f"controls.order.{p}" for p in ORDER_PRESETS])):
            for i, key in enumerate(keys):
                if combo.itemText(i) != self.tr(key):
                    combo.setItemText(i, self.tr(key))


def _set_value(widget, value) -> None:
    """setValue only when it changes something: spin boxes repaint even on the same value."""
    if widget.value() != value:
        widget.setValue(value)


def parse_stop_strings(text: str) -> tuple[str, ...]:
    """"a, b" -> ("a", "b"); "" -> (). Empty items stay, so the core can name them."""
    if not text.strip():
        return ()
    return tuple(part.strip() for part in text.split(","))
