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

from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from ..errors import SettingError
from .generate import Run, Step, finish_check, recompute_diff
from ..models.kvcache import KVCache
from ..limits import check_prompt_length
from ..models.protocol import LanguageModel
from .sampling import Distribution, SamplingConfig, distribution, inverse_cdf
from ..models.trace import ForwardTrace

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
class VerifyStep(Step):
    """A verify pass as a step of a Run: it fed the last selected token and the draft
    (`input_ids`, positions n .. n+k); `selected_id` is the last token it added."""

    draft: tuple[int, ...] = ()         # drafted tokens it checked (() when the drafter found none)
    accepted: int = 0                   # how many of them the model kept (a prefix of the draft)
    new_ids: tuple[int, ...] = ()       # what it added to the output: draft[:accepted] + the model's
                                        # own token, cut where the run stopped
    distributions: tuple[Distribution, ...] = ()   # how each of new_ids was chosen (its row)
    cache_len_written: int = 0          # the cache length before the rollback

    @property
    def rejected(self) -> tuple[int, ...]:
        """The drafted tokens thrown away (their K/V rolled back)."""
        return self.draft[self.accepted:]

    @property
    def passes_saved(self) -> int:
        """Forward passes plain decoding would need beyond this one for the same tokens."""
        return len(self.new_ids) - 1

    @property
    def logits_position(self) -> int:
        """The row that chose the last new token: the first disagreement, or the bonus row."""
        return self.positions[0] + len(self.new_ids) - 1


def verify_steps(run: Run) -> tuple[VerifyStep, ...]:
    return tuple(s for s in run.steps if isinstance(s, VerifyStep))


def accepted_counts(run: Run) -> tuple[int, ...]:
    """Drafted tokens kept by each verify pass."""
    return tuple(s.accepted for s in verify_steps(run))


def acceptance_rate(run: Run) -> float | None:
    """Kept drafted tokens / drafted tokens; None when nothing was drafted."""
    drafted = sum(len(s.draft) for s in verify_steps(run))
    return sum(accepted_counts(run)) / drafted if drafted else None


def passes_saved(run: Run) -> int:
    """Plain decoding needs one forward pass per output token; this run needed one per step."""
    return len(run.output_ids) - len(run.steps)


def speculative_generate(model: LanguageModel, prompt_ids, config: SamplingConfig = SamplingConfig(), *,
                         k: int = DEFAULT_K, drafter: Drafter | None = None,
                         check_recompute: bool = True, cancel: Callable[[], bool] | None = None,
                         on_step: Callable[[Step, KVCache], None] | None = None) -> Run:
    """A Run of a Prefill step and then verify passes (VerifySteps) of up to k drafted tokens
    each, until a stop criterion holds (the criteria of `generate`, checked after every
    output token). The one-off rule holds after every pass: visible = cache + 1.

    drafter: (visible ids, k) -> draft; default prompt lookup with n-grams up to 2.
    check_recompute: compare every row of every pass's logits with a full recompute.
    cancel: asked after every pass. on_step: called after every pass (and its rollback)
    with the step and the live cache (a progress bar; what the cache holds then)."""
    k = _checked_k(k)
    drafter = drafter or prompt_lookup()
    prompt = tuple(int(t) for t in model.vocab.id_array(prompt_ids, "prompt ids"))
    context = getattr(model, "context_length", None)
    check_prompt_length(len(prompt), context)
    verifier = every_row(model)
    trace, cache = model.prefill(prompt)
    diff = recompute_diff(model, prompt, trace) if check_recompute else None
    dist = distribution(trace.last_logits, config, seen_ids=prompt, step=0, end_ids=model.vocab.end_ids)
    output = [dist.selected_id]
    steps = [Step(0, "prefill", prompt, tuple(range(len(prompt))), 0, len(prompt), trace, dist, dist.selected_id,
                  False, diff, trace.seconds)]
    finish, stop = finish_check(model, output, config, 0, len(prompt))
    if on_step is not None:
        on_step(steps[-1], cache)
    while finish is None:
        room = min(k, config.max_new_tokens - len(output) - 1)    # the pass adds a token of its own
        if context is not None:                                    # ... and its rows stay inside the context
            room = min(room, context - len(cache) - 1)
        draft = tuple(int(t) for t in drafter(prompt + tuple(output), room))[:room]
        model.vocab.check_ids(list(draft), "draft")
        before, fed = len(cache), (output[-1],) + draft
        trace = verifier.feed(fed, cache)                          # logits [len(fed), V]
        diff = recompute_diff(model, prompt + tuple(output) + draft, trace) if check_recompute else None
        new = []
        for token, d in _verified(trace.logits, draft, config, prompt + tuple(output), len(output),
                                  model.vocab.end_ids):
            output.append(token)
            new.append((token, d))
            finish, stop = finish_check(model, output, config, len(output) - 1, len(prompt))
            if finish is not None:
                break
        ids, dists = tuple(t for t, _ in new), tuple(d for _, d in new)
        written = len(cache)
        if written > before + len(new):        # the last new token is selected, not processed
            trace = owned(trace)
            cache.truncate(before + len(new))
        steps.append(VerifyStep(len(steps), "verify", fed, tuple(range(before, written)), before, len(cache), trace,
                                dists[-1], ids[-1], False, diff, trace.seconds,
                                draft=draft, accepted=_common_prefix(ids, draft), new_ids=ids,
                                distributions=dists, cache_len_written=written))
        if on_step is not None:
            on_step(steps[-1], cache)
        if finish is None and cancel is not None and cancel():
            finish = "cancelled"
    text = model.vocab.decode(output)
    if stop is not None:
        text = text[:stop.char_index]
    return Run(model.name, prompt, tuple(steps), tuple(output), finish, config, text, {}, stop,
               arithmetic=getattr(model, "arithmetic_label", None))


def _verified(logits, draft, config: SamplingConfig, context, first_step: int,
              end_ids=()) -> list[tuple[int, Distribution]]:
    """(token, how it was chosen) for rows 0.. of a verify pass ([len(draft)+1, V] logits):
    the kept drafted tokens, then the model's own token (at the first rejection, or the
    bonus row after the last drafted token)."""
    out = []
    for j, row in enumerate(logits):
        dist = distribution(row, config, seen_ids=context + draft[:j], step=first_step + j, end_ids=end_ids)
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
    rest[drafted] = 0.0                                                  # [V] (p - q)+
    return inverse_cdf(rest / rest.sum(), (dist.u - kept) / (1.0 - kept))


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

