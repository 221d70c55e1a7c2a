"""`explorer trace`: run the model on a prompt and print every step as the course's table."""

from __future__ import annotations

import json
from dataclasses import replace

from .flags import (add_prompt_flags, add_run_flags, add_sampling_flags, check_run_flags, free_model, noted,
                    prompt_ids, sampling_changes, session_from_args)
from .beam_tree import format_tree
from .settings_line import settings_text
from .combinations import check_settings
from .lens import add_lens_flag, add_lens_json, check_lens_models, format_lenses
from .speculative import speculative_output
from .versus import add_vs_flag, second_run, vs_changes, vs_output
from ..core.elide import ENDS, elided, elided_list
from ..core.errors import SettingError
from ..core.decode.generate import Run
from ..core.limits import CHECKED_FIRST, MAX_CHECKED_STEPS
from ..core.decode.run_dict import run_to_dict, search_to_dict, vote_to_dict
from ..core.decode.search import SearchResult, SearchSpec
from ..core.decode.vote import Vote
from ..core.decode.usage import count_usage
from ..core.tokens.vocab import Vocabulary
from ..i18n import add_messages, tr
from ..lessons import load_lesson
from ..core.decode.sampling import SamplingConfig
from ..session import Session
from ..session.session import Scenario
from ..session.frames import frames_of_run
from ..session.narration import finish_text, milliseconds, shown_text
from .texttable import format_table

add_messages({
    "trace.model": {"en": "model: {name} (computing in {arithmetic})", "zh": "模型：{name}（计算方式：{arithmetic}）"},
    "trace.max_diff_sampled": {
        "en": "largest |cached - full recompute| over {n} of {steps} steps: {diff} (the check is capped at {cap} "
              "steps a run: the first {first}, then {rest} spread evenly up to step {last}; --no-check skips it)",
        "zh": "{steps}步中检查了{n}步，缓存计算与完整重算的最大差：{diff}（每次运行最多检查{cap}步：前{first}步，"
              "其余{rest}步均匀分布到第{last}步；--no-check 不检查）"},
    "trace.ttft": {"en": "time to first token: {ms} ms (measured: prefix lookup, Prefill forward, first selection)",
                   "zh": "首Token时间：{ms} ms（实测：查找前缀缓存、Prefill前向、第一次选择）"},
    "trace.prefix": {"en": "prefix cache: {cached} positions ({bytes:,} bytes); reused {reused} positions, "
                           "computed {computed}",
                     "zh": "前缀缓存：{cached}个位置（{bytes:,}字节）；复用{reused}个位置，计算{computed}个"},
    "trace.prefix.changed": {"en": "token changed at position {at} ({old} → {new}): {n} cached positions "
                                   "invalidated ({first}–{last})",
                             "zh": "位置{at}的Token变了（{old} → {new}）：{n}个已缓存的位置失效（{first}–{last}）"},
})


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "trace", help="print a generation step by step (Prefill, Decode ..., stop)",
        description="Run the model on a prompt and print each step: tokens fed in, positions, "
                    "KV cache contents, which logits chose the next token, and how far the "
                    "cached step is from a full recomputation.")
    add_prompt_flags(p)
    add_run_flags(p, lesson_help="trace every scenario of a lesson (a name or a .toml file)",
                  top_help="candidates per step in --json", json_help="print the run as JSON")
    add_sampling_flags(p, default_mode=None)
    add_lens_flag(p)
    add_vs_flag(p)
    p.set_defaults(func=run)


def run(args) -> int:
    check_run_flags(args)
    changes = vs_changes(args.vs) if args.vs is not None else None
    if args.speculative is not None:
        scenarios, names = _speculative_scenarios(args)
        check_settings("trace", args, list(zip(names or [args.lesson or ""] * len(scenarios),
                                                (s.config for s in scenarios))), as_table=True)
        print(speculative_output(scenarios, names, args))
        return 0
    def before_run(configs, _lesson) -> None:
        check_settings("trace", args, configs, as_table=not args.json)
        for _, config in configs if changes is not None else ():
            config.with_(**changes)            # --vs's second run, refused before the first is made

    session = session_from_args(args, args.lesson, before_run=before_run)
    if args.lens:
        check_lens_models(session, args.lesson)
    for run, _ in session.scenario_results():   # a what-if the run never reaches would vanish without a word
        for step, token in run.unreached_overrides.items():
            raise SettingError(f"--force {step}:{token}: {run.unreached_text(step)}")
    if changes is not None:
        first = session.run
        other = second_run(first, session.model, session.overrides, changes, session.check_recompute)
        print(vs_output(first, other, session.model.vocab, args.vs, args.json, args.top, args.lang,
                        "" if args.json else trace_output(session, args.lang)))
        return 0
    print(trace_output(session, args.lang, args.json, args.top, args.lens))
    return 0


