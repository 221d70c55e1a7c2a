"""Distribution panel: how the next token was chosen, stage by stage, with the cumulative
ruler and the uniform draw; clicking a bar forces that token (what-if)."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QPen
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from ...core.errors import ExplorerError
from ...core.decode.sampling import API_STAGE_NAMES, Distribution, Stage
from ...i18n import add_messages, stage_label, tr
from ...session import Session
from .distribution_chart import ROW_MIN_PX, BarRow, Ruler, StageChart
from .panel import Panel
from ..theme import Theme

N_SHOWN = 20            # candidate columns for a big vocabulary; the rest is one "other" bar
NUMBERS_UP_TO = 12      # print every bar's probability when there are at most this many bars
NUMBERED_LEADERS = 3    # with more bars, print the probabilities of the first (most likely) few
SHORT_ROW_PX = ROW_MIN_PX / 2   # rows shorter than this: the secondary lines give the chart their room

add_messages({
    "distribution.no_logits": {"en": "No logits yet: the prompt has not been through the model.",
                               "zh": "还没有logits：提示还没有送入模型。"},
    "distribution.no_logits_hint": {"en": "Step forward to Prefill to see the first distribution.",
                                    "zh": "前进到Prefill，就能看到第一个概率分布。"},
    "distribution.raw_note": {"en": "softmax", "zh": "softmax"},
    "distribution.off": {"en": "Off (no effect): {stages}", "zh": "未启用（不起作用）：{stages}"},
    "distribution.temperature_unused": {"en": "{note}, not used: this mode takes the top token",
                                        "zh": "{note}，未使用：这种方式直接取最高的Token"},
    "distribution.all_on": {"en": "Every stage is on.", "zh": "所有步骤都已启用。"},
    # a line on each API stage that is on: what it does that the course's stages do not
    "distribution.about.penalties": {
        "en": "Presence and frequency subtract from the logit (OpenAI) and count the output only; the repetition "
              "penalty divides a positive logit by θ (multiplies a negative one) and counts the prompt too.",
        "zh": "存在惩罚和频率惩罚从logit里减去一个量（OpenAI的做法），只统计输出；重复惩罚则把正的logit除以θ"
              "（负的乘以θ），提示里的Token也算。"},
    "distribution.about.logit_bias": {"en": "Logit bias adds a fixed amount to chosen tokens' logits: -100 bans in practice.",
                                      "zh": "Logit偏置给指定Token的logit加上固定值：-100实际上等于禁用。"},
    "distribution.about.typical_p": {
        "en": "Typical-p keeps the tokens whose surprise -log p is closest to the entropy: not always the likeliest.",
        "zh": "典型抽样保留“意外程度”-log p最接近熵的Token：不一定是概率最高的那些。"},
    "distribution.about.top_n_sigma": {"en": "Top-nσ keeps the logits within n standard deviations of the highest.",
                                       "zh": "Top-nσ只保留与最高logit相差不超过n个标准差的Token。"},
    "distribution.about.xtc": {
        "en": "XTC, on a step whose own draw is below its probability, removes the top choices above the threshold "
              "but the least likely of them.",
        "zh": "XTC在本步自己的随机数低于其概率时起作用：去掉超过阈值的头部候选，只留下其中概率最低的一个。"},
    "distribution.about.min_new_tokens": {"en": "The end token is held back until enough tokens are out.",
                                          "zh": "生成的Token数不够之前，结束Token被屏蔽。"},
    "distribution.other": {"en": "other ({count:,})", "zh": "其他（{count:,}）"},
    "distribution.chosen": {"en": "chosen", "zh": "选中"},
    "distribution.forced": {"en": "forced", "zh": "人为指定"},
    "distribution.status.before": {
        "en": "Step {step} · {phase}: probabilities from the logits at position {pos}. "
              "The pick is shown on the next frame.",
        "zh": "第{step}步 · {phase}：位置{pos}的logits给出的概率。下一帧才揭晓选中的Token。"},
    "distribution.status.pick": {"en": "Step {step}: picked “{piece}” (p = {p:.3f}).",
                                 "zh": "第{step}步：选中“{piece}”（p = {p:.3f}）。"},
    "distribution.status.forced": {
        "en": "Step {step}: “{piece}” was forced (what-if); the model gives it p = {p:.3f}.",
        "zh": "第{step}步：“{piece}”是人为指定的（假设实验）；模型给它的概率 p = {p:.3f}。"},
    "distribution.ruler": {"en": "cumulative\n[lo, hi)", "zh": "累积区间\n[lo, hi)"},
    "distribution.greedy": {"en": "greedy: no draw (the most likely token is taken)",
                            "zh": "贪心：不抽随机数（直接取概率最大的Token）"},
    "distribution.greedy_forced": {"en": "greedy, overridden: no draw, the forced token is taken",
                                   "zh": "贪心但被人为指定：不抽随机数，取指定的Token"},
    "distribution.u_later": {"en": "u is drawn at the pick (next frame)",
                             "zh": "随机数u在选择时才抽取（下一帧）"},
    "distribution.u": {"en": "u = {u:.3f}", "zh": "u = {u:.3f}"},
    "distribution.u_forced": {"en": "u = {u:.3f} (not used: forced)",
                              "zh": "u = {u:.3f}（未使用：人为指定）"},
    "distribution.back": {"en": "Back to the model's choice", "zh": "恢复模型的选择"},
    "distribution.undo": {"en": "Undo", "zh": "撤销"},
    "distribution.hint": {"en": "Click a bar to force that token (what-if).",
                          "zh": "点击柱子可强制选这个Token（假设实验）。"},
    "distribution.rejected": {"en": "Not applied: {error}", "zh": "未应用：{error}"},
})


# ---------------------------------------------------------------------------- what to show

def candidate_ids(dist: Distribution, final_top: np.ndarray, n: int) -> np.ndarray:  # -> (k,) k <= n
    """The ids that get a column: the selected id, then the final survivors, then the raw
    favourites, at most n; ordered by raw probability (descending, lower id first) so the
    columns stay put while the sliders move. final_top: `dist.top(n)`."""
    survivors = final_top[dist.probs[final_top] > 0]
    pool = np.concatenate(([dist.selected_id], survivors, dist.top(n, 0)))
    _, first = np.unique(pool, return_index=True)
    ids = pool[np.sort(first)][:n]                                     # (k,) first occurrences
    raw = dist.stages[0].probs
    return ids[np.lexsort((ids, -raw[ids]))]


def cut_heights(stages: tuple[Stage, ...], ids: np.ndarray) -> np.ndarray:  # (k,) -> (k,)
    """The probability each id had just before a stage removed it (0 if never removed)."""
    cut = np.zeros(ids.size)
    for before, stage in zip(stages, stages[1:]):
        removed_here = before.kept[ids] & ~stage.kept[ids]             # (k,)
        cut[removed_here] = before.probs[ids][removed_here]
    return cut


# ---------------------------------------------------------------------------- the panel

class DistributionPanel(Panel):
    panel_id = "distribution"
    title_key = "distribution.title"
    SLIDE_STRETCHES = True        # a chart: it fills the room a slide gives it

    def __init__(self, session: Session, parent=None):
        super().__init__(session, parent)
        self._status = QLabel(wordWrap=True)
        self._error = self.tinted(QLabel(wordWrap=True), "error")
        self._message = QLabel(alignment=Qt.AlignmentFlag.AlignCenter, wordWrap=True)
        self.chart = StageChart()
        self.chart.clicked.connect(self._clicked_at)
        self._small = QFont()                     # the chart's text font (_sync_font)
        self._off = QLabel(wordWrap=True)
        self.back_button = QPushButton(clicked=self._back)
        self.undo_button = QPushButton(clicked=self._undo)
        self._hint = QLabel(wordWrap=True)          # long in Chinese at presentation size: it wraps
        self._ids = np.zeros(0, dtype=np.int64)   # (k,) the candidate of each column
        self._n_hidden = 0                        # special tokens with raw probability 0: no column
        self._ticks: list[str] = []               # (c,) column names
        self._marked: int | None = None
        self._paint: dict = {}
        self._font_key = None
        self._compact: bool | None = None         # "off" line and hint moved to a tooltip (_fit_secondary)
        self._fitted_for = None                   # what _fit_secondary last decided from
        self._stack = QStackedWidget()
        self._stack.addWidget(self._message)
        self._stack.addWidget(self._chart_page())
        self._layout()
        self._style(self.theme)
        self.refresh()

    # ------------------------------------------------------------------ actions
    def click_candidate(self, token_id: int) -> None:
        """What-if: force `token_id` at the current step (what clicking its bar does)."""
        step = self.session.step
        if step is not None:
            self._guarded(self.session.force, step.index, int(token_id))

    def _clicked_at(self, column: int) -> None:
        """A click nearest the bar of `column` (on it or between it and the next)."""
        if 0 <= column < self._ids.size:
            self.click_candidate(self._ids[column])

    def _back(self) -> None:
        step = self.session.step
        if step is not None:
            self._guarded(self.session.unforce, step.index)

    def _undo(self) -> None:
        self._guarded(self.session.undo)

    def _guarded(self, action, *args) -> None:
        try:
            action(*args)
        except ExplorerError as err:
            self._error.setText(self.tr("distribution.rejected", error=err))
            self._error.show()
            return
        self._error.hide()

    # ------------------------------------------------------------------ building
    def _chart_page(self) -> QWidget:
        """The chart and, below it, the line naming the stages that are off."""
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.chart, 1)
        layout.addWidget(self._off)
        return page

    def _layout(self) -> None:
        buttons = QHBoxLayout()
        buttons.addWidget(self.back_button)
        buttons.addWidget(self.undo_button)
        buttons.addWidget(self._hint, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(self._status)
        layout.addWidget(self._error)
        layout.addWidget(self._stack, 1)
        layout.addLayout(buttons)
        self._error.hide()

    def set_theme(self, theme: Theme) -> None:
        self._style(theme)
        super().set_theme(theme)

    def _style(self, theme: Theme) -> None:
        """Colours of bars, ruler and labels. Removed bars are hatched as well as grey."""
        def pen(color, width=1.0, style=Qt.PenStyle.SolidLine):
            return QPen(QColor(color), width, style)

        self._paint = {
            "kept": (pen(theme.text, 0.8), QBrush(QColor(theme.kept))),
            "kept_alt": (pen(theme.text, 0.8), QBrush(QColor(theme.kept).darker(125))),
            "removed": (pen(QColor(theme.removed).darker(140), 1.2, Qt.PenStyle.DashLine),
                        QBrush(QColor(theme.removed).darker(120), Qt.BrushStyle.BDiagPattern)),
            "chosen": (pen(theme.text, 2.0), QBrush(QColor(theme.chosen))),
            "other": (pen(theme.grid), QBrush(QColor(theme.pending), Qt.BrushStyle.Dense4Pattern)),
            "edge": (pen(theme.background, 1.5), None),
            "accent": (pen(theme.accent, 3.0), None),
        }
        self.chart.set_style(theme, self._paint, self._small)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:     # zoom, presentation mode: arrives after the refresh
            self._sync_font()

    def _sync_font(self) -> None:
        """Chart text follows the widget font (zoom, presentation mode) when it changes."""
        font = self.font()
        key = (font.family(), font.pointSizeF())
        if key == self._font_key:
            return
        self._font_key = key
        small = self._small = QFont(font)
        small.setPointSizeF(max(font.pointSizeF() * 0.9, 6.0))
        self.chart.set_style(self.theme, self._paint, small)

    def slide_chrome(self) -> list[QWidget]:
        return [self.back_button, self.undo_button, self._hint]

    def has_content(self) -> bool:
        """Bars to show: the prompt has been through the model."""
        return self.session.step is not None

    # ------------------------------------------------------------------ drawing
    def refresh(self) -> None:
        self._sync_font()
        self._retranslate()
        step = self.session.step
        self.back_button.setEnabled(step is not None and step.forced)
        self.undo_button.setEnabled(self.session.can_undo)
        if step is None:
            self._show_message()
            return
        self._stack.setCurrentIndex(1)
        dist = step.distribution
        reveal = self.session.frame.shows_distribution
        final_top = dist.top(N_SHOWN)                                    # (n,)
        hidden = self._hidden_ids(dist)
        ids = candidate_ids(dist, final_top, N_SHOWN)
        self._ids = ids[~np.isin(ids, hidden)]
        self._n_hidden = hidden.size
        self._marked = dist.selected_id if reveal else None
        rows, upright = self._bar_rows(dist)
        self.chart.set_content(rows, self._ruler_record(dist, final_top, reveal), upright)
        off = [f"{stage_label(s.name, self.session.lang)} ({self._off_note(s)})" for s in dist.stages if not s.active]
        lines = [self.tr("distribution.off", stages=" · ".join(off)) if off else self.tr("distribution.all_on")]
        self._off.setText("\n".join(lines + self._about(dist)))
        self._status.setText(self._status_line(step, reveal))
        self._fit_secondary()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_secondary()

    def _fit_secondary(self) -> None:
        """A panel so short that the chart's rows would be under half their asked-for height
        (a 1024x768 projector) gives the chart the height of the "off" line and the click
        hint; their words move to the tooltip of the step line above the chart. Decided from
        the panel's size and the texts, which the choice does not change, so it never flips
        back and forth."""
        chart = self.chart.height_with_rows(SHORT_ROW_PX)
        key = (self.width(), self.height(), self._status.text(), self._off.text(), self._hint.text(), chart,
               self._stack.currentIndex())
        if key == self._fitted_for:
            return
        self._fitted_for = key
        full = self._height_with_chart(chart, self.width())
        compact = self._stack.currentIndex() == 1 and self.height() < full
        if compact != self._compact:
            self._compact = compact
            self._off.setVisible(not compact)
            self._hint.setVisible(not compact and not self.on_slide)
        tip = f"{self._off.text()}\n{self._hint.text()}" if compact else ""
        if tip != self._status.toolTip():
            self._status.setToolTip(tip)

    def _height_with_chart(self, chart: float, width: int) -> float:
        """The panel's height `width` wide with a chart `chart` px tall and every line under it."""
        layout, margins = self.layout(), self.layout().contentsMargins()
        width -= margins.left() + margins.right()
        buttons = self.back_button.sizeHint().width() + self.undo_button.sizeHint().width() + 2 * layout.spacing()
        row = 0 if self.on_slide else max(self.back_button.sizeHint().height(),
                                          self._hint.heightForWidth(max(1, width - buttons)))
        return (margins.top() + margins.bottom() + 3 * layout.spacing() + self._status.heightForWidth(width)
                + chart + self._off.heightForWidth(width) + row)

    def slide_least_height(self, width: float) -> int:
        """Beside or under the panel a slide is about: room for stage rows ROW_MIN_PX tall, their
        labels and the ruler (a slide gives a chart at least that before the other panel's room)."""
        if self._stack.currentIndex() != 1:
            return super().slide_least_height(width)
        return round(self._height_with_chart(self.chart.height_with_rows(ROW_MIN_PX), int(width)))

    def _hidden_ids(self, dist: Distribution) -> np.ndarray:  # -> (h,)
        """Special tokens the model never gives any probability (the context token "…" of a
        logits lesson): no bar, they are not candidates. The selected one is always shown."""
        raw = dist.stages[0].probs
        specials = np.array(sorted(set(self.session.model.vocab.specials.values())), dtype=np.int64)
        specials = specials[(specials >= 0) & (specials < raw.size)]
        return specials[(raw[specials] == 0) & (specials != dist.selected_id)]

    def _retranslate(self) -> None:
        self.back_button.setText(self.tr("distribution.back"))
        self.undo_button.setText(self.tr("distribution.undo"))
        self._hint.setText(self.tr("distribution.hint"))

    def _show_message(self) -> None:
        self._stack.setCurrentIndex(0)
        lines = [self.tr("distribution.no_logits")]
        if not self.on_slide:                            # a slide has no player to step forward with
            lines.append(self.tr("distribution.no_logits_hint"))
        self._message.setText("\n".join(lines))
        self._status.setText("")
        self._fit_secondary()
        self._ids, self._marked, self._ticks = np.zeros(0, dtype=np.int64), None, []

    def _status_line(self, step, reveal: bool) -> str:
        dist = step.distribution
        if not reveal:
            phase = (tr("phase.prefill", self.session.lang) if step.phase == "prefill"
                     else tr("phase.decode", self.session.lang, n=step.index))
            return self.tr("distribution.status.before", step=step.index, phase=phase,
                           pos=step.logits_position)
        key = "distribution.status.forced" if dist.forced else "distribution.status.pick"
        return self.tr(key, step=step.index, piece=self.piece(dist.selected_id),
                       p=float(dist.probs[dist.selected_id]))

    def _bar_rows(self, dist: Distribution) -> tuple[tuple[BarRow, ...], bool]:
        """One BarRow per shown stage (raw, each active stage, final) and whether the
        columns are many and narrow (labels written upwards, names under the last row)."""
        ids, lang = self._ids, self.session.lang
        vocab_size = dist.probs.size - self._n_hidden
        other = vocab_size > ids.size
        self._ticks = [self.piece(i) for i in ids]
        if other:
            self._ticks.append(self.tr("distribution.other", count=vocab_size - ids.size))
        few = len(self._ticks) <= NUMBERS_UP_TO
        cut = cut_heights(dist.stages, ids)                               # (k,)
        removers = [stage_label(r, lang) if r else "" for r in dist.removers(ids)]
        entries = [(s.probs, s.kept, s.name) for s in dist.stages if s.active or s.name == "raw"]
        entries.append((dist.probs, dist.stages[-1].kept, "final"))
        rows = []
        for n, (probs, kept, name) in enumerate(entries):
            values, drawn, roles, labels = self._row_data(probs, kept, name, cut, removers, few, other)
            last = n == len(entries) - 1      # many narrow columns: only the last row names them
            names = tuple(self._ticks) if few or last else ("",) * len(self._ticks)
            rows.append(BarRow(name, self._row_title(dist, name), values, drawn, tuple(roles),
                               tuple(labels), names))
        return tuple(rows), not few

    def _row_data(self, probs, kept_mask, name, cut, removers, few, other):
        """What one row shows: values (c,), drawn heights (c,), roles (c,), labels (c,)."""
        ids = self._ids
        values = probs[ids]                                               # (k,)
        kept = kept_mask[ids]                                             # (k,)
        drawn = np.where(kept, values, cut)
        roles = np.where(kept, "kept", "removed").tolist()
        labels = [(f"{v:.3f}" if few or c < NUMBERED_LEADERS else "") if k else f"✕ {r}"
                  for c, (v, k, r) in enumerate(zip(values, kept, removers))]
        if name == "final" and self._marked is not None:
            column = int(np.flatnonzero(ids == self._marked)[0])
            roles[column] = "chosen"
            mark = self.tr("distribution.forced" if self.session.step.forced else "distribution.chosen")
            labels[column] = f"▼ {mark} {values[column]:.3f}" if few else f"◀ {mark}"
        if other:
            rest = max(0.0, 1.0 - float(values.sum()))
            values, drawn = np.append(values, rest), np.append(drawn, rest)
            roles.append("other")
            labels.append(f"{rest:.3f}")
        return values, drawn, roles, labels

    def _about(self, dist: Distribution) -> list[str]:
        """A line on each API stage the distribution went through (the penalties share one)."""
        names = {"presence_penalty": "penalties", "frequency_penalty": "penalties"}
        keys = dict.fromkeys(names.get(s.name, s.name) for s in dist.stages if s.name in API_STAGE_NAMES)
        return [self.tr(f"distribution.about.{key}") for key in keys]

    def _off_note(self, stage) -> str:
        """Why a stage changed nothing: its setting is off, or (temperature) not used by the mode."""
        config = self.session.config
        if stage.name == "temperature" and config.mode != "sample" and config.temperature != 1:
            return self.tr("distribution.temperature_unused", note=stage.note)
        return stage.note

    def _row_title(self, dist: Distribution, name: str) -> str:
        label = stage_label(name, self.session.lang)
        if name == "raw":
            return f"{label}\n{self.tr('distribution.raw_note')}"
        if name == "final":
            return label
        note = next(s.note for s in dist.stages if s.name == name)
        return f"{label}\n{note}"

    def _ruler_record(self, dist: Distribution, final_top: np.ndarray, reveal: bool) -> Ruler:
        ids, lo, hi = dist.ruler_head(final_top.size)
        if dist.greedy:
            u, note = None, self.tr("distribution.greedy_forced" if dist.forced and reveal else "distribution.greedy")
        elif not reveal:
            u, note = None, self.tr("distribution.u_later")
        else:
            key = "distribution.u_forced" if dist.forced else "distribution.u"
            u, note = dist.u, self.tr(key, u=dist.u)
        return Ruler(self.tr("distribution.ruler"), ids, lo, hi, tuple(self.piece(i) for i in ids),
                     self._marked, u, note)
