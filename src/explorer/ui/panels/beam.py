"""Beam search panel: the tree of prefixes a beam search kept and pruned, with the greedy
path and the final beams; on lesson frames, an evaluator search's tree or a vote's samples."""

from __future__ import annotations

import math

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtWidgets import QGridLayout, QLabel, QTreeWidget, QTreeWidgetItem, QVBoxLayout

from ...i18n import MESSAGES, add_messages
from ...session import Session
from .panel import Panel

add_messages({
    "beam.off": {"en": "Beam search is off. Choose the mode \"beam\" in the sampling controls to see the "
                       "tree of prefixes it keeps and prunes.",
                 "zh": "束搜索未开启。在抽样设置中选择“beam”模式，即可看到它保留和剪掉的前缀树。"},
    "beam.caption": {"en": "prompt {prompt} · width {w} · at most {n} new tokens · length penalty {lp}",
                     "zh": "提示 {prompt} · 宽度 {w} · 最多 {n} 个新Token · 长度惩罚 {lp}"},
    "beam.col.token": {"en": "token", "zh": "Token"},
    "beam.col.prob": {"en": "P(token|prefix)", "zh": "P(Token|前缀)"},
    "beam.col.joint": {"en": "joint P", "zh": "联合概率"},
    "beam.col.status": {"en": "status", "zh": "状态"},
    "beam.root": {"en": "{pieces}", "zh": "{pieces}"},
    "beam.status.root": {"en": "start", "zh": "起点"},
    "beam.status.kept": MESSAGES["status.kept"],
    "beam.status.pruned": MESSAGES["status.pruned"],
    "beam.status.finished": {"en": "finished (end token)", "zh": "已结束（结束Token）"},
    "beam.greedy_mark": {"en": "greedy", "zh": "贪心"},
    "beam.final": {"en": "Final beams, best first:", "zh": "最终候选（从好到差）："},
    "beam.beam_line": {"en": "{i}. {pieces}: joint probability {p}", "zh": "{i}. {pieces}：联合概率 {p}"},
    "beam.greedy_line": {"en": "Greedy (width 1): {pieces}: joint probability {p}",
                         "zh": "贪心（宽度 1）：{pieces}：联合概率 {p}"},
    "search.caption": {"en": "evaluator search · evaluator “{evaluator}” · width {w} · {b} branches · depth {d}",
                       "zh": "带评价器的搜索 · 评价器“{evaluator}” · 宽度 {w} · {b} 个分支 · 深度 {d}"},
    "search.col.score": {"en": "evaluator score", "zh": "评价器得分"},
    "search.col.prob": {"en": "P(token|state)", "zh": "P(Token|状态)"},
    "search.final": {"en": "Best: {pieces} (score {score}) · {forwards} model calls, {evaluations} evaluations",
                     "zh": "最佳：{pieces}（得分 {score}）· 模型调用 {forwards} 次，评价 {evaluations} 次"},
    "vote.caption": {"en": "self-consistency · {n} samples of the same prompt, one per seed",
                     "zh": "自洽 · 同一提示抽样 {n} 次，每个种子一次"},
    "vote.col.seed": {"en": "sample", "zh": "样本"},
    "vote.col.answer": {"en": "answer", "zh": "答案"},
    "vote.col.tokens": {"en": "tokens", "zh": "Token数"},
    "vote.col.finish": {"en": "finish reason", "zh": "结束原因"},
    "vote.seed": {"en": "seed {seed}", "zh": "种子 {seed}"},
    "vote.final": {"en": "Votes: {counts} · majority {majority} ({votes} of {n}) · {tokens} tokens in all",
                   "zh": "票数：{counts} · 多数票 {majority}（{n} 票中 {votes} 票）· 共 {tokens} 个Token"},
    "beam.partial": {"en": "Large vocabulary: each beam was expanded over its top {k} tokens only.",
                     "zh": "词表较大：每条候选只展开了概率最高的 {k} 个Token。"},
    "beam.processors": {"en": "As in Hugging Face's beam search, {names} reshaped every beam's log-probabilities "
                              "(not normalised again).",
                        "zh": "与 Hugging Face 的束搜索相同，{names} 改变了每条候选的对数概率（不再归一化）。"},
})

COLUMNS = ("token", "prob", "joint", "status")


def _num(p: float) -> str:
    """3 decimals, like the course's table; tiny non-zero ones in scientific notation."""
    return f"{p:.1e}" if 0 < p < 5e-4 else f"{p:.3f}"