def _speculative_scenarios(args) -> tuple[list[Scenario], list[str]]:
    """The scenarios `--speculative` decodes (the lesson's, or the model and prompt given),
    with the sampling flags applied; and their names when there are several."""
    changes = sampling_changes(args)
    if args.lesson is not None:
        lesson = noted(load_lesson(args.lesson))
        scenarios = [replace(s, config=s.config.with_(**changes)) for s in lesson.build_scenarios()]
        return scenarios, ([name for name, _ in lesson.scenarios] if len(scenarios) > 1 else [])
    model = free_model(args)
    return [Scenario(model, tuple(prompt_ids(args, model)), SamplingConfig(**changes))], []


def trace_output(session: Session, lang: str = "en", as_json: bool = False, top: int = 10,
                 lens: bool = False) -> str:
    """What `explorer trace` prints for a session: every scenario's Run as the step table (or
    as JSON), each with its own model's vocabulary, then the votes and searches its frames
    ask for (with the forward time they took); with `lens`, every step's logit lens."""
    results = session.scenario_results()
    vocabs = [scenario.model.vocab for scenario in session.scenarios]
    extra = _computations(session, [run for run, _ in results])
    if as_json:
        data = [run_to_dict(r, vocab, top) for (r, _), vocab in zip(results, vocabs)]
        if lens:
            data = [add_lens_json(d, r, scenario.model) for d, (r, _), scenario in zip(data, results, session.scenarios)]
        for k, items in extra.items():
            votes = [vote_to_dict(v) for kind, v in items if kind == "vote"]
            searches = [search_to_dict(v, vocabs[k], spec.evaluator) for kind, (spec, v) in
                        ((kind, item) for kind, item in items if kind == "search")]
            data[k] |= ({"self_consistency": votes} if votes else {}) | ({"searches": searches} if searches else {})
        return json.dumps(data[0] if len(data) == 1 else data, ensure_ascii=False, indent=2)
    # a lesson with several scenarios: each block says which one it is
    names = [name for name, _ in session.content.scenarios] if len(results) > 1 and session.content else []
    blocks = []
    for i, ((run, beam), vocab) in enumerate(zip(results, vocabs)):
        block = format_tree(beam, vocab, lang) if beam is not None else format_run(run, vocab, lang)
        if lens:
            block += "\n\n" + format_lenses(run, session.scenarios[i].model, lang)
        for kind, item in extra.get(i, []):
            block += "\n\n" + (format_vote(item, lang) if kind == "vote" else format_search(*item, vocab, lang))
        blocks.append(f"{tr('scenario', lang, name=names[i])}\n{block}" if names else block)
    return "\n\n".join(blocks)


def _computations(session: Session, runs: list[Run]) -> dict[int, list[tuple]]:
    """Scenario index -> [("vote", Vote) | ("search", (SearchSpec, SearchResult))] its frames ask
    for, each once, in frame order."""
    out: dict[int, list[tuple]] = {}
    for i, frame in enumerate(session.frames):
        k = next(j for j, r in enumerate(runs) if r is session.run_at(i)[0])
        items = out.setdefault(k, [])
        for item in ((("vote", frame.vote),) if frame.vote is not None else ()) + (
                (("search", (frame.search, frame.search_result)),) if frame.search_result is not None else ()):
            if all(item[1] is not seen[1] for seen in items):
                items.append(item)
    return {k: v for k, v in out.items() if v}


def format_vote(vote: Vote, lang: str = "en") -> str:
    """Each seeded sample's answer, tokens and measured forward time, then the vote and its cost."""
    lines = [tr("trace.vote", lang, n=len(vote.samples))]
    lines += [tr("trace.vote.sample", lang, seed=s.seed, answer=s.answer, tokens=s.tokens,
                 ms=f"{sum(step.seconds for step in s.run.steps) * 1000:.2f}") for s in vote.samples]
    lines.append(tr("trace.vote.result", lang, majority=vote.majority, votes=vote.majority_votes, n=len(vote.samples),
                    tokens=vote.tokens, ms=f"{vote.seconds * 1000:.2f}"))
    return "\n".join(lines)


