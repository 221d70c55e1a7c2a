"""Beam search panel: the tree of prefixes the search expanded (session.beam), one row per
node with its token, P(token | prefix), the joint probability of the new tokens and its
status in words (kept / pruned / finished), the greedy path marked, and the final beams
with their joint probability. Outside beam mode, a short note. The panel shows the
BeamResult core computed; it computes no model math."""

from __future__ import annotations

import math

from PySide6.QtWidgets import QLabel, QTreeWidget, QTreeWidgetItem, QVBoxLayout

from ..i18n import add_messages
from .panel import Panel

add_messages({
    "beam.title": {"en": "Beam search", "zh": "束搜索"},
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
    "beam.status.kept": {"en": "kept", "zh": "保留"},
    "beam.status.pruned": {"en": "pruned", "zh": "剪掉"},
    "beam.status.finished": {"en": "finished (end token)", "zh": "已结束（结束Token）"},
    "beam.greedy_mark": {"en": "greedy", "zh": "贪心"},
    "beam.final": {"en": "Final beams, best first:", "zh": "最终候选（从好到差）："},
    "beam.beam_line": {"en": "{i}. {pieces}: joint probability {p}", "zh": "{i}. {pieces}：联合概率 {p}"},
    "beam.greedy_line": {"en": "Greedy (width 1): {pieces}: joint probability {p}",
                         "zh": "贪心（宽度 1）：{pieces}：联合概率 {p}"},
    "beam.partial": {"en": "Large vocabulary: each beam was expanded over its top {k} tokens only.",
                     "zh": "词表较大：每条候选只展开了概率最高的 {k} 个Token。"},
})

COLUMNS = ("token", "prob", "joint", "status")


def _num(p: float) -> str:
    """3 decimals, like the course's table; tiny non-zero ones in scientific notation."""
    return f"{p:.1e}" if 0 < p < 5e-4 else f"{p:.3f}"


class BeamPanel(Panel):
    panel_id = "beam"
    title_key = "beam.title"

    def __init__(self, session, parent=None):
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
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.final)
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

    def final_text(self) -> str:
        return self.final.text()

    # ------------------------------------------------------------------ drawing
    def refresh(self) -> None:
        result = self.session.beam
        vocab = self.session.model.vocab
        key = (self.session.lang, self.palette().placeholderText().color().name())
        if self._shown is not None and self._shown[0] is result and self._shown[1:] == key:
            return
        self._shown = (result, *key)
        self.tree.setHeaderLabels([self.tr(f"beam.col.{c}") for c in COLUMNS])
        self.tree.clear()
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
                                if result.children_per_beam is not None else ""))
        greedy_nodes = set()
        if result.greedy.node_id is not None:
            node = result.nodes[result.greedy.node_id]
            while node.parent_id is not None:
                greedy_nodes.add(node.node_id)
                node = result.nodes[node.parent_id]
        items = {0: QTreeWidgetItem([self.tr("beam.root", pieces=prompt), "", "",
                                     self.tr("beam.status.root")])}
        self.tree.addTopLevelItem(items[0])
        mark = self.tr("beam.greedy_mark")
        for node in result.nodes[1:]:
            piece = vocab.display_piece(node.token_id)
            status = self.tr(f"beam.status.{node.status}")
            if node.node_id in greedy_nodes:
                status += f" · ◆ {mark}"
                piece = f"◆ {piece}"
            item = QTreeWidgetItem([piece, _num(math.exp(node.logprob)), _num(node.prob), status])
            if node.status == "pruned":
                item.setForeground(0, self.palette().placeholderText())
            items[node.parent_id].addChild(item)
            items[node.node_id] = item
        self.tree.expandAll()
        for c in range(len(COLUMNS)):
            self.tree.resizeColumnToContents(c)

        def pieces(ids):
            return " ".join(vocab.display_piece(t) for t in ids)
        lines = [self.tr("beam.final")]
        lines += [self.tr("beam.beam_line", i=i, pieces=pieces(h.ids), p=_num(h.prob))
                  for i, h in enumerate(result.beams, 1)]
        lines.append("◆ " + self.tr("beam.greedy_line", pieces=pieces(result.greedy.ids),
                                       p=_num(result.greedy.prob)))
        self.final.setText("\n".join(lines))
