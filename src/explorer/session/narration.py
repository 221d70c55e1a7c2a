"""Titles and explanations of derived frames, in English and Chinese, with the Run's own
numbers filled in. A lesson may supply authored text instead; this is the default."""

from __future__ import annotations

from ..core.models.attention import attention_weights
from ..core.elide import ENDS, elided_list
from ..core.decode.generate import Run
from ..core.decode.search import SearchResult
from ..core.decode.speculative import VerifyStep, accepted_counts, passes_saved
from ..core.decode.usage import Usage, count_usage
from ..core.decode.vote import Vote
from ..core.tokens.vocab import Vocabulary, one_line
from ..i18n import MESSAGES, add_messages, tr
from .changes import badge_text, changes_text, written_for_the_lesson
from .frames import Frame

SECTIONS = ("what", "why", "how", "misconception", "check")

add_messages({
    "spec.none": {"en": "none", "zh": "无"},
    "frame.input": {"en": "Input {pieces} = {ids}: nothing has been processed yet",
                    "zh": "输入 {pieces} = {ids}：还没有处理任何Token"},
    "frame.prefill": {"en": "Prefill: positions {first}–{last} processed together, cache {cache}",
                      "zh": "Prefill：一次处理位置{first}–{last}，缓存长{cache}"},
    "frame.decode": {"en": "Decode {n}: feed {piece} at position {pos}, cache {cache}",
                     "zh": "Decode {n}：把{piece}送入位置{pos}，缓存长{cache}"},
    "frame.pick": {"en": "Selected {piece} (id {id}) from the logits at position {pos}",
                   "zh": "用位置{pos}的logits选出{piece}（编号{id}）"},
    "frame.pick_forced": {"en": "Forced {piece} (id {id}) at position {pos} (what-if)",
                          "zh": "在位置{pos}人为指定{piece}（编号{id}，假设实验）"},
    "frame.stop": {"en": "Stop ({short}): {visible} visible, {cache} in cache",
                   "zh": "停止（{short}）：可见{visible}个，缓存{cache}个"},
    "list.sep": {"en": ", ", "zh": "，"},
    "vote.sample": {"en": "seed {seed} → {answer} ({tokens} tokens)", "zh": "种子{seed} → {answer}（{tokens}个Token）"},
    "vote.count": {"en": "{answer} × {n}", "zh": "{answer} × {n}"},
    "search.level": {"en": "Depth {depth}: {items}", "zh": "第{depth}层：{items}"},
    "search.levels_sep": {"en": "; ", "zh": "；"},
    "search.node": {"en": "{piece} {score} {status}", "zh": "{piece} {score} {status}"},
    "search.kept": MESSAGES["status.kept"],
    "search.pruned": MESSAGES["status.pruned"],
    "search.finished": {"en": "finished", "zh": "已结束"},
    "incomplete_after": {"en": ", incomplete", "zh": "，不完整"},     # after a finish reason code
    "diff.unchecked": {"en": "not checked on this run", "zh": "本次未检查"},   # {diff} without a recompute
    "section.what": {"en": "What happened", "zh": "发生了什么"},
    "section.why": {"en": "Why it matters", "zh": "为什么重要"},
    "section.how": {"en": "How it is implemented", "zh": "怎样实现"},
    "section.misconception": {"en": "A common misconception", "zh": "常见误解"},
    "section.check": {"en": "How to check it was done right", "zh": "如何检查做对了"},
    "caption.sep": {"en": ". ", "zh": "。"},
    "section.changed": {"en": "Your settings differ from the lesson's", "zh": "你的设置与课程不同"},
    "section.question": {"en": "Question for the class", "zh": "请大家先想一想"},
    "section.answer": {"en": "Answer", "zh": "答案"},
    "question.wait": {"en": "The answer and the explanation follow when the {panels} is revealed (Reveal, V).",
                      "zh": "揭晓{panels}（“揭晓”，V键）之后，再给出答案和讲解。"},

    "explain.input.what": {
        "en": "The prompt was split into {n} tokens {ids}. The model has not run: the KV cache is empty.",
        "zh": "提示被切成{n}个Token {ids}。模型还没有运行，KV缓存是空的。"},
    "explain.input.why": {
        "en": "Keep two counts apart from the start: tokens on screen and tokens the model has processed.",
        "zh": "从一开始就把两个数分开：屏幕上可见的Token数，与模型已经处理过的Token数。"},
    "explain.input.how": {
        "en": "The loop is: run a forward pass, select a token, check whether to stop; if not, feed only the new token.",
        "zh": "循环是：前向计算、选一个Token、判断是否停止；不停就只把新Token送进去。"},
    "explain.input.misconception": {
        "en": "The answer is not planned in advance and revealed word by word; each token depends on the ones before.",
        "zh": "回答不是先整体想好再逐字显示；每个Token都依赖前面已选出的Token。"},
    "explain.input.check": {
        "en": "Visible {visible}, in cache 0.", "zh": "可见{visible}个，缓存0个。"},

    "explain.prefill.what": {
        "en": "All {n} prompt tokens went through every layer at once, positions {first}–{last}. "
              "Their keys and values are now in the cache (length {cache}).",
        "zh": "{n}个提示Token一起经过了所有层，位置{first}–{last}。它们的K和V已写入缓存（长度{cache}）。"},
    "explain.prefill.why": {
        "en": "The prompt is known, so its positions can be computed in parallel; the causal mask keeps each "
              "position from reading later ones.",
        "zh": "提示是已知的，所以各位置可以并行计算；因果mask保证每个位置看不到后面的位置。"},
    "explain.prefill.how": {
        "en": "One matrix product per layer over all prompt positions; the attention matrix is lower-triangular.",
        "zh": "每层对所有提示位置做一次矩阵运算；注意力矩阵是下三角的。"},
    "explain.prefill.misconception": {
        "en": "Prefill does not produce the whole answer. It ends with the scores for one next token.",
        "zh": "Prefill并不会产生整段回答，它结束时只得到下一个Token的分数。"},
    "explain.prefill.check": {
        "en": "Cache length = prompt length = {cache}. Largest difference from a full recompute: {diff}.",
        "zh": "缓存长度 = 提示长度 = {cache}。与完整重算的最大差：{diff}。"},
    "explain.prefill.check_unchecked": {
        "en": "Cache length = prompt length = {cache}. This model is not recomputed from scratch at every "
              "step (too slow while a slider moves); the command “explorer trace” does it and prints the difference.",
        "zh": "缓存长度 = 提示长度 = {cache}。这个模型不在每一步都从头重算（拖动滑块时太慢）；"
              "命令“explorer trace”会重算并打印差值。"},

    "explain.decode.what": {
        "en": "Only the token selected last time, {piece}, was fed in, at position {pos}. It read the cached "
              "keys and values of the earlier positions and added its own: the cache grew to {cache}.",
        "zh": "只把上一轮选出的{piece}送入位置{pos}。它读取缓存里前面位置的K和V，并写入自己的：缓存增长到{cache}。"},
    "explain.decode.why": {
        "en": "The next token depends on this one, which was unknown until it was selected; decoding is sequential.",
        "zh": "下一个Token依赖这个Token，而它在被选出之前是未知的；所以解码只能一步一步来。"},
    "explain.decode.how": {
        "en": "Input of length 1 plus the cache; every layer still runs, each with its own cache.",
        "zh": "输入长度为1，再加上缓存；所有层仍然都要运行，每层用自己的缓存。"},
    "explain.decode.misconception": {
        "en": "The cache saves recomputing old positions; it does not skip layers for the new token.",
        "zh": "缓存省掉的是旧位置的重复计算，并不是让新Token跳过某些层。"},
    "explain.decode.check": {
        "en": "The logits equal a full recompute of all {cache} tokens: largest difference {diff}.",
        "zh": "这一步的logits与把{cache}个Token从头重算的结果一致：最大差{diff}。"},
    "explain.decode.check_unchecked": {
        "en": "The logits should equal a full recompute of all {cache} tokens. This model is not recomputed "
              "at every step (too slow while a slider moves); the command “explorer trace” does it and prints the "
              "largest difference.",
        "zh": "这一步的logits应当与把{cache}个Token从头重算的结果一致。这个模型不在每一步都重算"
              "（拖动滑块时太慢）；命令“explorer trace”会重算并打印最大差。"},

    "explain.pick.what": {
        "en": "From the logits at position {pos}, {piece} (id {id}) was selected {how}. It is visible now but "
              "has not been processed: the cache still holds {cache}.",
        "zh": "用位置{pos}的logits{how}选出了{piece}（编号{id}）。它现在可见，但还没有被处理：缓存仍是{cache}。"},
    "explain.pick.why": {
        "en": "Selected is not processed. Counting the selected token in the cache shifts every position by one.",
        "zh": "选出不等于已处理。把刚选出的Token算进缓存，会让后面所有位置错一位。"},
    "explain.pick.how": {
        "en": "Logits → processors (temperature, top-k, top-p, …) → probabilities → one choice.",
        "zh": "logits → 各处理器（温度、top-k、top-p…）→ 概率 → 选一个。"},
    "explain.pick.misconception": {
        "en": "A probability is not the chance the answer is correct; a low temperature only makes the top "
              "choice more certain, not more true.",
        "zh": "概率不是答案正确的可能性；低温只让最高项更稳定地被选中，并不让它更正确。"},
    "explain.pick.check": {
        "en": "Visible {visible}, in cache {cache}: they differ by exactly one.",
        "zh": "可见{visible}个，缓存{cache}个：正好差一个。"},
    "how.greedy": {"en": "greedily (highest score)", "zh": "用贪心（取最高分）"},
    "how.sample": {"en": "by sampling (u = {u})", "zh": "通过抽样（u = {u}）"},
    "how.forced": {"en": "by a what-if override", "zh": "通过人为指定"},

    "explain.stop.what": {
        "en": "Generation ended: {reason}. The last selected token is never fed back in: {visible} visible, "
              "{cache} in cache.",
        "zh": "生成结束：{reason}。最后选出的Token不会再送入模型：可见{visible}个，缓存{cache}个。"},
    "explain.stop.why": {
        "en": "Why it stopped matters: an end token, a stop text, a length limit and a tool call mean "
              "different things; only the first is the model's own end.",
        "zh": "停止原因很重要：结束Token、停止字符串、长度上限和工具调用含义不同；只有第一种是模型自己结束。"},
    "explain.stop.how": {
        "en": "After each selection the loop checks the end token, tool calls, stop strings and the budget.",
        "zh": "每次选出后，循环依次检查结束Token、工具调用、停止字符串和长度预算。"},
    "explain.stop.misconception": {
        "en": "Output that stops arriving is not the same as a finished answer, let alone a finished task.",
        "zh": "不再收到文字不等于回答完整，更不等于任务完成。"},
    "explain.stop.check": {
        "en": "Selections {ids}, cache lengths {caches}; largest difference from a full recompute: {diff}.",
        "zh": "选出 {ids}，缓存长度 {caches}；与完整重算的最大差：{diff}。"},
    "explain.stop.check_unchecked": {
        "en": "Selections {ids}, cache lengths {caches}. This model is not recomputed from scratch at every "
              "step (too slow while a slider moves); the command “explorer trace” does it.",
        "zh": "选出 {ids}，缓存长度 {caches}。这个模型不在每一步都从头重算（拖动滑块时太慢）；"
              "命令“explorer trace”会重算。"},
})