class BeamPanel(Panel):
    panel_id = "beam"
    title_key = "beam.title"
    SLIDE_GROWTH = 1.6            # the tree of a short search fills a slide with larger type

    def __init__(self, session: Session, parent=None):
        super().__init__(session, parent)
        self.note = QLabel(wordWrap=True)
        self.caption = QLabel(wordWrap=True)
        self.tree = QTreeWidget()
        self.tree.setColumnCount(len(COLUMNS))
        self.tree.setUniformRowHeights(True)
        self.tree.setIndentation(14)
        self.final = QLabel(wordWrap=True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        for w in (self.note, self.caption):
            layout.addWidget(w)
        self._grid = QGridLayout()          # the tree, the final beams under it (or beside: `_arrange`)
        self._grid.addWidget(self.tree, 0, 0)
        self._grid.addWidget(self.final, 1, 0)
        self._grid.setRowStretch(0, 1)
        layout.addLayout(self._grid, 1)
        self._shown = None
        self.refresh()

    # ------------------------------------------------------------------ read-only, for tests
    def rows(self) -> list[tuple[str, ...]]:
        """Every node below the root, depth first: (token, P(token|prefix), joint, status)."""
        out = []

        def walk(item):
            for i in range(item.childCount()):
                child = item.child(i)
                out.append(tuple(child.text(c) for c in range(len(COLUMNS))))
                walk(child)
        for i in range(self.tree.topLevelItemCount()):
            walk(self.tree.topLevelItem(i))
        return out

    # ------------------------------------------------------------------ slides
    def show_on_slide(self) -> None:
        """No scroll bars; the final beams beside the tree where the slide gives the panel
        the width (`_arrange`)."""
        self.tree.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.tree.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        super().show_on_slide()
        self._arrange()

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self.refresh()                       # the columns are sized to their text
            if self.on_slide:
                self._arrange()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self.on_slide:
            self._arrange()

    def _beside(self) -> bool:
        """The final beams beside the tree: on a slide, when they do not fit under it and
        the panel is at least twice as wide as the tree (a slide is wide and short: under
        the tree they pushed a search of a few steps below the body type)."""
        if not self.on_slide:
            return False
        margins = self.layout().contentsMargins()
        room = self.width() - margins.left() - margins.right() - self.layout().spacing()
        return room >= 2 * self._tree_size().width() and self._slide_size(False).height() > self.height()

    def _arrange(self) -> None:
        """The final beams beside the tree or under it (`_beside`)."""
        at = (0, 1) if self._beside() else (1, 0)
        if self._grid.getItemPosition(self._grid.indexOf(self.final))[:2] != at:
            self._grid.removeWidget(self.final)
            self._grid.addWidget(self.final, *at, Qt.AlignmentFlag.AlignTop)

    def _tree_size(self) -> QSize:
        """The tree with every row and its columns as wide as their text."""
        tree = self.tree
        rows, item = 0, tree.topLevelItem(0)
        while item is not None:
            rows += 1
            item = tree.itemBelow(item)
        line = tree.sizeHintForRow(0) if rows else 0
        columns = sum(max(tree.header().sectionSizeHint(c), tree.sizeHintForColumn(c))
                      for c in range(tree.columnCount()))
        return QSize(columns + 2 * tree.frameWidth(),
                     tree.header().sizeHint().height() + rows * line + 2 * tree.frameWidth())

    def slide_content_size(self) -> QSize:
        return self._slide_size(self._beside())

    def _slide_size(self, beside: bool) -> QSize:
        """What the content needs with the final beams beside the tree or under it."""
        margins, spacing = self.layout().contentsMargins(), self.layout().spacing()
        tree = self._tree_size()
        width, body = tree.width(), tree.height()
        final = self.final.heightForWidth(width) if not self.final.isHidden() else 0
        if beside:
            width, body = width * 2 + spacing, max(body, final)
        elif final:
            body += spacing + final
        labels = [w for w in (self.note, self.caption) if not w.isHidden()]
        height = (margins.top() + margins.bottom() + spacing * len(labels) + body
                  + sum(w.heightForWidth(width) for w in labels))
        return QSize(width + margins.left() + margins.right(), height)

    # ------------------------------------------------------------------ drawing
    def has_content(self) -> bool:
        """A tree to show: a beam search, a vote or an evaluator search ran for this frame."""
        frame = self.session.frame
        return any(r is not None for r in (frame.search_result, frame.vote, self.session.beam))

    def refresh(self) -> None:
        frame = self.session.frame
        result = frame.search_result or frame.vote or self.session.beam
        vocab = self.session.model.vocab
        key = (self.session.lang, self.palette().placeholderText().color().name(), self.font().pointSizeF())
        if self._shown is not None and self._shown[0] is result and self._shown[1:] == key:
            return
        self._shown = (result, *key)
        self.tree.setHeaderLabels([self.tr(f"beam.col.{c}") for c in COLUMNS])
        self.tree.clear()
        if result is frame.search_result and result is not None:
            self._show_search(frame.search.evaluator, result, vocab)
            return
        if result is frame.vote and result is not None:
            self._show_vote(result)
            return
        on = result is not None
        for w in (self.caption, self.tree, self.final):
            w.setVisible(on)
        self.note.setVisible(not on)
        if not on:
            self.note.setText(self.tr("beam.off"))
            self.final.setText("")
            return
        prompt = " ".join(vocab.display_piece(t) for t in result.prompt_ids[-8:])
        self.caption.setText(self.tr("beam.caption", prompt=prompt, w=result.num_beams, n=result.max_new_tokens,
                                     lp=f"{result.length_penalty:g}")
                             + ("\n" + self.tr("beam.partial", k=result.children_per_beam)
                                if result.children_per_beam is not None else "")
                             + ("\n" + self.tr("beam.processors", names=", ".join(result.processors))
                                if result.processors else ""))
        greedy_nodes = set()
        if result.greedy.node_id is not None:
            node = result.nodes[result.greedy.node_id]
            while node.parent_id is not None:
                greedy_nodes.add(node.node_id)
                node = result.nodes[node.parent_id]
        mark = self.tr("beam.greedy_mark")
        rows = []
        for node in result.nodes[1:]:
            piece = vocab.display_piece(node.token_id)
            status = self.tr(f"beam.status.{node.status}")
            if node.node_id in greedy_nodes:
                status += f" · ◆ {mark}"
                piece = f"◆ {piece}"
            rows.append((node, [piece, _num(math.exp(node.logprob)), _num(node.prob), status]))
        self._fill_tree([self.tr("beam.root", pieces=prompt), "", "", self.tr("beam.status.root")], rows)

        def pieces(ids):
            return " ".join(vocab.display_piece(t) for t in ids)
        lines = [self.tr("beam.final")]
        lines += [self.tr("beam.beam_line", i=i, pieces=pieces(h.ids), p=_num(h.prob))
                  for i, h in enumerate(result.beams, 1)]
        lines.append("◆ " + self.tr("beam.greedy_line", pieces=pieces(result.greedy.ids),
                                       p=_num(result.greedy.prob)))
        self.final.setText("\n".join(lines))

    def _show_on(self) -> None:
        for w in (self.caption, self.tree, self.final):
            w.setVisible(True)
        self.note.setVisible(False)

    def _fill_tree(self, root: list[str], rows) -> None:
        """A root item, then one item of cells under its parent for each (node, cells); pruned
        nodes greyed."""
        items = {0: QTreeWidgetItem(root)}
        self.tree.addTopLevelItem(items[0])
        for node, cells in rows:
            item = QTreeWidgetItem(cells)
            if node.status == "pruned":
                item.setForeground(0, self.palette().placeholderText())
            items[node.parent_id].addChild(item)
            items[node.node_id] = item
        self._fit_columns()

    def _fit_columns(self) -> None:
        self.tree.expandAll()
        for c in range(len(COLUMNS)):
            self.tree.resizeColumnToContents(c)

    def _show_search(self, evaluator: str, result, vocab) -> None:
        """An evaluator search: the tree with each state's model probability and score."""
        self._show_on()
        self.tree.setHeaderLabels([self.tr("beam.col.token"), self.tr("search.col.prob"),
                                   self.tr("search.col.score"), self.tr("beam.col.status")])
        self.caption.setText(self.tr("search.caption", evaluator=evaluator, w=result.width, b=result.branches,
                                     d=result.depth))
        prompt = " ".join(vocab.display_piece(t) for t in result.prompt_ids[-8:])
        self._fill_tree([prompt, "", "", self.tr("beam.status.root")],
                        [(node, [vocab.display_piece(node.token_id), _num(node.prob), f"{node.score:.4f}",
                                 self.tr(f"beam.status.{node.status}")]) for node in result.nodes[1:]])
        best = result.best
        self.final.setText(self.tr("search.final", pieces=" ".join(vocab.display_piece(t) for t in
                                                                   result.path(best.node_id)),
                                   score=f"{best.score:.4f}", forwards=result.forwards,
                                   evaluations=result.evaluations))

    def _show_vote(self, vote) -> None:
        """A self-consistency vote: one row per seeded sample, the answers side by side."""
        self._show_on()
        self.tree.setHeaderLabels([self.tr(f"vote.col.{c}") for c in ("seed", "answer", "tokens", "finish")])
        self.caption.setText(self.tr("vote.caption", n=len(vote.samples)))
        for sample in vote.samples:
            item = QTreeWidgetItem([self.tr("vote.seed", seed=sample.seed), sample.answer, str(sample.tokens),
                                    sample.run.finish_reason])
            if sample.answer != vote.majority:
                item.setForeground(1, self.palette().placeholderText())
            self.tree.addTopLevelItem(item)
        self._fit_columns()
        self.final.setText(self.tr("vote.final", counts=", ".join(f"{a} × {n}" for a, n in vote.counts),
                                   majority=vote.majority, votes=vote.majority_votes, n=len(vote.samples),
                                   tokens=vote.tokens))
