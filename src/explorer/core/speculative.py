"""Speculative decoding: a drafter guesses k tokens, the model checks them all in one forward pass.

A plain Decode step turns one forward pass into one token. Here the pass after a
selection feeds the last selected token *and* k drafted tokens (positions n .. n+k, a
small Prefill over tokens that are already written down, causal inside the draft), so
its k+1 rows of logits score the k drafted tokens and one more. The model keeps the
longest prefix of the draft it agrees with, then adds its own token at the first
disagreement (or a bonus token after the last row when every drafted token was kept);
the K/V it wrote for the rejected tokens are dropped: the cache is rolled back to the
accepted length. One pass then yields between 1 and k+1 tokens.

The drafter here needs no second model: prompt lookup (Hugging Face's
`prompt_lookup_num_tokens`) copies what followed the last n-gram where it occurred
before in the visible text. It is deterministic: its "draft distribution" q is one-hot
on the drafted token.

Acceptance.
- Greedy: a drafted token is kept when it is the model's own greedy choice at that row,
  so the output is the plain greedy output, token for token.
- Sampling: the standard rule keeps a drafted token d with probability min(1, p(d)/q(d))
  and otherwise samples from the normalised (p - q)+. With q one-hot on d that is: keep
  d with probability p(d), else sample from p with d removed (renormalised). The
  output's distribution is exactly the model's p. Each output index i draws one
  u = uniform_draw(seed, i), as plain sampling does: keep d when u < p(d); else
  (u - p(d)) / (1 - p(d)), uniform on [0, 1) again, picks from the rest on the ruler.
  The tokens differ from plain sampling's with the same seed; their distribution does not.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from .errors import SettingError
from .generate import Run, Step, finish_check, recompute_diff
from .kvcache import KVCache
from .limits import check_prompt_length
from .protocol import LanguageModel
from .sampling import Distribution, SamplingConfig, distribution
from .stopping import INCOMPLETE, StopMatch
from .trace import ForwardTrace

DEFAULT_K = 4          # tokens drafted per pass
DEFAULT_NGRAM = 2      # longest n-gram looked up (Hugging Face's max_matching_ngram_size)
MAX_K = 64             # a verify pass feeds k + 1 tokens; more than this is no longer "a few"
MAX_NGRAM = 16         # longer n-grams almost never repeat word for word

Drafter = Callable[[tuple, int], tuple]   # (visible ids, k) -> up to k drafted ids


def prompt_lookup_draft(context, k: int, ngram: int = DEFAULT_NGRAM) -> tuple[int, ...]:
    """Up to `k` tokens that followed an earlier occurrence of the context's last n-gram.

    As Hugging Face's prompt lookup: try n = ngram, ngram-1, ..., 1; the first (earliest)
    earlier occurrence whose continuation is not empty wins; the continuation is what
    came after it, cut at k tokens and at the end of the context. () if nothing matches."""
    ids = np.asarray(context, np.int64)                                   # [t]
    t = len(ids)
    for n in range(min(ngram, t - 1), 0, -1):
        windows = np.lib.stride_tricks.sliding_window_view(ids[:t - 1], n)   # [t-n, n], starts 0..t-n-1
        starts = np.flatnonzero((windows == ids[t - n:]).all(axis=1))         # earlier occurrences
        if starts.size:
            begin = int(starts[0]) + n               # < t: every start ends before the last token
            return tuple(int(i) for i in ids[begin:begin + k])
    return ()


def prompt_lookup(ngram: int = DEFAULT_NGRAM) -> Drafter:
    """The prompt-lookup drafter with n-grams up to `ngram` tokens long."""
    if isinstance(ngram, bool) or not isinstance(ngram, int) or not 1 <= ngram <= MAX_NGRAM:
        raise SettingError(f"ngram = {ngram!r}: expected an integer from 1 to {MAX_NGRAM} "
                           "(the longest n-gram looked up)")
    return lambda context, k: prompt_lookup_draft(context, k, ngram)


@dataclass(frozen=True)
class Pass:
    """One forward pass of a speculative run: the Prefill, or a verify pass."""

    index: int                      # 0 = prefill
    phase: str                      # "prefill" | "verify"
    input_ids: tuple[int, ...]      # fed in: the prompt, or the last selected token + the draft
    positions: tuple[int, ...]
    draft: tuple[int, ...]          # drafted tokens checked by this pass (() for the Prefill, or no match)
    accepted: int                   # how many of them the model kept (a prefix of the draft)
    model_id: int                   # the model's own token: at the first disagreement, or the bonus
    new_ids: tuple[int, ...]        # what this pass added to the output: draft[:accepted] + (model_id,),
                                    # cut where the run stopped
    distributions: tuple[Distribution, ...]   # how each of new_ids was chosen (its row's logits)
    cache_len_before: int
    cache_len_written: int          # after the forward: every fed token's K/V
    cache_len_after: int            # after the rollback: only the kept ones'
    trace: ForwardTrace             # logits of every fed position (k + 1 rows)
    recompute_max_abs_diff: float | None
    seconds: float

    @property
    def rejected(self) -> tuple[int, ...]:
        """The drafted tokens thrown away (their K/V rolled back)."""
        return self.draft[self.accepted:]

    @property
    def passes_saved(self) -> int:
        """Forward passes plain decoding would need beyond this one for the same tokens."""
        return len(self.new_ids) - 1


@dataclass(frozen=True)
class SpeculativeRun:
    model_name: str
    prompt_ids: tuple[int, ...]
    passes: tuple[Pass, ...]
    output_ids: tuple[int, ...]
    finish_reason: str
    config: SamplingConfig
    k: int
    output_text: str = ""
    stop_match: StopMatch | None = None

    @property
    def visible_ids(self) -> tuple[int, ...]:
        return self.prompt_ids + self.output_ids

    @property
    def cache_len(self) -> int:
        return self.passes[-1].cache_len_after

    @property
    def incomplete(self) -> bool:
        return self.finish_reason in INCOMPLETE

    @property
    def overrides(self) -> dict:
        """None: speculative decoding verifies the model's own choices, it forces none."""
        return {}

    @property
    def verify_passes(self) -> tuple[Pass, ...]:
        return self.passes[1:]

    @property
    def accepted_counts(self) -> tuple[int, ...]:
        """Drafted tokens kept by each verify pass."""
        return tuple(p.accepted for p in self.verify_passes)

    @property
    def drafted(self) -> int:
        return sum(len(p.draft) for p in self.verify_passes)

    @property
    def acceptance_rate(self) -> float | None:
        """Kept drafted tokens / drafted tokens; None when nothing was drafted."""
        return sum(self.accepted_counts) / self.drafted if self.drafted else None

    @property
    def passes_saved(self) -> int:
        """Plain decoding needs one forward per output token; this run needed len(passes)."""
        return len(self.output_ids) - len(self.passes)

    @property
    def max_recompute_diff(self) -> float | None:
        diffs = [p.recompute_max_abs_diff for p in self.passes if p.recompute_max_abs_diff is not None]
        return max(diffs) if diffs else None


