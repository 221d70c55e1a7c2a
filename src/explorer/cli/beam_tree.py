"""The beam search tree of `explorer trace --mode beam` as indented terminal text."""

from __future__ import annotations

import math

from ..core.decode.beam import BeamNode, BeamResult, Hypothesis
from ..core.errors import SettingError
from ..core.tokens.vocab import Vocabulary
from ..i18n import LANGS, MESSAGES, add_messages, tr
from .texttable import display_width

add_messages({
    "beam.tree.title": {"en": "beam search: width {w}, length penalty {lp}, at most {n} new tokens",
                        "zh": "束搜索：宽度 {w}，长度惩罚 {lp}，最多 {n} 个新 Token"},
    "beam.tree.col.token": {"en": "token", "zh": "Token"},
    "beam.tree.col.prob": {"en": "P(token|prefix)", "zh": "P(Token|前缀)"},
    "beam.tree.col.joint": {"en": "joint P", "zh": "联合概率"},
    "beam.tree.col.status": {"en": "status", "zh": "状态"},
    "beam.tree.root": {"en": "prompt", "zh": "提示词"},
    "beam.tree.kept": MESSAGES["status.kept"],
    "beam.tree.pruned": {"en": "pruned", "zh": "剪枝"},
    "beam.tree.finished": {"en": "finished (EOS)", "zh": "完成（EOS）"},
    "beam.tree.beams": {"en": "final beams, best first:", "zh": "最终候选（从好到差）："},
    "beam.tree.greedy": {"en": "greedy (width 1):", "zh": "贪心（宽度 1）："},
    "beam.tree.joint": {"en": "joint", "zh": "联合概率"},
    "beam.tree.logprob": {"en": "log-prob", "zh": "对数概率"},
    "beam.tree.normalised": {"en": "normalised", "zh": "归一化得分"},
    "beam.tree.eos": {"en": "(ended by EOS)", "zh": "（因 EOS 结束）"},
    "beam.tree.length": {"en": "(ended by the length limit)", "zh": "（因长度上限结束）"},
    "beam.tree.partial": {"en": "each beam expanded over its top {k} tokens only (large vocabulary)",
                          "zh": "词表较大：每条候选只展开概率最高的 {k} 个 Token"},
    "beam.tree.processors": {"en": "every beam's log-probabilities then pass {names}, as in Hugging Face's beam "
                                   "search (not normalised again: siblings need not sum to 1)",
                             "zh": "每条候选的对数概率再经过 {names}，与 Hugging Face 的束搜索相同（不再归一化：同层概率之和可以不是1）"},
})

COLUMNS = ("token", "prob", "joint", "status")


def format_tree(result: BeamResult, vocab: Vocabulary, lang: str = "en") -> str:
    """The search tree as indented text for the terminal, then the final beams and greedy."""
    if lang not in LANGS:
        raise SettingError(f"lang = {lang!r}: expected one of {LANGS}")
    children: dict[int, list[BeamNode]] = {}
    for node in result.nodes[1:]:
        children.setdefault(node.parent_id, []).append(node)
    rows = [(_pieces(vocab, result.prompt_ids[-8:], len(result.prompt_ids) > 8), "", "",
             tr("beam.tree.root", lang))]
    stack = [(kid, "", last) for kid, last in _last_first(children.get(0, []))]
    while stack:                                   # depth-first, children in ranking order
        node, indent, last = stack.pop()
        rows.append((indent + ("└─ " if last else "├─ ") + vocab.display_piece(node.token_id),
                     _num(math.exp(node.logprob)), _num(node.prob), tr(f"beam.tree.{node.status}", lang)))
        below = indent + ("   " if last else "│  ")
        stack += [(kid, below, is_last) for kid, is_last in _last_first(children.get(node.node_id, []))]
    lines = [tr("beam.tree.title", lang, w=result.num_beams, lp=result.length_penalty, n=result.max_new_tokens)]
    if result.children_per_beam is not None:
        lines.append(tr("beam.tree.partial", lang, k=result.children_per_beam))
    if result.processors:
        lines.append(tr("beam.tree.processors", lang, names=", ".join(result.processors)))
    lines += _columns([tuple(tr(f"beam.tree.col.{c}", lang) for c in COLUMNS)] + rows)
    lines.append(tr("beam.tree.beams", lang))
    lines += [f"  {i}. {_summary(vocab, h, lang, result.length_penalty)}"
              for i, h in enumerate(result.beams, 1)]
    lines.append(f"{tr('beam.tree.greedy', lang)} {_summary(vocab, result.greedy, lang, result.length_penalty)}")
    return "\n".join(lines)


def _last_first(kids: list[BeamNode]) -> list[tuple[BeamNode, bool]]:
    """(child, is it the last sibling) in reverse order, ready to be pushed on a stack."""
    return [(kid, i == len(kids) - 1) for i, kid in enumerate(kids)][::-1]


def _summary(vocab: Vocabulary, h: Hypothesis, lang: str, length_penalty: float) -> str:
    text = (f"{_pieces(vocab, h.ids)}   {tr('beam.tree.joint', lang)} {_num(h.prob)}   "
            f"{tr('beam.tree.logprob', lang)} {h.score:.4f}")
    if length_penalty != 0:
        text += f"   {tr('beam.tree.normalised', lang)} {h.normalised_score:.4f}"
    return f"{text}   {tr(f'beam.tree.{h.finish_reason}', lang)}"


def _columns(rows) -> list[str]:
    """Rows of cells as left-aligned columns, by display width (a CJK character is 2 wide)."""
    widths = [max(display_width(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell + " " * (w - display_width(cell)) for cell, w in zip(r, widths)).rstrip()
            for r in rows]


def _pieces(vocab: Vocabulary, ids, cut: bool = False) -> str:
    return ("… " if cut else "") + vocab.display_pieces(ids)


def _num(p: float) -> str:
    """A probability with 4 decimals; tiny non-zero ones in scientific notation."""
    return f"{p:.1e}" if 0 < p < 5e-5 else f"{p:.4f}"