def frame_usage(frame: Frame, run: Run, vocab: Vocabulary) -> Usage:
    """The usage (prompt, reasoning and answer tokens) of the sequence a frame shows."""
    return count_usage(run.prompt_ids, frame.visible_ids[len(run.prompt_ids):], vocab)


def shown_text(frame: Frame, run: Run, vocab: Vocabulary, usage: Usage | None = None) -> str:
    """The text a chat window shows at this frame: the answer so far, without reasoning
    segments or special tokens, an incomplete last character held back, and on the stop
    frame of a stop-string run the stop text and what follows it cut off."""
    usage = usage or frame_usage(frame, run, vocab)
    text = vocab.decode(usage.answer_ids)
    stop = run.stop_match
    if frame.kind == "stop" and stop is not None and stop.text in text:
        text = text[:text.index(stop.text)]
    return text


def _diff(value, lang: str) -> str:
    return tr("diff.unchecked", lang) if value is None else f"{value:.1e}"


def placeholder_values(frame: Frame, run: Run, vocab: Vocabulary, lang: str) -> dict:
    """The {placeholders} a frame's text may use, with this run's numbers. Token and id
    lists longer than 11 keep five from each end ("[1, 9690, …(+26)…, 198]")."""
    step = None if frame.step is None else run.steps[frame.step]
    values = {"visible": frame.visible_count, "cache": frame.cache_len,
              "ids": elided_list(frame.visible_ids), "n": len(run.prompt_ids),
              "pieces": vocab.display_pieces(run.prompt_ids, ENDS),
              "text": vocab.decode(frame.visible_ids[len(run.prompt_ids):])}
    usage = frame_usage(frame, run, vocab)
    answer = shown_text(frame, run, vocab, usage)
    values |= usage.as_dict() | {"answer": answer, "chars": len(answer)}
    for name, whole in frame.usages:              # {total_tokens@tool}: another scenario's whole run
        values |= {f"{key}@{name}": n for key, n in whole.as_dict().items()}
    values |= _prefix_values(run, vocab)
    if frame.vote is not None:
        values |= _vote_values(frame.vote, lang)
    if frame.search_result is not None:
        values |= _search_values(frame.search_result, vocab, lang)
    if frame.lens is not None:
        values |= _lens_values(frame.lens, lang)
    if frame.versus is not None:
        values |= _versus_values(frame, vocab, lang)
    if step is not None:
        dist = step.distribution
        how = ("how.forced" if step.forced else "how.greedy" if dist.greedy else "how.sample")
        values |= {"first": step.positions[0], "last": step.positions[-1], "pos": step.positions[-1],
                   "piece": vocab.display_piece(step.selected_id if frame.kind in ("pick", "stop")
                                                else step.input_ids[-1]),
                   "id": step.selected_id, "diff": _diff(step.recompute_max_abs_diff, lang),
                   "how": tr(how, lang, u=f"{dist.u:.3f}" if dist.u is not None else ""),
                   "prob": f"{dist.probs[step.selected_id]:.4f}",
                   "u": "-" if dist.u is None else f"{dist.u:.4f}"}
        if frame.kind == "decode":
            values["n"] = step.index
        if frame.attention is not None:
            values |= _attended(step, frame.attention, vocab)
    values |= _speculative_values(step, run, vocab, lang)     # also plain: a what-if decodes a speculative lesson plainly
    if frame.kind == "stop":
        values |= {"reason": finish_text(run, lang), "short": finish_short(run, lang), "ids": elided_list(run.output_ids),
                   "caches": elided_list(s.cache_len_after for s in run.steps),
                   "diff": _diff(run.max_recompute_diff, lang)}
    return values