def format_search(spec: SearchSpec, result: SearchResult, vocab: Vocabulary, lang: str = "en") -> str:
    """The search tree by depth (score and status of every state), the best state and the cost."""
    lines = [tr("trace.search", lang, evaluator=spec.evaluator, width=result.width, branches=result.branches,
                depth=result.depth)]
    for node in result.nodes[1:]:
        lines.append("   " * node.depth + tr("trace.search.node", lang, piece=vocab.display_piece(node.token_id),
                                                 prob=f"{node.prob:.2f}", score=f"{node.score:.4f}",
                                                 status=tr(f"search.{node.status}", lang)))
    best = result.best
    lines.append(tr("trace.search.result", lang, best=vocab.display_pieces(result.path(best.node_id)),
                    score=f"{best.score:.4f}", forwards=result.forwards, evaluations=result.evaluations))
    return "\n".join(lines)



def format_run(run: Run, vocab: Vocabulary, lang: str = "en") -> str:
    """The course's step table plus the counts and the finish reason. Long token sequences
    are shortened in the table's cells; the prompt and output lines list them whole."""
    pieces = vocab.display_pieces
    usage = count_usage(run.prompt_ids, run.output_ids, vocab)
    shown = shown_text(frames_of_run(run)[-1], run, vocab, usage)
    rows = []
    for s in run.steps:
        kv_after = run.visible_ids[:s.cache_len_after]
        selected = f"{s.selected_id} {vocab.display_piece(s.selected_id)}" + (tr("forced", lang) if s.forced else "")
        diff = "-" if s.recompute_max_abs_diff is None else f"{s.recompute_max_abs_diff:.1e}"
        rows.append([tr("phase.prefill", lang) if s.phase == "prefill" else tr("phase.decode", lang, n=s.index),
                     f"{pieces(s.input_ids, ENDS)} {elided_list(s.input_ids)}",
                     elided([str(p) for p in s.positions], ","),
                     pieces(kv_after, ENDS),
                     tr("chooser", lang, p=s.logits_position),
                     selected, s.cache_len_after, diff])
    headers = [tr(k, lang) for k in ("col.time", "col.input", "col.positions", "col.kv_after",
                                     "col.chooser", "col.selected", "col.cache_len", "col.diff")]
    lines = [
        tr("trace.model", lang, name=run.model_name, arithmetic=run.arithmetic or "float64"),
        settings_text(run.config, lang),
        f"{tr('prompt', lang)}: {pieces(run.prompt_ids)} {list(run.prompt_ids)}",
        "",
        format_table(headers, rows, align_right=(6,)),
        "",
        f"{tr('output', lang)}: {pieces(run.output_ids)} {list(run.output_ids)}  \u2192 {run.output_text!r}",
        tr("counts", lang, visible=len(run.visible_ids), cache=run.cache_len, chars=len(shown)),
        tr("usage", lang, **usage.as_dict()),
        tr("not_processed", lang, piece=vocab.display_piece(run.output_ids[-1])),
        tr("finish", lang, reason=finish_text(run, lang)),
    ]
    if run.max_recompute_diff is not None:
        lines.append(check_text(run, lang))
    return "\n".join(lines + _prefix_lines(run, vocab, lang)
                     + [tr("trace.ttft", lang, ms=milliseconds(run.time_to_first_token))])


def check_text(run: Run, lang: str = "en") -> str:
    """The largest difference from a full recomputation, and over which steps: a long run's
    check is capped (`checks_step`), and the line says so."""
    diff = f"{run.max_recompute_diff:.2e}"
    if run.checked_steps == len(run.steps):
        return tr("max_diff", lang, diff=diff)
    return tr("trace.max_diff_sampled", lang, diff=diff, n=run.checked_steps, steps=len(run.steps),
              cap=MAX_CHECKED_STEPS, first=CHECKED_FIRST, rest=MAX_CHECKED_STEPS - CHECKED_FIRST,
              last=run.config.max_new_tokens - 1)


def _prefix_lines(run: Run, vocab: Vocabulary, lang: str) -> list[str]:
    """What the run's Prefill took from a prefix cache, and what a changed token invalidated."""
    hit = run.prefix
    if hit is None:
        return []
    lines = [tr("trace.prefix", lang, cached=len(hit.cached_ids), bytes=hit.stored_bytes, reused=hit.reused,
                computed=run.steps[0].computed_positions)]
    at, stale = hit.match.changed_at, hit.match.invalidated
    if at is not None:
        lines.append(tr("trace.prefix.changed", lang, at=at, old=vocab.display_piece(hit.cached_ids[at]),
                        new=vocab.display_piece(run.prompt_ids[at]), n=len(stale), first=stale[0], last=stale[-1]))
    return lines