def speculative_generate(model: LanguageModel, prompt_ids, config: SamplingConfig = SamplingConfig(), *,
                         k: int = DEFAULT_K, drafter: Drafter | None = None,
                         check_recompute: bool = True, cancel: Callable[[], bool] | None = None,
                         on_pass: Callable[[Pass, KVCache], None] | None = None) -> SpeculativeRun:
    """Prefill, then verify passes of up to k drafted tokens each, until a stop criterion
    holds (the criteria of `generate`, checked after every output token).

    drafter: (visible ids, k) -> draft; default prompt lookup with n-grams up to 2.
    check_recompute: compare every row of every pass's logits with a full recompute.
    cancel: asked after every pass. on_pass: called after every pass (and its rollback)
    with the pass and the live cache (a progress bar; what the cache holds then)."""
    k = _checked_k(k)
    drafter = drafter or prompt_lookup()
    prompt = tuple(int(t) for t in model.vocab.id_array(prompt_ids, "prompt ids"))
    check_prompt_length(len(prompt))
    verifier = every_row(model)
    trace, cache = model.prefill(prompt)
    diff = recompute_diff(model, prompt, trace) if check_recompute else None
    dist = distribution(trace.last_logits, config, seen_ids=prompt, step=0)
    output = [dist.selected_id]
    passes = [Pass(0, "prefill", prompt, tuple(range(len(prompt))), (), 0, dist.selected_id, tuple(output),
                   (dist,), 0, len(prompt), len(prompt), trace, diff, trace.seconds)]
    finish, stop = finish_check(model, output, config, 0)
    if on_pass is not None:
        on_pass(passes[-1], cache)
    while finish is None:
        room = min(k, config.max_new_tokens - len(output) - 1)    # the pass adds a token of its own
        draft = tuple(int(t) for t in drafter(prompt + tuple(output), room))[:room]
        model.vocab.check_ids(list(draft), "draft")
        before, fed = len(cache), (output[-1],) + draft
        trace = verifier.feed(fed, cache)                          # logits [len(fed), V]
        diff = recompute_diff(model, prompt + tuple(output) + draft, trace) if check_recompute else None
        chosen = _verified(trace.logits, draft, config, prompt + tuple(output), len(output))
        new = []
        for token, d in chosen:
            output.append(token)
            new.append((token, d))
            finish, stop = finish_check(model, output, config, len(output) - 1)
            if finish is not None:
                break
        accepted = _common_prefix([t for t, _ in new], draft)
        written = len(cache)
        if written > before + len(new):        # the last new token is selected, not processed
            trace = owned(trace)
            cache.truncate(before + len(new))
        passes.append(Pass(len(passes), "verify", fed, tuple(range(before, written)), draft, accepted,
                           chosen[-1][0], tuple(t for t, _ in new), tuple(d for _, d in new),
                           before, written, len(cache), trace, diff, trace.seconds))
        if on_pass is not None:
            on_pass(passes[-1], cache)
        if finish is None and cancel is not None and cancel():
            finish = "cancelled"
    text = model.vocab.decode(output)
    if stop is not None:
        text = text[:stop.char_index]
    return SpeculativeRun(model.name, prompt, tuple(passes), tuple(output), finish, config, k, text, stop)