def milliseconds(seconds: float) -> str:
    """"183", "4.2", "0.35": milliseconds with two or three significant digits."""
    ms = seconds * 1000
    return f"{ms:.0f}" if ms >= 10 else f"{ms:.1f}" if ms >= 1 else f"{ms:.2f}"


def _prefix_values(run: Run, vocab: Vocabulary) -> dict:
    """{reused} {computed} {cached} {prefix_bytes} {invalidated} {changed_at} {changed_piece}
    {cached_piece}: what the run's Prefill took from a prefix cache (none without one)."""
    hit = run.prefix
    if hit is None:
        return {}
    changed = hit.match.changed_at
    return {"reused": hit.reused, "computed": run.steps[0].computed_positions, "cached": len(hit.cached_ids),
            "prefix_bytes": f"{hit.stored_bytes:,}", "invalidated": len(hit.match.invalidated),
            "changed_at": "-" if changed is None else changed,
            "changed_piece": "-" if changed is None else vocab.display_piece(run.prompt_ids[changed]),
            "cached_piece": "-" if changed is None else vocab.display_piece(hit.cached_ids[changed])}


def _speculative_values(step, run: Run, vocab: Vocabulary, lang: str) -> dict:
    """A speculative run's totals, {passes} {plain_passes} {passes_saved} {accepted_counts}, and a
    verify pass's {draft} {k} {accepted} {kept} {rejected} {rejected_n} {model_piece} {written}
    {rolled_back} {saved} ({draft} etc. are "-" / 0 on other steps)."""
    values = {"passes": len(run.steps), "plain_passes": len(run.output_ids), "passes_saved": passes_saved(run),
              "accepted_counts": elided_list(accepted_counts(run))}
    none = tr("spec.none", lang)
    if not isinstance(step, VerifyStep):
        return values | {"draft": none, "k": 0, "accepted": 0, "kept": none, "rejected": none, "rejected_n": 0,
                         "model_piece": none, "written": 0, "rolled_back": 0, "saved": 0}
    def shown(ids):
        return vocab.display_pieces(ids) if ids else none
    return values | {"draft": shown(step.draft), "k": len(step.draft), "accepted": step.accepted,
                     "kept": shown(step.draft[:step.accepted]), "rejected": shown(step.rejected),
                     "rejected_n": len(step.rejected), "model_piece": vocab.display_piece(step.new_ids[-1]),
                     "written": step.cache_len_written, "rolled_back": step.cache_len_written - step.cache_len_after,
                     "saved": step.passes_saved}


