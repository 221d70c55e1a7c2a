"""User-visible strings in English and Chinese. `tr(key, lang, **values)`."""

from __future__ import annotations

LANGS = ("en", "zh")

MESSAGES = {
    "list.names": {"en": ", ", "zh": "、"},     # between short names in running text (panel titles)
    # a search's verdict on a candidate (beam search, evaluator search, a sampling stage)
    "status.kept": {"en": "kept", "zh": "保留"},
    "status.pruned": {"en": "pruned", "zh": "剪掉"},
    # trace table
    "col.time": {"en": "time", "zh": "时刻"},
    "col.input": {"en": "tokens fed in", "zh": "本次输入"},
    "col.positions": {"en": "positions", "zh": "计算位置"},
    "col.kv_after": {"en": "KV cache after", "zh": "结束后KV包含"},
    "col.chooser": {"en": "next token chosen by", "zh": "用哪个输出选下一个"},
    "col.selected": {"en": "selected", "zh": "选中"},
    "col.cache_len": {"en": "cache", "zh": "缓存长度"},
    "col.diff": {"en": "|cached - recompute|", "zh": "与完整重算之差"},
    "phase.prefill": {"en": "Prefill", "zh": "Prefill"},
    "phase.decode": {"en": "Decode {n}", "zh": "Decode {n}"},
    "phase.verify": {"en": "Verify {n}", "zh": "验证{n}"},    # a speculative draft checked in one pass
    "chooser": {"en": "logits at position {p}", "zh": "位置{p}的logits"},
    "forced": {"en": " (forced)", "zh": "（人为指定）"},
    "cancel": {"en": "Cancel", "zh": "取消"},                 # the button that stops work in progress
    "prompt": {"en": "prompt", "zh": "提示"},
    "scenario": {"en": "scenario “{name}”", "zh": "情景“{name}”"},
    "output": {"en": "output", "zh": "输出"},
    "counts": {"en": "visible sequence: {visible} tokens   in cache: {cache}   text shown: {chars} characters",
               "zh": "可见序列：{visible}个Token   已进缓存：{cache}   显示的文字：{chars}个字符"},
    "usage": {"en": "usage: prompt {prompt_tokens} + reasoning {reasoning_tokens} + output {output_tokens} "
                    "= {total_tokens} tokens",
              "zh": "用量：提示{prompt_tokens} + 推理{reasoning_tokens} + 输出{output_tokens} = 共{total_tokens}个Token"},
    "not_processed": {
        "en": "The last selected token ({piece}) was never fed back in: it is visible but not in the cache.",
        "zh": "最后选出的Token（{piece}）没有再送入模型：它可见，但不在缓存里。"},
    "trace.vote": {"en": "self-consistency: {n} samples of this scenario, one per seed",
                   "zh": "自洽：本情景抽样{n}次，每个种子一次"},
    "trace.vote.sample": {"en": "  seed {seed}: answer {answer!r}, {tokens} tokens, {ms} ms forward",
                          "zh": "  种子{seed}：答案“{answer}”，{tokens}个Token，前向{ms} ms"},
    "trace.vote.result": {"en": "majority {majority!r} ({votes} of {n}); cost {tokens} tokens, {ms} ms forward in all",
                          "zh": "多数票“{majority}”（{n}票中{votes}票）；代价共{tokens}个Token，前向共{ms} ms"},
    "trace.search": {"en": "search with evaluator “{evaluator}”: width {width}, {branches} branches, depth {depth}",
                     "zh": "用评价器“{evaluator}”搜索：宽度{width}，{branches}个分支，深度{depth}"},
    "trace.search.node": {"en": "{piece}  p {prob}  score {score}  {status}",
                          "zh": "{piece}  p {prob}  得分 {score}  {status}"},
    "trace.search.result": {"en": "best {best} (score {score}); {forwards} model calls, {evaluations} evaluations",
                            "zh": "最佳 {best}（得分{score}）；模型调用{forwards}次，评价{evaluations}次"},
    "finish": {"en": "finish reason: {reason}", "zh": "结束原因：{reason}"},
    "finish.eos": {"en": "eos (the model selected the end token)", "zh": "eos（模型选出了结束Token）"},
    "finish.length": {"en": "length (max_new_tokens reached: the output is INCOMPLETE)",
                      "zh": "length（达到max_new_tokens：输出不完整）"},
    "finish.context": {"en": "context (the model's context is full: the next token would go past its last "
                             "position; the output is INCOMPLETE)",
                       "zh": "context（模型的上下文已满：下一个Token会超出它的最后一个位置；输出不完整）"},
    "finish.stop_string": {"en": "stop_string ({text!r} matched at index {index}, counting from 0; cut from the output)",
                           "zh": "stop_string（在下标{index}（从0数起）处匹配到{text!r}，已从输出中去掉）"},
    "finish.tool_call": {"en": "tool_call (a complete tool call: control passes to the host; the task is not done)",
                         "zh": "tool_call（生成了完整的工具调用：控制权交给宿主，任务尚未完成）"},
    "finish.cancelled": {"en": "cancelled (stopped by the user: the output is incomplete)",
                         "zh": "cancelled（被用户取消：输出不完整）"},
    # sampling stages by id (core.decode.sampling's "raw", ALL_STAGE_NAMES, and the panel's "final")
    "stage.raw": {"en": "raw", "zh": "原始"},
    "stage.repetition_penalty": {"en": "penalty", "zh": "重复惩罚"},
    "stage.temperature": {"en": "temperature", "zh": "温度"},
    "stage.top_k": {"en": "top-k", "zh": "top-k"},
    "stage.top_p": {"en": "top-p", "zh": "top-p"},
    "stage.min_p": {"en": "min-p", "zh": "min-p"},
    "stage.logit_bias": {"en": "logit bias", "zh": "logit偏置"},
    "stage.min_new_tokens": {"en": "min new tokens", "zh": "最少生成数"},
    "stage.frequency_penalty": {"en": "frequency", "zh": "频率惩罚"},
    "stage.presence_penalty": {"en": "presence", "zh": "存在惩罚"},
    "stage.top_n_sigma": {"en": "top-nσ", "zh": "top-nσ"},
    "stage.typical_p": {"en": "typical-p", "zh": "典型抽样"},
    "stage.xtc": {"en": "XTC", "zh": "XTC"},
    "stage.final": {"en": "final", "zh": "最终"},
    "max_diff": {"en": "largest |cached - full recompute| over all steps: {diff}",
                 "zh": "所有步骤中缓存计算与完整重算的最大差：{diff}"},
}


def add_messages(messages: dict) -> None:
    """Register a module's own strings ({key: {"en": ..., "zh": ...}}); keys must be new."""
    clash = messages.keys() & MESSAGES.keys()
    if clash:
        raise KeyError(f"message keys defined twice: {sorted(clash)}")
    for key, texts in messages.items():
        missing = set(LANGS) - texts.keys()
        if missing:
            raise KeyError(f"message {key!r} has no text for {sorted(missing)}")
    MESSAGES.update(messages)


def tr(key: str, lang: str = "en", **values) -> str:
    text = MESSAGES[key][lang if lang in LANGS else "en"]
    return text.format(**values) if values else text


def stage_label(name: str, lang: str) -> str:
    """Short display name of a sampling stage ("raw", a STAGE_NAMES entry or "final")."""
    return tr(f"stage.{name}", lang)
