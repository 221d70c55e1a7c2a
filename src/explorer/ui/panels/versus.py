"""A/B panel: two runs of the same prompt stepped together (the frame's step is the step of
both). Two timelines of chosen tokens, one row per run, with the first step where they
differ marked on both and the total variation between their final distributions under each
step; both final distributions at the frame's step; both transcripts up to it. Run A is the
frame's own; B is a lesson frame's declared comparison, or the teacher's: A with some
settings changed (typed as "temperature=1.5, seed=3"), or on a model pinned as B. The
panel draws the records of `session.versus`; it computes nothing itself. The teacher's B on
a big model is worked out off the UI thread (`compute_big_b_with`): the panel says so, with
B's steps done, and draws B when it is there."""

from __future__ import annotations

import threading
from typing import Callable

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import (QFrame, QGridLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton, QScrollArea,
                               QSizePolicy, QVBoxLayout, QWidget)

from ...core.decode.generate import Run
from ...core.errors import ExplorerError
from ...i18n import add_messages
from ...session import Session
from ...session.versus import Versus, VersusSpec, VersusTask, known_versus, parse_changes, spec_of
from ..theme import text_on
from .panel import Panel
from .token_flow import ALTERNATIVES, Token, TokenFlow, choices_of, chosen_of, prob_text, run_tokens, token_details

add_messages({
    "versus.caption": {"en": "A: the frame's run · B: {b}", "zh": "A：这一帧的运行 · B：{b}"},
    "versus.b_is": {"en": "B = A with", "zh": "B = A，但"},
    "versus.placeholder": {"en": "temperature=1.5, seed=3", "zh": "temperature=1.5, seed=3"},
    "versus.b_tip": {"en": "Settings by their names (temperature, top_p, top_k, min_p, seed, mode, order, ...), "
                           "comma-separated; Enter applies them. Empty: no B.",
                     "zh": "按名称写设置（temperature、top_p、top_k、min_p、seed、mode、order……），用逗号分开；"
                           "按Enter生效。留空：没有B。"},
    "versus.pin": {"en": "Pin this model as B", "zh": "把当前模型固定为B"},
    "versus.pin_tip": {"en": "B runs on the model shown now, also after you open another one for A (it stays "
                             "in memory). Both models must share a tokenizer.",
                       "zh": "B使用现在显示的模型，即使之后为A打开了另一个模型（它会留在内存里）。两个模型必须使用同一个分词器。"},
    "versus.clear": {"en": "Clear B", "zh": "清除B"},
    "versus.rejected": {"en": "B not changed: {error}", "zh": "B没有改变：{error}"},
    "versus.pinned": {"en": "model {model}", "zh": "模型{model}"},
    "versus.row_tv": {"en": "TV", "zh": "TV"},
    "versus.parts": {"en": "▼ first divergence: step {step}", "zh": "▼ 第一次分歧：第{step}步"},
    "versus.same_so_far": {"en": "the same tokens at every step", "zh": "每一步的Token都相同"},
    "versus.step": {"en": "Step {step}: A {a} · B {b} · total variation {tv}",
                    "zh": "第{step}步：A {a} · B {b} · 总变差距离 {tv}"},
    "versus.no_step": {"en": "No step yet: step forward past the Prefill.", "zh": "还没有步骤：前进到Prefill之后。"},
    "versus.stopped": {"en": "stopped", "zh": "已停止"},
    "versus.computing": {"en": "Computing B on {model} … step {done} of {total}",
                         "zh": "正在用{model}计算B……第{done}步，共{total}步"},
    "versus.failed": {"en": "B could not be computed: {error}", "zh": "无法计算B：{error}"},
    "versus.cancelled": {"en": "B was cancelled. Press Enter in the B line to compute it again.",
                         "zh": "B的计算已取消。在B的输入框里按Enter可以重新计算。"},
    "versus.tv_tip": {"en": "Total variation: half the sum of |p_A − p_B| over the vocabulary, from 0 (the same "
                            "distribution) to 1 (nothing in common).",
                      "zh": "总变差距离：对整个词表求 |p_A − p_B| 之和的一半，0表示分布相同，1表示毫无重合。"},
})

CELL_CHARS = 7          # a step cell holds a piece this many characters wide (longer ones elide)