def _lens_values(lens, lang: str) -> dict:
    """{layers} {commit_layer} {commit_prob} and the layer before it, {before_layer} {before_rank}
    {before_prob}: where the selected token becomes and stays top-1 (none: "none")."""
    commit, last = lens.commit_layer, lens.n_layers - 1
    values = {"layers": lens.n_layers, "commit_layer": tr("spec.none", lang) if commit is None else commit}
    before = (last if commit is None else commit - 1)
    values["commit_prob"] = "-" if commit is None else f"{lens.selected_probs[commit]:.4f}"
    values |= {"before_layer": max(before, 0), "before_rank": int(lens.selected_ranks[max(before, 0)]),
               "before_prob": f"{lens.selected_probs[max(before, 0)]:.4f}"}
    return values


def _versus_values(frame: Frame, vocab: Vocabulary, lang: str) -> dict:
    """An A/B frame's {split} (the first step where the runs choose differently, or "none"),
    {tv} (the total variation at the frame's step) and {tv_max}, B's {b_piece} at the step and
    whole {b_answer}, and the mean probability each run chose its tokens with, {a_mean_prob}
    {b_mean_prob}."""
    c = frame.versus.comparison
    split, d, step = c.first_divergence, c.distance(frame.step), frame.step

    def mean_prob(run) -> str:
        return f"{sum(float(s.distribution.probs[s.selected_id]) for s in run.steps) / len(run.steps):.2f}"
    b_step = c.b.steps[step] if step is not None and step < len(c.b.steps) else None
    return {"split": tr("spec.none", lang) if split is None else split, "tv": "-" if d is None else f"{d:.3f}",
            "tv_max": f"{max(c.distances):.3f}", "a_mean_prob": mean_prob(c.a), "b_mean_prob": mean_prob(c.b),
            "b_piece": "-" if b_step is None else vocab.display_piece(b_step.selected_id),
            "b_answer": one_line(c.b.output_text)}