def _verified(logits, draft, config: SamplingConfig, context, first_step: int) -> list[tuple[int, Distribution]]:
    """(token, how it was chosen) for rows 0.. of a verify pass ([len(draft)+1, V] logits):
    the kept drafted tokens, then the model's own token (at the first rejection, or the
    bonus row after the last drafted token)."""
    out = []
    for j, row in enumerate(logits):
        dist = distribution(row, config, seen_ids=context + draft[:j], step=first_step + j)
        if j == len(draft):
            return out + [(dist.selected_id, dist)]                      # the bonus token
        token = dist.selected_id if dist.greedy else _sampled(dist, draft[j])
        out.append((token, replace(dist, selected_id=token)))
        if token != draft[j]:
            return out
    raise AssertionError("a verify pass has one row more than its draft")


def _sampled(dist: Distribution, drafted: int) -> int:
    """Accept `drafted` with probability min(1, p/q) = p(drafted) (q is one-hot: the drafter
    is deterministic), else sample from the normalised (p - q)+: p without `drafted`.
    One u per output index: u < p(d) keeps d; otherwise (u - p(d)) / (1 - p(d)) is again
    uniform on [0, 1) and picks on the ruler of the rest (descending, lower id first on ties)."""
    p = dist.probs                                                       # [V]
    kept = p[drafted]
    if dist.u < kept:
        return drafted
    rest = p.copy()
    rest[drafted] = 0.0
    ids = np.flatnonzero(rest > 0)                                       # [m]
    ids = ids[np.lexsort((ids, -rest[ids]))]                             # ruler order
    hi = np.cumsum(rest[ids]) / rest[ids].sum()                          # [m]
    u = (dist.u - kept) / (1.0 - kept)
    return int(ids[min(int(np.searchsorted(hi, u, side="right")), ids.size - 1)])


def _common_prefix(a, b) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def every_row(model: LanguageModel) -> LanguageModel:
    """The model with traces that keep the logits of every fed position (a real model keeps
    only the last one's: a verify pass needs all k + 1). The same weights, not a copy."""
    config = getattr(model, "config", None)
    if not getattr(config, "kept_rows", 0):
        return model
    return replace(model, config=replace(config, kept_rows=0))


def owned(trace: ForwardTrace) -> ForwardTrace:
    """The trace with its own copies of the K/V it read from the cache: its keys and
    values are views of the cache storage, and a rollback lets the next pass overwrite
    the rejected positions."""
    layers = tuple(replace(lt, k=lt.k.copy(), v=lt.v.copy(), keys=lt.keys.copy()) for lt in trace.layers)
    return replace(trace, layers=layers)


def _checked_k(k) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise SettingError(f"k = {k!r}: expected an integer from 1 to {MAX_K} (tokens drafted per pass)")
    return k


@dataclass(frozen=True)
class VerifyStep(Step):
    """A verify pass as a step of a Run (what the panels draw): fed the last selected token
    and the draft; `selected_id` is the last token it added to the output."""

    draft: tuple[int, ...] = ()
    accepted: int = 0
    new_ids: tuple[int, ...] = ()
    cache_len_written: int = 0      # before the rollback

    @property
    def rejected(self) -> tuple[int, ...]:
        return self.draft[self.accepted:]

    @property
    def logits_position(self) -> int:
        """The row that chose the last new token: the first disagreement, or the bonus row."""
        return self.positions[0] + len(self.new_ids) - 1


def as_run(run: SpeculativeRun) -> Run:
    """The speculative run as a Run whose steps are its forward passes (the Prefill, then
    one VerifyStep per verify pass), so the timeline, cache, attention and distribution
    panels show it; the one-off rule holds after every pass (visible = cache + 1)."""
    steps = []
    for p in run.passes:
        fields = (p.index, "prefill" if p.index == 0 else "verify", p.input_ids, p.positions, p.cache_len_before,
                  p.cache_len_after, p.trace, p.distributions[-1], p.new_ids[-1], False, p.recompute_max_abs_diff,
                  p.seconds)
        steps.append(Step(*fields) if p.index == 0 else
                     VerifyStep(*fields, p.draft, p.accepted, p.new_ids, p.cache_len_written))
    return Run(run.model_name, run.prompt_ids, tuple(steps), run.output_ids, run.finish_reason, run.config,
               run.output_text, {}, run.stop_match)
