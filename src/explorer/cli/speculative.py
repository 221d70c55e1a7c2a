"""`explorer trace --speculative K`: the same prompt decoded speculatively, pass by pass."""

from __future__ import annotations

import json

from ..core.elide import ENDS, elided, elided_list
from ..core.decode.run_dict import speculative_to_dict
from ..core.decode.generate import Run
from ..core.decode.speculative import (DEFAULT_NGRAM, VerifyStep, acceptance_rate, accepted_counts,
                               passes_saved, prompt_lookup, speculative_generate)
from ..core.tokens.vocab import Vocabulary
from ..i18n import add_messages, tr
from ..session.narration import finish_text
from .flags import check_speculative_mode
from .settings_line import settings_text
from .texttable import format_table

add_messages({
    "spec.col.draft": {"en": "draft", "zh": "草稿"},
    "spec.col.accepted": {"en": "accepted", "zh": "接受"},
    "spec.col.rejected": {"en": "rejected", "zh": "拒绝"},
    "spec.col.model": {"en": "model's own token", "zh": "模型自己的Token"},
    "spec.col.kv": {"en": "cache written → kept", "zh": "缓存写入→保留"},
    "spec.col.saved": {"en": "passes saved", "zh": "省下的前向"},
    "spec.accepted_of": {"en": "{a} of {k}", "zh": "{k}个中{a}个"},
    "spec.heading": {"en": "speculative decoding: up to {k} drafted tokens per pass (prompt lookup, n-grams up to {n})",
                     "zh": "投机解码：每次前向最多验证{k}个草稿Token（提示查找，n-gram最长{n}）"},
    "spec.accepted_counts": {"en": "accepted per verify pass: {counts}", "zh": "每次验证接受的草稿数：{counts}"},
    "spec.rate": {"en": "drafted {drafted}, accepted {accepted} ({rate})", "zh": "共起草{drafted}个，接受{accepted}个（{rate}）"},
    "spec.passes": {"en": "forward passes: {passes} instead of {plain} (one per output token): {saved} saved",
                    "zh": "前向计算：{passes}次，逐个解码需要{plain}次（每个输出Token一次）：省下{saved}次"},
    "spec.skipped": {"en": "has what-if choices ({steps}); speculative decoding verifies the model's own "
                           "choices: not run", "zh": "含有人为指定的选择（{steps}）；投机解码只验证模型自己的选择：未运行"},
})


def speculative_output(scenarios, names, args) -> str:
    """Every scenario decoded speculatively, as tables (or JSON); `names` label the scenarios
    of a lesson (empty: one scenario, no label)."""
    ngram = DEFAULT_NGRAM if args.ngram is None else args.ngram        # checked by `check_run_flags`
    drafter = prompt_lookup(ngram)
    data, blocks = [], []
    for i, s in enumerate(scenarios):
        check_speculative_mode(s.config)
        label = f"{tr('scenario', args.lang, name=names[i])}\n" if names else ""
        if s.overrides:
            steps = ", ".join(f"{step}:{token}" for step, token in s.overrides)
            blocks.append(label + tr("spec.skipped", args.lang, steps=steps))
            continue
        run = speculative_generate(s.model, s.prompt_ids, s.config, k=args.speculative, drafter=drafter,
                                   check_recompute=not args.no_check)
        data.append({**speculative_to_dict(run, s.model.vocab, args.speculative, args.top), "ngram": ngram})
        blocks.append(label + format_speculative(run, s.model.vocab, args.speculative, args.lang, ngram))
    if args.json:
        return json.dumps(data[0] if len(data) == 1 else data, ensure_ascii=False, indent=2)
    return "\n\n".join(blocks)


def format_speculative(run: Run, vocab: Vocabulary, k: int, lang: str = "en", ngram: int = DEFAULT_NGRAM) -> str:
    """One row per forward pass (the Prefill, then each verify pass), then the accepted
    counts, the acceptance rate and the forward passes saved."""
    pieces = vocab.display_pieces
    none = "-"
    rows = []
    for s in run.steps:
        verify = isinstance(s, VerifyStep)
        draft, rejected = (s.draft, s.rejected) if verify else ((), ())
        own = not verify or len(s.new_ids) > s.accepted           # the last new token is the model's own
        rows.append([tr("phase.verify", lang, n=s.index) if verify else tr("phase.prefill", lang),
                     f"{pieces(s.input_ids, ENDS)} {elided_list(s.input_ids)}",
                     elided([str(x) for x in s.positions], ","),
                     pieces(draft) if draft else none,
                     tr("spec.accepted_of", lang, a=s.accepted, k=len(draft)) if draft else none,
                     pieces(rejected) if rejected else none,
                     f"{s.selected_id} {vocab.display_piece(s.selected_id)}" if own else none,
                     f"{s.cache_len_written if verify else s.cache_len_after} → {s.cache_len_after}",
                     s.passes_saved if verify else 0,
                     "-" if s.recompute_max_abs_diff is None else f"{s.recompute_max_abs_diff:.1e}"])
    headers = [tr(key, lang) for key in ("col.time", "col.input", "col.positions", "spec.col.draft",
                                         "spec.col.accepted", "spec.col.rejected", "spec.col.model", "spec.col.kv",
                                         "spec.col.saved", "col.diff")]
    counts = accepted_counts(run)
    rate = acceptance_rate(run)
    lines = [
        tr("spec.heading", lang, k=k, n=ngram),
        settings_text(run.config, lang),
        f"{tr('prompt', lang)}: {pieces(run.prompt_ids)} {list(run.prompt_ids)}",
        "",
        format_table(headers, rows, align_right=(8,)),
        "",
        f"{tr('output', lang)}: {pieces(run.output_ids)} {list(run.output_ids)}  \u2192 {run.output_text!r}",
        tr("spec.accepted_counts", lang, counts=list(counts)),
        tr("spec.rate", lang, drafted=sum(len(s.draft) for s in run.steps if isinstance(s, VerifyStep)),
           accepted=sum(counts), rate="-" if rate is None else f"{rate:.0%}"),
        tr("spec.passes", lang, passes=len(run.steps), plain=len(run.output_ids), saved=passes_saved(run)),
        tr("counts", lang, visible=len(run.visible_ids), cache=run.cache_len, chars=len(run.output_text)),
        tr("finish", lang, reason=finish_text(run, lang)),
    ]
    if run.max_recompute_diff is not None:
        lines.append(tr("max_diff", lang, diff=f"{run.max_recompute_diff:.2e}"))
    return "\n".join(lines)