def _vote_values(vote: Vote, lang: str) -> dict:
    """{n_samples} {seeds} {answers} {samples} {vote_counts} {majority} {majority_votes} {sample_tokens}."""
    return {"n_samples": len(vote.samples), "seeds": elided_list(s.seed for s in vote.samples),
            "answers": tr("list.sep", lang).join(s.answer for s in vote.samples),
            "samples": tr("list.sep", lang).join(tr("vote.sample", lang, seed=s.seed, answer=s.answer, tokens=s.tokens)
                                                 for s in vote.samples),
            "vote_counts": tr("list.sep", lang).join(tr("vote.count", lang, answer=a, n=n) for a, n in vote.counts),
            "majority": vote.majority, "majority_votes": vote.majority_votes, "sample_tokens": vote.tokens}


def _search_values(result: SearchResult, vocab: Vocabulary, lang: str) -> dict:
    """{search_best} {search_score} {search_levels} {search_forwards} {search_evaluations}
    {search_width} {search_branches} {search_depth}."""
    def state(node) -> str:
        return " ".join(vocab.display_piece(t) for t in result.path(node.node_id))

    levels = []
    for depth in range(1, result.depth + 1):
        nodes = result.level(depth)
        if nodes:
            items = tr("list.sep", lang).join(tr("search.node", lang, piece=vocab.display_piece(n.token_id),
                                                 score=f"{n.score:.2f}", status=tr(f"search.{n.status}", lang))
                                              for n in nodes)
            levels.append(tr("search.level", lang, depth=depth, items=items))
    best = result.best
    return {"search_best": state(best), "search_score": f"{best.score:.2f}",
            "search_levels": tr("search.levels_sep", lang).join(levels), "search_forwards": result.forwards,
            "search_evaluations": result.evaluations, "search_width": result.width,
            "search_branches": result.branches, "search_depth": result.depth}


