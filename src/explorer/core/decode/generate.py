"""The generation loop: Prefill, then one Decode step per selected token, recorded as a Run."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..errors import SettingError
from ..models.kvcache import KVCache
from ..limits import CHECKED_FIRST, MAX_CHECKED_STEPS, check_prompt_length
from .prefix_cache import PrefixCache, PrefixHit
from ..models.protocol import LanguageModel
from .sampling import Distribution, SamplingConfig, distribution, forced
from .stopping import INCOMPLETE, StopMatch, ends_with_any, find_stop_string
from ..models.trace import ForwardTrace

# A selector turns the logits of the last position into a recorded Distribution.
Selector = Callable[[np.ndarray, tuple, int], Distribution]   # (logits [V], seen ids, step) -> Distribution


@dataclass(frozen=True)
class Step:
    index: int                     # 0 = prefill
    phase: str                     # "prefill" | "decode" | "verify" (speculative.VerifyStep)
    input_ids: tuple[int, ...]     # tokens fed into the model by this forward
    positions: tuple[int, ...]     # their positions
    cache_len_before: int
    cache_len_after: int
    trace: ForwardTrace
    distribution: Distribution     # how the next token was chosen from the last logits
    selected_id: int
    forced: bool                   # chosen by a what-if override, not by the model
    recompute_max_abs_diff: float | None   # max |cached logits - full recompute|; None if not checked
    seconds: float                 # forward time
    reused_positions: int = 0      # Prefill only: leading positions whose K/V came from a prefix cache

    @property
    def computed_positions(self) -> int:
        """Positions this forward computed (the rest of a Prefill's were reused)."""
        return len(self.positions)

    @property
    def logits_position(self) -> int:
        """The position whose logits chose the next token."""
        return self.positions[-1]


@dataclass(frozen=True)
class Run:
    model_name: str
    prompt_ids: tuple[int, ...]
    steps: tuple[Step, ...]
    output_ids: tuple[int, ...]
    finish_reason: str
    config: SamplingConfig
    output_text: str = ""                            # decoded output as shown (stop text cut off)
    overrides: dict = field(default_factory=dict)   # step -> forced id
    stop_match: StopMatch | None = None
    prefix: PrefixHit | None = None                  # what the Prefill took from a prefix cache
    time_to_first_token: float = 0.0                 # seconds: prefix lookup + Prefill forward + first selection
    arithmetic: str | None = None    # what the model computed in ("float32", "llama.cpp", ...)

    @property
    def visible_ids(self) -> tuple[int, ...]:
        return self.prompt_ids + self.output_ids

    @property
    def cache_len(self) -> int:
        return self.steps[-1].cache_len_after

    @property
    def incomplete(self) -> bool:
        return self.finish_reason in INCOMPLETE

    @property
    def unreached_overrides(self) -> dict[int, int]:
        """Forced steps (step -> id) the run never reached: it stopped before them."""
        return {step: token for step, token in self.overrides.items() if step >= len(self.steps)}

    def unreached_text(self, step: int) -> str:
        """Why a what-if at `step` did nothing, in words."""
        return (f"the run has only {len(self.steps)} steps (0 = Prefill to {len(self.steps) - 1}; it stopped: "
                f"{self.finish_reason}), so step {step} never happens")

    @property
    def checked_steps(self) -> int:
        """How many steps were compared with a full recomputation."""
        return sum(s.recompute_max_abs_diff is not None for s in self.steps)

    @property
    def max_recompute_diff(self) -> float | None:
        diffs = [s.recompute_max_abs_diff for s in self.steps if s.recompute_max_abs_diff is not None]
        return max(diffs) if diffs else None


def default_selector(config: SamplingConfig, end_ids=()) -> Selector:
    """The sampler of `config`; end_ids: the tokens min_new_tokens holds back."""
    def select(logits, seen, step):
        return distribution(logits, config, seen_ids=seen, step=step, end_ids=end_ids)
    return select


def generate(model: LanguageModel, prompt_ids, config: SamplingConfig = SamplingConfig(), *,
             overrides: dict | None = None, selector: Selector | None = None,
             check_recompute: bool = True, cancel: Callable[[], bool] | None = None,
             reuse: Run | None = None, on_step: Callable[[int], None] | None = None,
             prefix: PrefixHit | None = None) -> Run:
    """Run Prefill and Decode steps until a stop criterion holds.

    overrides: {step index: token id} what-if choices; the step is marked forced and
    every later step follows from it. check_recompute: compare each step's logits with
    `full_forward` of the same prefix (the reference; costs a full pass per step): every
    step of a short run, at most MAX_CHECKED_STEPS of a long one (`checks_step`).
    reuse: an earlier Run of the same model; forward passes over the same tokens are taken
    from it instead of recomputed (a slider drag reruns only the selection).
    cancel: asked after every step; True ends the Run with finish reason "cancelled".
    on_step: called after every step with the number of steps done (a progress bar).
    prefix: a prefix cache's hit for this prompt; the Prefill starts from its K/V and
    computes only the positions after the reused ones.

    The one-off rule: after each forward a token is *selected* from the last position's
    logits; it is *processed* (its K/V enter the cache) only by the next Decode step. The
    last selected token is never processed, so a Run ends with one more visible token than
    the cache holds."""
    prompt = tuple(int(t) for t in model.vocab.id_array(prompt_ids, "prompt ids"))
    check_prompt_length(len(prompt), getattr(model, "context_length", None))
    overrides = _checked_overrides(overrides or {}, model, config)
    select = selector or default_selector(config, model.vocab.end_ids)

    steps: list[Step] = []
    output: list[int] = []
    if reuse is not None and _prefix_key(reuse.prefix) != _prefix_key(prefix):
        reuse = None                      # its Prefill started from another prefix: not the same forward
    cache, finish, stop, first_token = None, None, None, 0.0
    while finish is None:
        index = len(steps)
        check = check_recompute and checks_step(index, config.max_new_tokens)
        trace, diff, cache = _forward(model, prompt, output, steps, cache, reuse, check, prefix)
        chosen = time.perf_counter()
        dist = select(trace.last_logits, prompt + tuple(output), index)
        if index in overrides:
            dist = forced(dist, overrides[index])
        if index == 0:
            first_token = (prefix.seconds if prefix else 0.0) + trace.seconds + time.perf_counter() - chosen
        output.append(dist.selected_id)
        reused = prefix.reused if prefix is not None and index == 0 else 0
        steps.append(Step(index, "prefill" if index == 0 else "decode",
                          tuple(int(t) for t in trace.ids), tuple(int(p) for p in trace.positions),
                          reused if index == 0 else len(prompt) + index - 1, len(prompt) + index,
                          trace, dist, dist.selected_id, dist.forced, diff, trace.seconds, reused))
        if on_step is not None:
            on_step(len(steps))
        finish, stop = finish_check(model, output, config, index, len(prompt))
        if finish is None and cancel is not None and cancel():
            finish = "cancelled"
    text = model.vocab.decode(output)
    if stop is not None:
        text = text[:stop.char_index]
    return Run(model.name, prompt, tuple(steps), tuple(output), finish, config, text,
               dict(overrides), stop, prefix, first_token, getattr(model, "arithmetic_label", None))


def finish_check(model: LanguageModel, output, config: SamplingConfig, index: int, prompt_len: int):
    """-> (finish reason or None, StopMatch or None) after output token `index` was
    selected: the stop criteria in their order (see `stopping`), cancel aside. "context":
    the next Decode would process the selected token at a position beyond the model's
    context (llama.cpp stops there too; an OpenAI-style API calls it "length")."""
    if output[-1] in model.vocab.end_ids:
        return "eos", None
    if ends_with_any(output, getattr(model, "tool_call_sequences", ())):
        return "tool_call", None
    if (stop := find_stop_string(model.vocab.decode(output), config.stop_strings, index)):
        return "stop_string", stop
    if len(output) >= config.max_new_tokens:
        return "length", None
    context = getattr(model, "context_length", None)
    if context is not None and prompt_len + len(output) - 1 >= context:
        return "context", None
    return None, None


def _prefix_key(hit: PrefixHit | None) -> tuple:
    return () if hit is None else (hit.cached_ids, hit.reused)


def _forward(model, prompt, output, steps, cache, reuse: Run | None, check: bool, prefix: PrefixHit | None):
    """The forward pass of the next step -> (trace, recompute diff, live cache or None).

    Taken from `reuse` when it processed the same tokens (with the recompute check it had, if
    any: the same forward pass); otherwise computed, after rebuilding the KV cache from the
    earlier steps' traces if they were reused."""
    index = len(steps)
    if (reuse is not None and reuse.prompt_ids == prompt and index < len(reuse.steps)
            and reuse.output_ids[:index] == tuple(output)):
        old = reuse.steps[index]
        if old.recompute_max_abs_diff is not None or not check:
            return old.trace, old.recompute_max_abs_diff, None     # a check made earlier stays true
    if index == 0:
        trace, cache = (model.prefill(prompt) if prefix is None or not prefix.reused
                        else model.prefill_after(prompt, prefix.cache.copy()))
    else:
        if cache is None:
            cache = cache_from_traces(model, [s.trace for s in steps], prefix)
        trace, cache = model.decode(output[-1], cache)
    diff = recompute_diff(model, prompt + tuple(output), trace) if check else None
    return trace, diff, cache


def checks_step(index: int, max_new_tokens: int) -> bool:
    """Whether step `index` of a run of at most `max_new_tokens` is compared with a full
    recomputation: every step of a short run; of a long one the first CHECKED_FIRST, then
    the rest of MAX_CHECKED_STEPS spread evenly up to the last step it may reach (the check
    costs a whole forward over the prefix: quadratic in all)."""
    if max_new_tokens <= MAX_CHECKED_STEPS or index < CHECKED_FIRST:
        return True
    span, gaps = max_new_tokens - 1 - CHECKED_FIRST, MAX_CHECKED_STEPS - CHECKED_FIRST - 1
    j = index - CHECKED_FIRST
    k = -(-j * gaps // span)                       # the first spread check at or after j
    return k * span // gaps == j


def cache_from_traces(model: LanguageModel, traces, prefix: PrefixHit | None = None) -> KVCache:
    """A KV cache holding what the given forward passes wrote, in order (after the positions a
    prefix cache gave the first of them)."""
    cache = model.new_cache() if prefix is None or not prefix.reused else prefix.cache.copy()
    for trace in traces:
        for layer, lt in enumerate(trace.layers):
            cache.extend(layer, lt.k, lt.v)
        cache.commit(trace.ids, trace.positions)
    return cache


def prefix_cache_of(model: LanguageModel, runs) -> PrefixCache:
    """A prefix cache holding each finished Run's processed tokens (prompt and fed-back output)."""
    store = PrefixCache()
    for run in runs:
        store.store(run.visible_ids[:run.cache_len], cache_from_traces(model, [s.trace for s in run.steps],
                                                                       run.prefix))
    return store


def recompute_diff(model, processed_ids, trace: ForwardTrace) -> float:
    """max |logits of this cached forward - logits of a full recompute of the prefix|."""
    full = model.reference_logits(processed_ids, len(trace.logits))   # [m, V], the rows kept
    both = np.isfinite(full) & np.isfinite(trace.logits)
    if not np.array_equal(both, np.isfinite(full) | np.isfinite(trace.logits)):
        return float("inf")
    return float(np.max(np.abs(full[both] - trace.logits[both]), initial=0.0))


def _checked_overrides(overrides: dict, model, config: SamplingConfig) -> dict:
    out = {}
    for step, token in overrides.items():
        step, token = int(step), int(token)
        if not 0 <= step < config.max_new_tokens:
            raise SettingError(f"override step {step}: expected 0..{config.max_new_tokens - 1} "
                               f"(max_new_tokens = {config.max_new_tokens})")
        model.vocab.check_ids([token], f"override at step {step}")
        out[step] = token
    return out
