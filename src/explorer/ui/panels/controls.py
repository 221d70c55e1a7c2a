"""Sampling controls: every setting of the sampler as a widget that reruns the session live
(on every slider tick, not on release)."""

from __future__ import annotations

from contextlib import ExitStack

from PySide6.QtCore import QObject, QSignalBlocker, Qt, Signal
from PySide6.QtWidgets import (QComboBox, QDoubleSpinBox, QGridLayout, QLabel, QLineEdit, QSlider,
                               QSpinBox, QToolButton, QVBoxLayout, QWidget)

from ...core.tokens.bpe import BPEVocabulary
from ...core.errors import ExplorerError
from ...core.limits import MAX_BEAMS, MAX_NEW_TOKENS, MAX_SEED
from ...core.decode.api_stages import logit_bias_items, resolved_logit_bias
from ...core.decode.beam import BEAM_PROCESSORS
from ...core.decode.sampling import API_STAGE_NAMES, MODES, ORDER_PRESETS
from ...i18n import MESSAGES, add_messages, stage_label
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

# the stages of real APIs, in a group that is folded until asked for: field -> (low, high, decimals)
API_NUMBERS = {
    "presence_penalty": (-2.0, 2.0, 2),
    "frequency_penalty": (-2.0, 2.0, 2),
    "typical_p": (0.01, 1.0, 2),
    "top_n_sigma": (0.0, 5.0, 2),
    "xtc_probability": (0.0, 1.0, 2),
    "xtc_threshold": (0.0, 1.0, 2),
    "min_keep": (0, 20, 0),               # the spin box goes up to the vocabulary size
    "min_new_tokens": (0, 32, 0),         # the spin box goes up to MAX_NEW_TOKENS
}

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
    "controls.api": {"en": "API parameters", "zh": "API 参数"},
    "controls.api.on": {"en": "API parameters ({n} on)", "zh": "API 参数（{n} 项启用）"},
    "controls.api.chain": {"en": "Full order: {chain}", "zh": "完整顺序：{chain}"},
    "controls.presence_penalty": {"en": "Presence (0 = off)", "zh": "存在惩罚（0 = 关）"},
    "controls.presence_penalty.tip": {
        "en": "OpenAI's presence_penalty: subtracted once from the logit of every token the output already holds.",
        "zh": "OpenAI 的 presence_penalty：输出里已出现过的Token，其logit减去这个值一次。"},
    "controls.frequency_penalty": {"en": "Frequency (0 = off)", "zh": "频率惩罚（0 = 关）"},
    "controls.frequency_penalty.tip": {
        "en": "OpenAI's frequency_penalty: subtracted from a token's logit once per time it occurs in the output.",
        "zh": "OpenAI 的 frequency_penalty：Token在输出里出现几次，其logit就减去几次这个值。"},
    "controls.logit_bias": {"en": "Logit bias", "zh": "Logit 偏置"},
    "controls.logit_bias.tip": {
        "en": "id:bias or piece:bias, comma-separated, Enter to apply; -100 bans a token, +100 forces it. "
              "A space belongs to the piece: “ the:-100” bans “ the”, not “the”.",
        "zh": "编号:偏置 或 片段:偏置，用逗号分隔，按回车应用；-100 等于禁用，+100 等于强制。"
              "空格也算片段的一部分：“ the:-100”禁用的是“ the”，不是“the”。"},
    "controls.typical_p": {"en": "Typical-p (1 = off)", "zh": "典型抽样（1 = 关）"},
    "controls.typical_p.tip": {
        "en": "Keep the tokens whose surprise -log p is closest to the entropy, up to this probability mass.",
        "zh": "保留“意外程度”-log p 最接近熵的那些Token，直到累计概率达到这个值。"},
    "controls.top_n_sigma": {"en": "Top-nσ (0 = off)", "zh": "Top-nσ（0 = 关）"},
    "controls.top_n_sigma.tip": {"en": "Keep the logits within n standard deviations of the highest one.",
                                 "zh": "只保留与最高logit相差不超过n个标准差的Token。"},
    "controls.xtc_probability": {"en": "XTC probability (0 = off)", "zh": "XTC 概率（0 = 关）"},
    "controls.xtc_probability.tip": {
        "en": "How often XTC acts; the draw comes from the seed and the step, apart from u.",
        "zh": "XTC 起作用的概率；这个随机数由种子和步数决定，与u无关。"},
    "controls.xtc_threshold": {"en": "XTC threshold", "zh": "XTC 阈值"},
    "controls.xtc_threshold.tip": {
        "en": "When XTC acts, every token with p >= this goes except the least likely of them.",
        "zh": "XTC 起作用时，概率不低于这个值的Token都被去掉，只留其中概率最低的一个。"},
    "controls.min_keep": {"en": "Min keep (0 = off)", "zh": "至少保留（0 = 关）"},
    "controls.min_keep.tip": {"en": "The fewest candidates any truncation stage may leave.",
                              "zh": "任何截断步骤至少要留下的候选数。"},
    "controls.min_new_tokens": {"en": "Min new tokens (0 = off)", "zh": "最少生成数（0 = 关）"},
    "controls.min_new_tokens.tip": {"en": "The end token is held back until this many tokens are out.",
                                    "zh": "生成的Token数达到这个值之前，结束Token被屏蔽。"},
    "controls.rejected": {"en": "{setting}: not applied. {error}", "zh": "{setting}：未应用。{error}"},
    "controls.beam_unused": {
        "en": "Not used by beam search: it keeps the sequences whose log-probabilities add up highest, so this "
              "setting, which shapes a draw, never acts (as in Hugging Face's beam search; its repetition penalty, "
              "logit bias and min new tokens do apply). Choose greedy or sample to use it.",
        "zh": "束搜索不使用这一项：它按对数概率之和保留序列，这一项只影响抽样（与 Hugging Face 相同；重复惩罚、"
              "Logit 偏置和最少生成数仍然起作用）。选贪心或抽样才会用到。"},
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
        self.numbers = {name: NumberControl(*spec, parent=self) for name, spec in {**NUMBERS, **API_NUMBERS}.items()}
        self.spin("min_new_tokens").setMaximum(MAX_NEW_TOKENS)
        self.bias_edit = QLineEdit(placeholderText="3:-100")
        self.api_toggle = QToolButton(checkable=True, autoRaise=True)
        self.api_toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.api_group = QWidget()
        self.api_chain = self.tinted(QLabel(wordWrap=True), "muted")
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
        rows = [("mode", self.mode_combo), *((n, self.numbers[n]) for n in NUMBERS), ("seed", self.seed_spin),
                ("max_new_tokens", self.max_new_spin), ("num_beams", self.beams_spin),
                ("stop_strings", self.stop_edit), ("order", self.order_combo)]
        r = 0
        for name, widget in rows:
            self._add_row(grid, r, name, widget)
            r += 1
            if name in HINTED:
                self._hints[name] = self.tinted(QLabel(wordWrap=True), "muted")
                grid.addWidget(self._hints[name], r, 1, 1, 2)
                r += 1
        grid.addWidget(self.order_text, r, 1, 1, 2)
        layout = QVBoxLayout(self)
        layout.addLayout(grid)
        layout.addWidget(self.api_toggle)
        layout.addWidget(self.api_group)
        self._layout_api()
        layout.addWidget(self.error_label)
        layout.addStretch(1)
        self.error_label.hide()

    def _add_row(self, grid: QGridLayout, r: int, name: str, widget) -> None:
        """A setting's label, then its slider and spin box, or its one widget across both."""
        self._labels[name] = QLabel()
        grid.addWidget(self._labels[name], r, 0)
        if isinstance(widget, NumberControl):
            grid.addWidget(widget.slider, r, 1)
            grid.addWidget(widget.spin, r, 2)
        else:
            grid.addWidget(widget, r, 1, 1, 2)

    def _layout_api(self) -> None:
        """The API stages' rows, folded under their toggle until it is pressed."""
        grid = QGridLayout(self.api_group)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setColumnStretch(1, 1)
        rows = [(n, self.numbers[n]) for n in ("presence_penalty", "frequency_penalty")]
        rows += [("logit_bias", self.bias_edit)] + [(n, self.numbers[n]) for n in list(API_NUMBERS)[2:]]
        for r, (name, widget) in enumerate(rows):
            self._add_row(grid, r, name, widget)
        grid.addWidget(self.api_chain, len(rows), 0, 1, 3)
        self.api_group.setVisible(False)
        self.api_toggle.toggled.connect(self._unfold)

    def _unfold(self, shown: bool) -> None:
        self.api_group.setVisible(shown)
        self.api_toggle.setArrowType(Qt.ArrowType.DownArrow if shown else Qt.ArrowType.RightArrow)

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
        self.bias_edit.editingFinished.connect(self._apply_bias)

    # ------------------------------------------------------------------ applying
    def _apply_bias(self) -> None:
        """The logit bias field: ids or the model's pieces, each with its bias; empty clears it."""
        try:
            bias = self._bias_of(self.bias_edit.text())
        except ExplorerError as err:
            self._refuse("logit_bias", err)
            return
        self._apply("logit_bias", bias)

    def _apply(self, field: str, value) -> None:
        """Rerun with one setting changed; a rejected value is named in red, nothing changes."""
        try:
            self.session.set_sampling(**{field: value})
        except ExplorerError as err:
            self._refuse(field, err)
            return
        self.error_label.hide()

    def _refuse(self, field: str, err: ExplorerError) -> None:
        self.error_label.setText(self.tr("controls.rejected", setting=self._setting_name(field), error=err))
        self.error_label.show()

    def _setting_name(self, field: str) -> str:
        return self.tr(f"controls.{field}")

    # ------------------------------------------------------------------ showing the session
    def refresh(self) -> None:
        self._retranslate()
        config = self.session.config
        vocab_size = len(self.session.model.vocab)
        with ExitStack() as blocked:
            for widget in (self.mode_combo, self.seed_spin, self.max_new_spin, self.beams_spin,
                           self.stop_edit, self.order_combo, self.spin("top_k"), self.slider("top_k"),
                           self.spin("min_keep")):
                blocked.enter_context(QSignalBlocker(widget))
            if self.spin("top_k").maximum() != vocab_size:
                self.spin("top_k").setMaximum(vocab_size)
            if self.spin("min_keep").maximum() != vocab_size:
                self.spin("min_keep").setMaximum(vocab_size)
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
            if self._typed_bias() != dict(config.logit_bias):
                self.bias_edit.setText(", ".join(f"{t}:{b:g}" for t, b in config.logit_bias))
        english = isinstance(self.session.model.vocab, BPEVocabulary)   # a real model's prompts
        self.stop_edit.setPlaceholderText(STOP_EXAMPLES[english])
        beam = config.mode == "beam"
        self._labels["num_beams"].setVisible(beam)
        self.beams_spin.setVisible(beam)
        self.order_text.setText(" → ".join(stage_label(s, self.session.lang) for s in config.shown_order))
        self.api_chain.setText(self.tr("controls.api.chain",
                                       chain=" → ".join(stage_label(s, self.session.lang) for s in config.order)))
        n_on = len([s for s in config.active_stages if s in API_STAGE_NAMES]) + (config.min_keep > 1)
        self.api_toggle.setText(self.tr("controls.api.on", n=n_on) if n_on else self.tr("controls.api"))
        self.api_toggle.setArrowType(Qt.ArrowType.DownArrow if self.api_toggle.isChecked() else Qt.ArrowType.RightArrow)

    def _bias_of(self, text: str) -> dict[int, float]:
        """Typed id:bias or piece:bias items as {id: bias} (a SettingError names what is wrong)."""
        return resolved_logit_bias(logit_bias_items(text), self.session.model.vocab) if text.strip() else {}

    def _typed_bias(self) -> dict | None:
        """The logit bias the field shows, as ids; None if it does not read as one."""
        try:
            return self._bias_of(self.bias_edit.text())
        except ExplorerError:
            return None

    def _order_index(self, order: tuple[str, ...]) -> int:
        """The preset showing `order`, or -1 (no preset) for a custom order."""
        for preset, stages in ORDER_PRESETS.items():
            if stages == order:
                return self.order_combo.findData(preset)
        return -1

    def _retranslate(self) -> None:
        for name, label in self._labels.items():
            label.setText(self._setting_name(name))
            if f"controls.{name}.tip" in MESSAGES:
                label.setToolTip(self.tr(f"controls.{name}.tip"))
        self._mark_beam_unused()
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


    def _beam_blind(self) -> dict[str, tuple]:
        """Setting -> its widgets, for every setting a beam search does not read (all but the
        mode, the length, the width and the stages Hugging Face's beam search applies,
        BEAM_PROCESSORS): disabled in beam mode, the tooltip saying why."""
        widgets = {name: (control.slider, control.spin) for name, control in self.numbers.items()
                   if name not in BEAM_PROCESSORS}
        return widgets | {"seed": (self.seed_spin,), "stop_strings": (self.stop_edit,), "order": (self.order_combo,)}

    def _mark_beam_unused(self) -> None:
        beam = self.session.config.mode == "beam"
        why = self.tr("controls.beam_unused") if beam else ""
        for name, widgets in self._beam_blind().items():
            for widget in (*widgets, self._labels[name]):
                widget.setEnabled(not beam)
                widget.setToolTip(why)
            if not beam and f"controls.{name}.tip" in MESSAGES:
                self._labels[name].setToolTip(self.tr(f"controls.{name}.tip"))


def _set_value(widget, value) -> None:
    """setValue only when it changes something: spin boxes repaint even on the same value."""
    if widget.value() != value:
        widget.setValue(value)


def parse_stop_strings(text: str) -> tuple[str, ...]:
    """"a, b" -> ("a", "b"); "" -> (). Empty items stay, so the core can name them."""
    if not text.strip():
        return ()
    return tuple(part.strip() for part in text.split(","))