def _attended(step, attention: tuple[int, int], vocab: Vocabulary) -> dict:
    """{layer}, {head}, and where that head's last query row puts its largest weight:
    {attended} (the key's piece) and {attended_weight} (2 decimals)."""
    layer, head = attention
    row = attention_weights(step.trace.layers[layer], head)[-1]   # [t] the last query's weights
    key = int(row.argmax())
    return {"layer": layer, "head": head, "attended": vocab.display_piece(int(step.trace.key_ids[key])),
            "attended_weight": f"{row[key]:.2f}"}


def finish_text(run: Run, lang: str = "en") -> str:
    """The finish reason with what it means (`length` is called incomplete)."""
    stop = run.stop_match
    return tr(f"finish.{run.finish_reason}", lang,
              **({"text": stop.text, "index": stop.char_index} if stop else {}))


def finish_short(run: Run, lang: str = "en") -> str:
    """The finish reason's code, "length, incomplete" when the output is cut short."""
    return run.finish_reason + (tr("incomplete_after", lang) if run.incomplete else "")


def _authored(texts: dict, lang: str, values: dict) -> str:
    """A lesson's text in `lang` with the run's numbers filled into its {placeholders}."""
    return texts[lang].format(**values)


def frame_title(frame: Frame, run: Run, vocab: Vocabulary, lang: str = "en") -> str:
    """The lesson's title, or, while the teacher's settings differ from the ones it was
    written for (`frame.changed`) and it quotes numbers of its own (or the lesson's
    prompt), the title of the run on screen."""
    values = placeholder_values(frame, run, vocab, lang)
    for key in ("text", "answer"):                     # a heading: a line break in the text shows as ↵
        values[key] = one_line(values[key])
    if frame.title and not (frame.changed and written_for_the_lesson(frame.title[lang], frame.changed)):
        return _authored(frame.title, lang, values)
    if frame.kind == "pick" and run.steps[frame.step].forced:
        return tr("frame.pick_forced", lang, **values)
    return tr(f"frame.{frame.kind}", lang, **values)


def frame_explanation(frame: Frame, run: Run, vocab: Vocabulary, lang: str = "en") -> dict[str, str]:
    """{section: text} for what / why / how / misconception / check; a lesson's own text
    where it wrote one, the default explanation of the frame's kind elsewhere. While the
    teacher's settings differ from the lesson's (`frame.changed`) and a text the lesson wrote
    quotes numbers of its own (or its prompt), a first section, "changed", says so and names
    the settings."""
    values = placeholder_values(frame, run, vocab, lang)
    own = frame.explain or {}
    texts = {s: _authored(own[s], lang, values) if s in own else _default_text(frame.kind, s, lang, values)
             for s in SECTIONS}
    if frame.changed and any(written_for_the_lesson(own[s][lang], frame.changed) for s in own):
        texts = {"changed": tr("change.written_for", lang, items=changes_text(frame.changed, lang))} | texts
    return texts


def question_text(frame: Frame, run: Run, vocab: Vocabulary, lang: str = "en") -> str:
    """A question frame's question in `lang`, the run's numbers filled in (the title it
    has while asked)."""
    return frame_title(frame.asked(), run, vocab, lang)


def frame_caption(frame: Frame, run: Run, vocab: Vocabulary, lang: str = "en") -> str:
    """A slide's line of explanation: what happened. While the teacher's settings differ from
    the lesson's, the settings that changed and what happened on this run (the lesson's
    sentence was written for its own settings). One line: a line break a quoted text holds
    shows as ↵."""
    what = (frame.explain or {}).get("what")
    if not frame.changed or (what is not None and not written_for_the_lesson(what[lang], frame.changed)):
        return one_line(frame_explanation(frame, run, vocab, lang)["what"])
    values = placeholder_values(frame, run, vocab, lang)
    return one_line(badge_text(frame.changed, lang) + tr("caption.sep", lang)
                    + _default_text(frame.kind, "what", lang, values))


def _default_text(kind: str, section: str, lang: str, values: dict) -> str:
    """The default explanation; a check that cites a full recompute says so when the run
    did not recompute (a real model: too slow at every slider tick)."""
    key = f"explain.{kind}.{section}"
    if values.get("diff") == tr("diff.unchecked", lang) and f"{key}_unchecked" in MESSAGES:
        key += "_unchecked"
    return tr(key, lang, **values)