class StepStrip(QWidget):
    """Both runs' chosen tokens, a cell per step, and the total variation under each step;
    the frame's step framed, the first divergence marked on both rows."""

    def __init__(self, panel: "VersusPanel"):
        super().__init__(panel)
        self.panel = panel
        self.versus: Versus | None = None
        self.current: int | None = None
        self.drawn: dict[str, list[str]] = {}     # row -> cell texts painted: for tests

    def _metrics(self):
        m = QFontMetricsF(self.font())
        return m, m.height() * 1.6, m.horizontalAdvance("M") * CELL_CHARS

    def sizeHint(self) -> QSize:
        m, row, cell = self._metrics()
        return QSize(int(cell * 8 + m.horizontalAdvance("TV  ")), int(row * 4.2))

    def minimumSizeHint(self) -> QSize:
        m, row, cell = self._metrics()
        return QSize(int(cell * 3 + m.horizontalAdvance("TV  ")), int(row * 4.2))

    def window(self, n: int, fit: int) -> range:
        """The steps shown when `fit` cells fit: all, or a window that holds the frame's step
        and, where it can, the first divergence."""
        if n <= fit:
            return range(n)
        c = self.versus.comparison
        focus = self.current if self.current is not None else 0
        split = c.first_divergence if c.first_divergence is not None else focus
        start = max(0, min(focus, split) - fit // 3) if abs(focus - split) < fit - 1 else max(0, focus - fit // 2)
        start = min(start, n - fit)
        return range(start, start + fit)

    def paintEvent(self, _event) -> None:
        self.drawn = {}
        v = self.versus
        if v is None or v.comparison is None:
            return
        c, theme, panel = v.comparison, self.panel.theme, self.panel
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        m, row_h, cell_w = self._metrics()
        label_w = m.horizontalAdvance("TV  ")
        n = max(len(c.a.steps), len(c.b.steps))
        fit = max(1, int((self.width() - label_w) // cell_w))
        steps = self.window(n, fit)
        cell_w = min(cell_w * 1.6, (self.width() - label_w) / max(1, len(steps)))
        top = row_h * 1.1                                      # the divergence label's line
        rows = (("A", c.a, v.model_a), ("B", c.b, v.model_b))
        split = c.first_divergence
        for r, (name, run, model) in enumerate(rows):
            y = top + r * row_h
            p.setPen(QColor(theme.text))
            p.drawText(QRectF(0, y, label_w, row_h), Qt.AlignmentFlag.AlignVCenter, name)
            texts = []
            for k, step in enumerate(steps):
                box = QRectF(label_w + k * cell_w, y + 2, cell_w - 3, row_h - 4)
                if step >= len(run.steps):
                    text = "—"
                    p.setPen(QColor(theme.muted))
                else:
                    text = model.vocab.display_piece(run.steps[step].selected_id)
                    parted = split is not None and step >= split
                    fill = QColor(theme.selected if parted else theme.pending)
                    p.fillRect(box, fill)
                    p.setPen(QColor(text_on(fill.name())))
                text = m.elidedText(text, Qt.TextElideMode.ElideRight, box.width() - 4)
                p.drawText(box, Qt.AlignmentFlag.AlignCenter, text)
                texts.append(text)
                if step == self.current:
                    p.setPen(QPen(QColor(theme.chosen), 3))
                    p.drawRect(box.adjusted(-1.5, -1.5, 1.5, 1.5))
            self.drawn[name] = texts
        y = top + 2 * row_h                                    # the distance row: a bar per step, its number
        p.setPen(QColor(theme.text))
        p.drawText(QRectF(0, y, label_w, row_h), Qt.AlignmentFlag.AlignVCenter, panel.tr("versus.row_tv"))
        tvs = []
        for k, step in enumerate(steps):
            d = c.distance(step)
            box = QRectF(label_w + k * cell_w, y + 2, cell_w - 3, row_h - 4)
            p.setPen(QPen(QColor(theme.grid), 1))
            p.drawRect(box)
            text = "" if d is None else f"{d:.2f}"
            if d is not None:
                p.fillRect(QRectF(box.left(), box.top(), box.width() * d, box.height()), QColor(theme.kept))
                p.setPen(QColor(theme.text))
                p.drawText(box, Qt.AlignmentFlag.AlignCenter, text)
            tvs.append(text)
        self.drawn["TV"] = tvs
        if split is not None and split in steps:               # the divergence: a dashed line across both rows
            x = label_w + steps.index(split) * cell_w - 1.5
            p.setPen(QPen(QColor(theme.chosen), 2, Qt.PenStyle.DashLine))
            p.drawLine(int(x), int(top), int(x), int(top + 2 * row_h))
            p.setPen(QColor(theme.text))
            label = panel.tr("versus.parts", step=split)
            p.drawText(QRectF(max(0.0, x - 4), 0, self.width() - max(0.0, x - 4), row_h),
                       Qt.AlignmentFlag.AlignVCenter, label)
            self.drawn["split"] = [label]
        p.end()


class TopBars(QWidget):
    """One run's final distribution at the frame's step: its top candidates as bars with
    their pieces and probabilities, the selected one in the chosen colour."""

    def __init__(self, panel: "VersusPanel"):
        super().__init__(panel)
        self.panel = panel
        self.rows: list[tuple[str, float, bool]] = []      # (piece, probability, selected)

    def sizeHint(self) -> QSize:
        m = QFontMetricsF(self.font())
        return QSize(int(m.horizontalAdvance("M") * 20), int(m.height() * 1.4 * (ALTERNATIVES + 1)))

    def minimumSizeHint(self) -> QSize:
        """Pieces, numbers and a short bar: two columns fit a slide's half at the body type."""
        m = QFontMetricsF(self.font())
        return QSize(int(m.horizontalAdvance("M") * 15), self.sizeHint().height())

    def paintEvent(self, _event) -> None:
        theme = self.panel.theme
        p = QPainter(self)
        m = QFontMetricsF(self.font())
        row_h = m.height() * 1.4
        piece_w = m.horizontalAdvance("M" * 8)
        num_w = m.horizontalAdvance(" 0.000")
        bar_w = max(1.0, self.width() - piece_w - num_w)
        for i, (piece, prob, selected) in enumerate(self.rows):
            y = i * row_h
            p.setPen(QColor(theme.text))
            p.drawText(QRectF(0, y, piece_w - 4, row_h), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight,
                       m.elidedText(piece, Qt.TextElideMode.ElideRight, piece_w - 4))
            p.fillRect(QRectF(piece_w, y + 3, bar_w * prob, row_h - 6), QColor(theme.chosen if selected else theme.kept))
            p.drawText(QRectF(piece_w + bar_w * prob + 3, y, num_w + bar_w, row_h), Qt.AlignmentFlag.AlignVCenter,
                       prob_text(prob))
        p.end()


class RunText(QWidget):
    """One run's transcript up to the frame's step, drawn as the transcript panel draws it."""

    def __init__(self, panel: "VersusPanel"):
        super().__init__(panel)
        self.outer = panel
        self.flow = TokenFlow(self, least_chars=12)     # two side by side in a slide's half
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.flow)
        self.piece = lambda t: str(t)

    theme = property(lambda self: self.outer.theme)

    def tr(self, key: str, **values) -> str:
        return self.outer.tr(key, **values)

    def details_of(self, index: int) -> str:
        return token_details(self.flow.tokens[index], self.piece, self.tr)

    def pin(self, index: int) -> None:
        self.setToolTip(self.details_of(index))

    def show_tokens(self, tokens: list[Token], piece) -> None:
        self.piece = piece
        self.flow.tokens = tokens
        self.flow.current = next((i for i in range(len(tokens) - 1, -1, -1) if tokens[i].chosen is not None), None)
        self.flow.updateGeometry()
        self.flow.update()


class VersusPanel(Panel):
    panel_id = "versus"
    title_key = "versus.title"
    SLIDE_GROWTH = 1.8            # two short runs fill a slide's half with larger type

    def __init__(self, session: Session, parent=None):
        super().__init__(session, parent)
        self.caption = QLabel(wordWrap=True)
        self.caption.setMinimumWidth(1)        # wraps to the room it has, not its one-line width
        self.edit = QLineEdit()
        self.edit.returnPressed.connect(self._apply_text)
        self.b_is = QLabel()
        self.pin_button = QPushButton()
        self.pin_button.clicked.connect(self._pin_model)
        self.clear_button = QPushButton()
        self.clear_button.clicked.connect(self._clear)
        self.controls = QWidget()
        # the line and buttons share the width they get, never widen the desk's column (as the transcript's)
        self.controls.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        row = QHBoxLayout(self.controls)
        row.setContentsMargins(0, 0, 0, 0)
        for widget in (self.b_is, self.edit, self.pin_button, self.clear_button):
            row.addWidget(widget)
        self.error = self.tinted(QLabel(wordWrap=True), "error")
        self.error.hide()
        self.strip = StepStrip(self)
        self.summary = QLabel(wordWrap=True)
        self.heads = [self.emphasised(QLabel(name), 1.0) for name in ("A", "B")]
        self.bars = [TopBars(self), TopBars(self)]
        self.texts = [RunText(self), RunText(self)]
        self.body = QWidget()                 # scrolls in a small dock: a tab asks no more room than its neighbours
        column = QVBoxLayout(self.body)
        column.setContentsMargins(0, 0, 0, 0)
        for widget in (self.caption, self.strip, self.summary):
            column.addWidget(widget)
        grid = self.grid = QGridLayout()
        for col in range(2):
            grid.addWidget(self.heads[col], 0, col)
            grid.addWidget(self.bars[col], 1, col)
            grid.addWidget(self.texts[col], 2, col)
        column.addLayout(grid)
        column.addStretch(1)
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll.setWidget(self.body)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        for widget in (self.controls, self.error, self.scroll):
            layout.addWidget(widget)
        self.shown: Versus | None = None
        self._jobs = None                   # (start, slow, failed): see compute_big_b_with
        self._task: VersusTask | None = None        # B being computed off the UI thread
        self._cancel = threading.Event()            # set: that computation stops after its step
        self._done_steps = 0
        self._failure: tuple = ()                   # (the task's key, its message): not tried again
        self.refresh()

    def compute_big_b_with(self, start: Callable, slow: Callable, failed: Callable[[BaseException, str], str]) -> None:
        """From now on the teacher's B on a model `slow(model)` calls slow is computed off the
        UI thread by `start(fn, done, failed, progress)` (the window's Jobs.start); `failed(exc,
        traceback)` reports a failure and returns the message the panel shows."""
        self._jobs = (start, slow, failed)

    def cancel_b(self) -> None:
        """Stop computing B after its current step (the window's Cancel); it is not asked for
        again until A or B changes, or the teacher applies the B line again."""
        if self._task is not None:
            self._failure = (self._task.key, self.tr("versus.cancelled"))
            self._cancel.set()

    def slide_chrome(self) -> list[QWidget]:
        return [self.controls, self.error]

    def show_on_slide(self) -> None:
        """No scroll bars; the transcripts take the height left and keep their newest lines."""
        self.scroll.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        for text in self.texts:
            text.flow.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Ignored)
            text.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.grid.setRowStretch(2, 1)
        column = self.body.layout()
        column.takeAt(column.count() - 1)                  # the spacer under them: the room goes to the transcripts
        column.setStretchFactor(self.grid, 1)
        for text in self.texts:
            text.flow.setMinimumHeight(text.flow.minimumSizeHint().height())
        super().show_on_slide()

    def slide_content_size(self) -> QSize:
        """Two columns of bars side by side (the strip shows as many steps as fit around the frame's)."""
        m = QFontMetricsF(self.font())
        return QSize(int(m.horizontalAdvance("M") * 34), self.body.sizeHint().height() + 8)

    def has_content(self) -> bool:
        """B is there to show, or being computed (asking never computes it here)."""
        known = known_versus(self.session)
        return isinstance(known, VersusTask) or known.comparison is not None

    def _versus(self) -> Versus | None:
        """What to draw: the A/B view known or computed on the spot, or None while B is
        computed off the UI thread (the caption says how far it is)."""
        known = known_versus(self.session)
        if not isinstance(known, VersusTask):
            return known
        a, spec = known.key
        if self._failure and self._failure[0] == known.key:
            return Versus(None, a.model, spec.model or a.model, reason=self._failure[1])
        if self._jobs is None or not any(self._jobs[1](m) for m in (a.model, spec.model or a.model)):
            return known.run()
        self._start_b(known)
        return None

    def _start_b(self, task: VersusTask) -> None:
        if self._task is not None:
            if self._task.key != task.key:
                self._cancel.set()            # stale: when it stops, the next draw asks for this one
            return
        start, _slow, _failed = self._jobs
        self._task, self._done_steps = task, 0
        cancel = self._cancel = threading.Event()
        start(lambda report: task.run(cancel.is_set, lambda n: report(n, task.steps)),
              self._b_done, self._b_failed, self._b_progress)

    def _b_progress(self, done: int, _total: int) -> None:
        self._done_steps = done
        if self._task is not None and self.shown is None:
            self._say_computing(self._task)

    def _b_done(self, _versus) -> None:
        self._task = None
        self.refresh()

    def _b_failed(self, exc: BaseException, tb: str) -> None:
        task, self._task = self._task, None
        self._failure = (task.key, self.tr("versus.failed", error=self._jobs[2](exc, tb)))
        self.refresh()

    def _say_computing(self, task: VersusTask) -> None:
        a, spec = task.key
        self.caption.setText(self.tr("versus.computing", model=(spec.model or a.model).name,
                                     done=self._done_steps, total=task.steps))
        self._tint(self.caption, "muted")

    # ------------------------------------------------------------------ the teacher's B
    def set_b(self, spec: VersusSpec | None) -> None:
        self.session.versus_spec = spec
        self._failure = ()
        self._cancel.set()            # a B being computed is not this one (or asked for again)
        self.refresh()

    def _apply_text(self) -> None:
        try:
            changes = parse_changes(self.edit.text())
        except ExplorerError as err:
            self.error.setText(self.tr("versus.rejected", error=err))
            self.error.show()
            return
        self.error.hide()
        old = self.session.versus_spec
        spec = spec_of(changes, None if old is None else old.model)
        self.set_b(None if spec.empty else spec)

    def _pin_model(self) -> None:
        old = self.session.versus_spec
        self.set_b(VersusSpec(() if old is None else old.changes, self.session.model))

    def _clear(self) -> None:
        self.edit.clear()
        self.error.hide()
        self.set_b(None)

    # ------------------------------------------------------------------ drawing
    def draw(self) -> None:
        s = self.session
        self.b_is.setText(self.tr("versus.b_is"))
        self.edit.setPlaceholderText(self.tr("versus.placeholder"))
        self.edit.setToolTip(self.tr("versus.b_tip"))
        self.pin_button.setText(self.tr("versus.pin"))
        self.pin_button.setToolTip(self.tr("versus.pin_tip"))
        self.clear_button.setText(self.tr("versus.clear"))
        self.controls.setEnabled(s.frame.versus is None)       # a lesson frame's comparison is the lesson's
        v = self.shown = self._versus()
        self.strip.versus, self.strip.current = v, s.frame.step
        c = None if v is None else v.comparison
        if c is None:
            if v is None:
                self._say_computing(self._task)
            else:
                self.caption.setText(v.reason)
                self._tint(self.caption, "error" if v.model_b is not None else "muted")
            self.summary.clear()
            for bars, text in zip(self.bars, self.texts):
                bars.rows = []
                text.show_tokens([], self.piece)
            self._update()
            return
        b = v.b_label(s.lang)
        if v.model_b is not v.model_a:
            b += " · " + self.tr("versus.pinned", model=v.model_b.name)
        self.caption.setText(self.tr("versus.caption", b=b))
        self._tint(self.caption, "text")
        self.summary.setText(self._summary(v, s.frame.step))
        self.summary.setToolTip(self.tr("versus.tv_tip"))
        n_out = len(s.frame.visible_ids) - len(c.a.prompt_ids)
        for col, (run, model) in enumerate(((c.a, v.model_a), (c.b, v.model_b))):
            self.bars[col].rows = self._top(run, model, s.frame.step)
            ids = run.prompt_ids + run.output_ids[:max(0, n_out)]
            chosen = choices_of(run)
            self.texts[col].show_tokens(run_tokens(run, model.vocab, ids,
                                                   lambda i, ch=chosen: chosen_of(*ch[i]) if i < len(ch) else None),
                                        lambda t, vocab=model.vocab: vocab.display_piece(int(t)))
        self._update()

    def _update(self) -> None:
        for widget in (self.strip, *self.bars):
            widget.updateGeometry()
            widget.update()

    def _summary(self, v: Versus, step: int | None) -> str:
        c = v.comparison
        split = self.tr("versus.same_so_far") if c.first_divergence is None else \
            self.tr("versus.parts", step=c.first_divergence).lstrip("▼ ")
        if step is None:
            return self.tr("versus.no_step") + " · " + split

        def chosen(run: Run, model) -> str:
            return model.vocab.display_piece(run.steps[step].selected_id) if step < len(run.steps) \
                else self.tr("versus.stopped")
        d = c.distance(step)
        return self.tr("versus.step", step=step, a=chosen(c.a, v.model_a), b=chosen(c.b, v.model_b),
                       tv="—" if d is None else f"{d:.3f}") + " · " + split

    def _top(self, run: Run, model, step: int | None) -> list[tuple[str, float, bool]]:
        """The final distribution's top candidates at `step` (none before a step or past the run)."""
        if step is None or step >= len(run.steps):
            return []
        st = run.steps[step]
        c = chosen_of(st, st.distribution, st.selected_id)
        rows = [(t, p) for t, p in zip(c.top_ids, c.top_probs)]
        if st.selected_id not in c.top_ids:                  # a token drawn from further down: its own row
            rows.append((st.selected_id, c.prob))
        return [(model.vocab.display_piece(t), p, t == st.selected_id) for t, p in rows]
