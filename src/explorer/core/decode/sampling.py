"""From a logits vector to one selected token, with every intermediate stage recorded."""

from __future__ import annotations

import dataclasses
import math
import numbers
import threading
import weakref
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

import numpy as np

from ..errors import OrderError, SettingError
from ..limits import MAX_BEAMS, MAX_LENGTH_PENALTY, MAX_NEW_TOKENS, MAX_SEED, check_count
from . import api_stages
from .orders import ALL_STAGE_NAMES, API_STAGE_NAMES, ORDER_PRESETS, STAGE_NAMES, UPGRADED, checked_order, parse_order
from .api_stages import RANGES, TOP_P_TOLERANCE, XTC_STREAM, Context, check_bias_ids, checked_logit_bias, keeping

MODES = ("greedy", "sample", "beam")
API_SETTINGS = (*RANGES, "logit_bias")   # the SamplingConfig fields of the API stages

_SAMPLE_STRIDE = 16      # _kth_largest partitions every 16th value first
_THRESHOLD_STEP = 1 / 16 # _ruler_prefix lowers its probability threshold 16x at a time
_THRESHOLD_FLOOR = 1e-20 # ... down to this fraction of the top probability, then takes all
_BAND = 256              # inverse_cdf sorts at most about this many candidates
_BUCKET_BITS = 12        # inverse_cdf puts the candidates in at most 2**12 buckets per round


# ---------------------------------------------------------------------------- settings

def _fail(field: str, value, expected: str):
    raise SettingError(f"{field} = {value!r}: expected {expected}")


def _real(field: str, value) -> float:
    """value as a float, or a SettingError if it is not a real number (bools are refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        _fail(field, value, "a number")
    return float(value)


def _integer(field: str, value, minimum: int) -> int:
    """value as an int >= minimum, or a SettingError (floats and bools are refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        _fail(field, value, f"an integer >= {minimum}")
    return int(value)


@dataclass(frozen=True)
class SamplingConfig:
    """How the next token is chosen. Names follow Hugging Face's GenerationConfig."""

    mode: str = "greedy"                  # deterministic, so the first lessons are reproducible by hand
    temperature: float = 1.0              # 1 leaves the model's own distribution unchanged
    top_k: int = 0                        # 0 = off: no cap on the number of candidates
    top_p: float = 1.0                    # 1 = off: the whole probability mass is kept
    min_p: float = 0.0                    # 0 = off: no candidate is too unlikely relative to the best
    repetition_penalty: float = 1.0       # 1 = off: tokens already seen are not pushed down
    seed: int = 0                         # a fixed seed: the same run in every class
    order: tuple[str, ...] = ORDER_PRESETS["hf"]   # Hugging Face / vLLM order, the common reference
    max_new_tokens: int = 16              # a short sentence: long enough to see, short to step through
    stop_strings: tuple[str, ...] = ()    # none: stop on EOS or length only
    num_beams: int = 2                    # the smallest beam that can beat greedy (course: BD over AE)
    length_penalty: float = 1.0           # Hugging Face default: beam score = sum of log-probs / length
    presence_penalty: float = 0.0         # 0 = off: OpenAI's, minus this once for a token the output holds
    frequency_penalty: float = 0.0        # 0 = off: OpenAI's, minus this times the token's count in the output
    logit_bias: tuple = ()                # none: ((id, bias), ...) added to the logits, -100 bans in practice
    typical_p: float = 1.0                # 1 = off: the whole mass, however typical
    min_keep: int = 0                     # 0 = off: each truncation stage keeps at least one anyway
    xtc_probability: float = 0.0          # 0 = off: the top choices are never excluded
    xtc_threshold: float = 0.1            # llama.cpp's default: "top" means p >= 0.1
    top_n_sigma: float = 0.0              # 0 = off: no cut by standard deviations
    min_new_tokens: int = 0               # 0 = off: the end token may come at once

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        if self.mode not in MODES:
            _fail("mode", self.mode, " | ".join(MODES))
        temperature = _real("temperature", self.temperature)
        if not math.isfinite(temperature):
            _fail("temperature", self.temperature, "a finite number (<= 0 means greedy)")
        top_p = _real("top_p", self.top_p)
        if not 0 < top_p <= 1:
            _fail("top_p", self.top_p, "0 < top_p <= 1")
        min_p = _real("min_p", self.min_p)
        if not 0 <= min_p <= 1:
            _fail("min_p", self.min_p, "0 <= min_p <= 1")
        penalty = _real("repetition_penalty", self.repetition_penalty)
        if not (penalty > 0 and math.isfinite(penalty)):
            _fail("repetition_penalty", self.repetition_penalty, "a finite number > 0 (1 = off)")
        length_penalty = _real("length_penalty", self.length_penalty)
        if not abs(length_penalty) <= MAX_LENGTH_PENALTY:            # also refuses NaN
            _fail("length_penalty", self.length_penalty,
                  f"a number from {-MAX_LENGTH_PENALTY:g} to {MAX_LENGTH_PENALTY:g}")
        order = self.order
        if isinstance(order, str):
            order = parse_order(order)
        elif not isinstance(order, (list, tuple)):
            _fail("order", order, f"a preset ({', '.join(ORDER_PRESETS)}) or a list of stage names")
        stops = self.stop_strings
        if not isinstance(stops, (list, tuple)) or not all(isinstance(s, str) and s for s in stops):
            _fail("stop_strings", stops, "a list of non-empty strings")

        put("temperature", temperature)
        put("top_k", _integer("top_k", self.top_k, 0))
        put("top_p", top_p)
        put("min_p", min_p)
        put("repetition_penalty", penalty)
        put("seed", check_count("seed", self.seed, 0, MAX_SEED))
        order = checked_order(tuple(order))
        put("order", UPGRADED.get(order, order))
        put("max_new_tokens", check_count("max_new_tokens", self.max_new_tokens, 1, MAX_NEW_TOKENS))
        put("stop_strings", tuple(stops))
        put("num_beams", check_count("num_beams", self.num_beams, 1, MAX_BEAMS))
        put("length_penalty", length_penalty)
        for name, kind in RANGES.items():
            put(name, kind.check(name, getattr(self, name)))
        put("logit_bias", checked_logit_bias(self.logit_bias))
        off = [name for name in self.active_stages if name not in self.order]
        if off:
            raise OrderError(f"order: leaves out {', '.join(off)}, which {'is' if len(off) == 1 else 'are'} on "
                             f"({self._settings_of(off)}): expected every stage that is on in the order (or turn "
                             f"it off)", self.order, tuple(off))

    @property
    def active_stages(self) -> tuple[str, ...]:
        """The stages whose setting is not neutral (temperature: in sample mode), in ALL_STAGE_NAMES order."""
        on = {"repetition_penalty": self.repetition_penalty != 1,
              "temperature": self.mode == "sample" and self.temperature != 1,
              "top_k": self.top_k > 0, "top_p": self.top_p < 1, "min_p": self.min_p > 0,
              "logit_bias": bool(self.logit_bias), "min_new_tokens": self.min_new_tokens > 0,
              "frequency_penalty": self.frequency_penalty != 0, "presence_penalty": self.presence_penalty != 0,
              "top_n_sigma": self.top_n_sigma > 0, "typical_p": self.typical_p < 1,
              "xtc": self.xtc_probability > 0 and self.xtc_threshold <= 0.5}
        return tuple(name for name in ALL_STAGE_NAMES if on[name])

    @property
    def shown_order(self) -> tuple[str, ...]:
        """The stages a distribution records, in order: the course's always, the APIs' when on."""
        on = self.active_stages
        return tuple(s for s in self.order if s in STAGE_NAMES or s in on)

    def api_settings_on(self) -> dict:
        """The API stages' settings that differ from their defaults: what a file or a handout
        writes, so that one made without them reads as before they existed."""
        default = SamplingConfig()
        return {name: getattr(self, name) for name in API_SETTINGS if getattr(self, name) != getattr(default, name)}

    def _settings_of(self, names) -> str:
        fields = {"xtc": ("xtc_probability", "xtc_threshold")}
        return ", ".join(f"{f} = {getattr(self, f)!r}" for n in names for f in fields.get(n, (n,)))

    def with_(self, **changes) -> SamplingConfig:
        """A copy with some settings changed (validated again)."""
        return dataclasses.replace(self, **changes)


# ---------------------------------------------------------------------------- array helpers

def _frozen(array: np.ndarray) -> np.ndarray:
    """The same array, made read-only: records are shared between stages and steps."""
    array.flags.writeable = False
    return array


@lru_cache(maxsize=8)
def _all_ids(size: int) -> np.ndarray:  # -> (V,)
    """0..V-1, shared: the candidates of a vector from which nothing is removed."""
    return _frozen(np.arange(size))


def _scatter(ids: np.ndarray, values, size: int, fill) -> np.ndarray:  # (n,), (n,) -> (V,)
    """A (V,) array holding `values` at `ids` and `fill` elsewhere."""
    out = np.full(size, fill)
    out[ids] = values
    return out


def _softmax(values: np.ndarray) -> np.ndarray:  # (n,) -> (n,)
    """Probabilities of candidate logits (finite, or +inf after an overflowing division).

    Logits that overflowed to +inf share the mass equally: the limit as T -> 0."""
    top = values.max()
    if top == np.inf:
        probs = (values == top).astype(np.float64)
    else:
        with np.errstate(over="ignore"):      # a huge gap (T near 0) becomes -inf: probability 0
            probs = values - top
        np.exp(probs, out=probs)
    probs /= probs.sum()
    return probs


def _kth_largest(values: np.ndarray, k: int) -> float:  # (n,), 1 <= k <= n -> scalar
    """The exact k-th largest value.

    For small k a strided sample is partitioned first: its k-th largest value is a lower
    bound of the true one, so the exact partition only needs the values above it."""
    sample = values[::_SAMPLE_STRIDE]
    if 4 * k <= sample.size:
        bound = np.partition(sample, sample.size - k)[sample.size - k]
        values = values[values >= bound]                      # (m,) m >= k: holds the top k
    return float(np.partition(values, values.size - k)[values.size - k])


def _ranked(probs: np.ndarray, positions: np.ndarray) -> np.ndarray:  # (n,), (m,) ascending -> (m,)
    """positions in ruler order: probability descending, lower position (= lower id) first on ties."""
    return positions[np.argsort(-probs[positions], kind="stable")]


def _ruler_prefix(probs: np.ndarray, mass: float) -> np.ndarray:  # (n,) -> (m,)
    """The first positions of the ruler (candidates with probability > 0, in ruler order),
    enough of them that their total exceeds `mass`; all of them if it never does.

    Only those are sorted: the candidates above a threshold that starts at the top
    probability and drops 16x at a time until their mass is enough. A peaked distribution
    over 49k ids sorts a few hundred; the masks are the only (V,)-sized temporaries."""
    top = probs.max()
    threshold = top
    while threshold >= top * _THRESHOLD_FLOOR:
        chosen = np.flatnonzero(probs >= threshold)           # (m,)
        if probs[chosen].sum() > mass:
            return _ranked(probs, chosen)
        threshold *= _THRESHOLD_STEP
    return _ranked(probs, np.flatnonzero(probs))


# ---------------------------------------------------------------------------- records

@dataclass(frozen=True, eq=False)
class Stage:
    """One step of the pipeline, as the distribution panel shows it.

    It stores the surviving candidates only; the (V,) arrays are built on first access
    (and shared with the previous stage when this one changed nothing)."""

    name: str               # "raw" or one of STAGE_NAMES
    active: bool            # False: the setting is neutral (e.g. top_k = 0), nothing changed
    note: str               # the setting, e.g. "T=2", "k=2"
    ids: np.ndarray         # (n,) ascending: the ids still candidates after this stage
    values: np.ndarray      # (n,) their logits
    vocab_size: int         # V
    previous: Stage | None = field(default=None, repr=False)

    @property
    def _unchanged(self) -> bool:
        return self.previous is not None and self.values is self.previous.values

    @cached_property
    def candidate_probs(self) -> np.ndarray:  # (n,)
        """Softmax over the candidates: the probabilities of `ids`."""
        if self._unchanged:
            return self.previous.candidate_probs
        return _frozen(_softmax(self.values))

    @cached_property
    def logits(self) -> np.ndarray:  # (V,)
        """Logits after this stage; removed ids are -inf."""
        if self._unchanged:
            return self.previous.logits
        if self.ids.size == self.vocab_size:
            return self.values
        return _frozen(_scatter(self.ids, self.values, self.vocab_size, -np.inf))

    @cached_property
    def probs(self) -> np.ndarray:  # (V,)
        """Softmax of `logits`: removed ids have probability 0."""
        if self._unchanged:
            return self.previous.probs
        if self.ids.size == self.vocab_size:
            return self.candidate_probs
        return _frozen(_scatter(self.ids, self.candidate_probs, self.vocab_size, 0.0))

    @cached_property
    def kept(self) -> np.ndarray:  # (V,) bool
        """Ids still candidates after this stage."""
        if self.previous is not None and self.ids is self.previous.ids:
            return self.previous.kept
        return _frozen(_scatter(self.ids, True, self.vocab_size, False))

    @cached_property
    def removed(self) -> np.ndarray:  # (V,) bool
        """Ids this stage removed (for "raw": the ids that arrived as -inf)."""
        before = np.ones(self.vocab_size, dtype=bool) if self.previous is None else self.previous.kept
        return _frozen(before & ~self.kept)

    def top(self, n: int) -> np.ndarray:  # -> (min(n, V),)
        """The n most likely ids by this stage's probabilities, best first, lower id first
        on ties. Cached: the raw stage of a recorded step is shared by every Distribution
        a slider drag makes of it (`distribution`), so its favourites are found once."""
        cache = self.__dict__.setdefault("_tops", {})
        if n not in cache:
            if self._unchanged:
                cache[n] = self.previous.top(n)
            else:
                cache[n] = _frozen(self._top(n))
        return cache[n]

    def _top(self, n: int) -> np.ndarray:  # -> (min(n, V),)
        if 0 < n and self.ids.size < self.vocab_size:
            # a truncated stage: rank its candidates, not the (V,) probabilities, mostly zeros
            # (partitioning tens of thousands of equal values is slow), then the removed ids
            # by id; unless a candidate ranked has probability 0, tying with the removed ones
            probs = self.candidate_probs                              # (c,)
            if n <= probs.size and (kth := _kth_largest(probs, n)) > 0:
                return self.ids[_ranked(probs, np.flatnonzero(probs >= kth))[:n]]
            if n > probs.size and probs.min() > 0:
                rest = np.flatnonzero(~self.kept)[:n - probs.size]   # (r,) removed, lower id first
                return np.concatenate((self.ids[_ranked(probs, np.arange(probs.size))], rest))
        probs = self.probs                                            # (V,)
        k = min(n, probs.size)
        if k <= 0:
            return np.zeros(0, dtype=np.int64)
        return _ranked(probs, np.flatnonzero(probs >= _kth_largest(probs, k)))[:k]


@dataclass(frozen=True, eq=False)
class Distribution:
    """How one token was chosen from one logits vector."""

    raw_logits: np.ndarray          # (V,) the model's logits
    stages: tuple[Stage, ...]       # "raw" first, then one per name in the configured order
    u: float | None                 # the uniform draw; None when the choice was greedy
    selected_id: int
    greedy: bool
    forced: bool = False            # chosen by a what-if override, not by the sampler

    @property
    def probs(self) -> np.ndarray:  # (V,)
        """Final probabilities (those of the last stage)."""
        return self.stages[-1].probs

    @cached_property
    def removed_by(self) -> np.ndarray:  # (V,) object
        """The name of the stage that removed each id; None for ids still candidates."""
        names = np.full(self.raw_logits.size, None, dtype=object)
        for stage in self.stages:
            names[stage.removed] = stage.name
        return _frozen(names)

    def removers(self, ids: np.ndarray) -> np.ndarray:  # (k,) -> (k,) object
        """`removed_by[ids]` without the (V,) array of names (a panel shows a few dozen ids)."""
        names = np.full(ids.size, None, dtype=object)
        before = np.ones(ids.size, dtype=bool)
        for stage in self.stages:
            kept = stage.kept[ids]                                # (k,)
            names[before & ~kept] = stage.name
            before = kept
        return names

    @cached_property
    def _ruler_positions(self) -> np.ndarray:  # (n,) positions in the last stage's candidates
        probs = self.stages[-1].candidate_probs
        return _ranked(probs, np.flatnonzero(probs))

    @cached_property
    def ruler_ids(self) -> np.ndarray:  # (n,)
        """Ids with final probability > 0: probability descending, lower id first on ties."""
        return _frozen(self.stages[-1].ids[self._ruler_positions])

    @cached_property
    def ruler_hi(self) -> np.ndarray:  # (n,)
        """Upper end of each ruler id's interval [lo, hi): the cumulative probability."""
        return _frozen(np.cumsum(self.stages[-1].candidate_probs[self._ruler_positions]))

    @cached_property
    def ruler_lo(self) -> np.ndarray:  # (n,)
        """Lower end of each ruler id's interval [lo, hi)."""
        return _frozen(np.concatenate(([0.0], self.ruler_hi[:-1])))

    def top(self, n: int, stage: int = -1) -> np.ndarray:  # -> (min(n, V),)
        """The n most likely ids by one stage's probabilities (default: the final ones),
        best first, lower id first on ties: for top-N + "other" displays."""
        return self.stages[stage].top(n)

    def ruler_head(self, n: int):  # -> ids (m,), lo (m,), hi (m,), m <= n
        """The first n intervals of the ruler, without sorting the whole ruler: the n most
        likely final ids are its first n entries, in the same order."""
        if self.probs.size <= n:
            return self.ruler_ids, self.ruler_lo, self.ruler_hi
        top = self.top(n)
        ids = top[self.probs[top] > 0]                        # (m,)
        hi = np.cumsum(self.probs[ids])                       # (m,)
        return ids, np.concatenate(([0.0], hi[:-1])), hi


# ---------------------------------------------------------------------------- stage rules
# A rule looks at the previous Stage and returns None when its setting is off; otherwise
# (new values (n,) or None if unchanged, keep (n,) bool or None if nothing is removed).

def _penalise(stage: Stage, seen_ids: np.ndarray, penalty: float):
    """Every distinct seen id still a candidate: logit / penalty if > 0, logit * penalty if < 0."""
    if penalty == 1 or not seen_ids.size:
        return None
    seen = np.unique(seen_ids)                                # (s,) distinct, ascending
    at = np.minimum(np.searchsorted(stage.ids, seen), stage.ids.size - 1)
    at = at[stage.ids[at] == seen]                            # positions of seen candidates
    values = stage.values.copy()
    hit = values[at]
    with np.errstate(over="ignore"):
        values[at] = np.where(hit > 0, hit / penalty, hit * penalty)   # 0 stays 0
    return values, None


def _temper(stage: Stage, temperature: float):
    """Divide by T. T <= 0 is greedy: only the argmax (lowest id on ties) stays. T = 1: off."""
    if temperature <= 0:
        keep = np.zeros(stage.ids.size, dtype=bool)
        keep[np.argmax(stage.values)] = True
        return None, keep
    if temperature == 1:
        return None
    with np.errstate(over="ignore"):                          # a tiny T may overflow to +inf
        return stage.values / temperature, None


def _top_k(stage: Stage, k: int, min_keep: int = 0):
    """Keep every id whose logit >= the k-th largest (ties at the boundary stay); k is
    raised to min_keep (Hugging Face's TopKLogitsWarper). Off when k <= 0 or k >= V."""
    if not 0 < k < stage.vocab_size:
        return None
    k = max(k, min_keep)
    if k >= stage.ids.size:
        return None, None
    return None, stage.values >= _kth_largest(stage.values, k)


def _top_p(stage: Stage, p: float, min_keep: int = 0):
    """Keep the smallest ruler prefix whose cumulative probability >= p (within 1e-9),
    at least one id and at least min_keep. Off when p >= 1."""
    if p >= 1:
        return None
    probs = stage.candidate_probs                             # (n,)
    target = p - TOP_P_TOLERANCE
    prefix = _ruler_prefix(probs, target)                     # (m,)
    reached = np.cumsum(probs[prefix])                        # (m,)
    size = min(int(np.searchsorted(reached, target)) + 1, prefix.size)
    keep = np.zeros(probs.size, dtype=bool)
    keep[prefix[:size]] = True
    return None, api_stages.at_least(stage, keep, min_keep)


def _min_p(stage: Stage, m: float, min_keep: int = 0):
    """Remove ids whose probability < m * the highest probability, keeping at least
    min_keep. Off when m <= 0."""
    if m <= 0:
        return None
    probs = stage.candidate_probs                             # (n,)
    return None, api_stages.at_least(stage, probs >= m * probs.max(), min_keep)


def _advance(stage: Stage, name: str, change, note: str = "") -> Stage:
    """The stage that follows `stage` once a rule's change is applied."""
    if change is None:
        return Stage(name, False, note, stage.ids, stage.values, stage.vocab_size, stage)
    values, keep = change
    ids = stage.ids
    values = stage.values if values is None else _frozen(values)
    if keep is not None and not keep.all():
        at = np.flatnonzero(keep)                             # (m,): one pass over the mask, two cheap gathers
        ids, values = _frozen(at if ids.size == stage.vocab_size else ids[at]), _frozen(values[at])
    return Stage(name, True, note, ids, values, stage.vocab_size, stage)


def _raw_stage(raw: np.ndarray) -> Stage:
    """The first stage: every id whose logit is not -inf is a candidate."""
    alive = raw > -np.inf                                     # (V,) bool
    if alive.all():
        ids, values = _all_ids(raw.size), raw
    else:
        ids = _frozen(np.flatnonzero(alive))
        values = _frozen(raw[ids])
    return Stage("raw", True, "", ids, values, raw.size)


def _checked_logits(logits) -> np.ndarray:  # -> (V,) float64, a read-only copy
    values = np.array(logits, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise SettingError(f"logits have shape {values.shape}: expected a non-empty vector")
    if not np.isfinite(values).all():
        for bad, what in ((np.isnan(values), "NaN"), (values == np.inf, "+inf")):
            if bad.any():
                raise SettingError(f"logits contain {what} at id {int(np.argmax(bad))}: "
                                   f"expected finite values (or -inf for a removed id)")
        if not (values > -np.inf).any():
            raise SettingError("logits are all -inf: expected at least one candidate")
    return _frozen(values)


def _checked_ids(ids, vocab_size: int) -> np.ndarray:  # -> (s,) int64
    out = np.asarray(ids, dtype=np.int64).reshape(-1)
    bad = out[(out < 0) | (out >= vocab_size)]
    if bad.size:
        raise SettingError(f"seen id {int(bad[0])}: expected ids in 0..{vocab_size - 1}")
    return out


# ---------------------------------------------------------------------------- processors
# The stages on a plain logits vector (V,) in which removed ids are -inf. Each returns
# (new logits (V,), removed (V,) bool: the ids it removed); when off, the logits are unchanged.

def _apply(logits, rule, *setting) -> tuple[np.ndarray, np.ndarray]:
    start = _raw_stage(_checked_logits(logits))
    after = _advance(start, "", rule(start, *setting))
    return after.logits, after.removed


def apply_repetition_penalty(logits, seen_ids, penalty: float):
    """For each distinct seen id: logit / penalty if > 0, logit * penalty if < 0, 0 stays."""
    return _apply(logits, _penalise, _checked_ids(seen_ids, np.shape(logits)[-1]), penalty)


def apply_temperature(logits, temperature: float):
    """Divide by T; T <= 0 keeps only the argmax (lowest id on ties), never dividing by 0."""
    return _apply(logits, _temper, temperature)


def apply_top_k(logits, k: int):
    """Keep every id whose logit >= the k-th largest; k <= 0 or k >= V: off."""
    return _apply(logits, _top_k, k)


def apply_top_p(logits, p: float):
    """Keep the smallest prefix (probability descending, lower id first) reaching p; p >= 1: off."""
    return _apply(logits, _top_p, p)


def apply_min_p(logits, m: float):
    """Remove ids with probability < m * the highest probability; m <= 0: off."""
    return _apply(logits, _min_p, m)


# ---------------------------------------------------------------------------- selection

def uniform_draw(seed: int, step: int) -> float:
    """The u in [0, 1) of one step. It depends on (seed, step) only, never on the settings."""
    return _draw(_integer("seed", seed, 0), _integer("step", step, 0))


def xtc_draw(seed: int, step: int) -> float:
    """The draw in [0, 1) that decides whether XTC acts at a step: from its own generator,
    keyed by (seed, step, 1), so it never moves u and u never moves it."""
    return _draw(_integer("seed", seed, 0), _integer("step", step, 0), XTC_STREAM)


@lru_cache(maxsize=4096)
def _draw(seed: int, step: int, *stream: int) -> float:
    """Cached: a slider drag asks for the same few draws on every tick (a generator costs 40 us)."""
    return float(np.random.default_rng(np.random.SeedSequence([seed, step, *stream])).random())


def _change(name: str, stage: Stage, config: SamplingConfig, at: Context):
    """-> (the named rule's change to `stage`, the note shown beside the stage)."""
    if name in API_STAGE_NAMES:
        draw = xtc_draw(config.seed, at.step) if name == "xtc" else None
        return api_stages.change(name, stage, config, at, draw)
    seen = at.seen
    if name == "repetition_penalty":
        theta = config.repetition_penalty
        return _penalise(stage, seen, theta), f"θ={theta:g}"
    if name == "temperature":
        t = config.temperature
        if config.mode != "sample":               # greedy and beam take the top logits as they are
            return None, f"T={t:g}"
        return _temper(stage, t), f"T={t:g}" + (": argmax" if t <= 0 else "")
    if name == "top_k":
        return _top_k(stage, config.top_k, config.min_keep), keeping(f"k={config.top_k}", config)
    if name == "top_p":
        return _top_p(stage, config.top_p, config.min_keep), keeping(f"p={config.top_p:g}", config)
    return _min_p(stage, config.min_p, config.min_keep), keeping(f"min_p={config.min_p:g}", config)


def inverse_cdf(probs: np.ndarray, u: float) -> int:  # (n,) float64 -> position
    """The ruler position whose interval [lo, hi) holds u (the last one if round-off
    leaves u at or above the final hi).

    Only a small part of the ruler is sorted. A peaked distribution: the few candidates
    above a falling threshold already hold u. A flat one: the candidates are put in
    buckets of nearly equal probability (the bits of a positive float64 ordered as an
    integer are ordered as the float, so their top bits are a bucket number that keeps
    the ruler order; the buckets are as fine as 2**12 of them over the candidates' range
    allow), the masses of the buckets locate the one that holds u, and only its members
    go on. The highest and the lowest candidate never share a bucket, so every round
    narrows. 49k ids then sort a few dozen values instead of all of them."""
    top = probs.max()
    threshold = top
    while threshold >= top * _THRESHOLD_FLOOR:
        chosen = np.flatnonzero(probs >= threshold)           # (m,) a prefix of the ruler
        if chosen.size > _BAND * 8:
            break
        if probs[chosen].sum() > u:
            return _pick(probs, chosen, 0.0, u)
        threshold *= _THRESHOLD_STEP
    everyone = probs.min() > 0                                # no stage removed anything: skip the gather
    candidates = None if everyone else np.flatnonzero(probs > 0)   # (m,) still possible picks; None = all
    before = 0.0                                              # ruler mass ahead of them
    while candidates is None or candidates.size > _BAND:
        values = probs if candidates is None else probs[candidates]    # (m,)
        rank = values.view(np.int64).copy()                   # (m,) ordered as the values
        top, low = int(rank.max()), int(rank.min())
        if top == low:                                        # they all tie: sort them
            break
        shift = max(0, (top - low).bit_length() - _BUCKET_BITS)   # the finest buckets that fit
        rank >>= shift
        np.subtract(top >> shift, rank, out=rank)             # (m,) 0 = the highest bucket
        mass = np.bincount(rank, weights=values)              # (B,) in ruler order, B <= 2**12 + 1
        ends = before + np.cumsum(mass)                       # (B,) ruler mass up to each bucket's end
        bucket = min(int(np.searchsorted(ends, u, side="right")), int(np.flatnonzero(mass)[-1]))
        before = float(ends[bucket] - mass[bucket])
        inside = rank == bucket                               # (m,)
        candidates = np.flatnonzero(inside) if candidates is None else candidates[inside]
    if candidates is None:
        candidates = np.arange(probs.size)
    return _pick(probs, candidates, before, u)


def _pick(probs: np.ndarray, candidates: np.ndarray, before: float, u: float) -> int:  # (n,), (k,)
    """The candidate whose ruler interval holds u, given the mass `before` them."""
    ids = _ranked(probs, candidates)                          # (k,) ruler order
    hi = before + np.cumsum(probs[ids])                       # (k,)
    return int(ids[min(int(np.searchsorted(hi, u, side="right")), ids.size - 1)])


# the raw stages of read-only logits vectors seen lately: id(logits) -> (weak reference, checked
# logits, Stage). A slider drag on a recorded step selects again and again from the same
# logits (a trace's, read-only): 262,144 of them are checked, copied to float64 and turned
# into probabilities and favourites once, not on every tick.
_RAW_STAGES: dict[int, tuple] = {}
_RAW_STAGES_LOCK = threading.Lock()     # the window's worker and its UI thread may both select
_RAW_STAGES_KEPT = 4         # 4 MB each on a 262,144-id vocabulary (logits and probabilities)


def _raw_of(logits) -> tuple[np.ndarray, Stage]:  # -> (V,) float64 read-only, the raw Stage
    key = id(logits)
    with _RAW_STAGES_LOCK:
        hit = _RAW_STAGES.get(key)
    if hit is not None and hit[0]() is logits:
        return hit[1], hit[2]
    raw = _checked_logits(logits)
    stage = _raw_stage(raw)
    if isinstance(logits, np.ndarray) and not logits.flags.writeable:     # cannot change under us
        with _RAW_STAGES_LOCK:
            for dead in [k for k, (ref, _, _) in _RAW_STAGES.items() if ref() is None]:
                del _RAW_STAGES[dead]
            while len(_RAW_STAGES) >= _RAW_STAGES_KEPT:
                del _RAW_STAGES[next(iter(_RAW_STAGES))]                       # the oldest
            _RAW_STAGES[key] = (weakref.ref(logits), raw, stage)
    return raw, stage


def distribution(logits, config: SamplingConfig, *, seen_ids=(), step: int = 0, output_ids=None,
                 end_ids=()) -> Distribution:
    """Run the stages of `config.order` on one logits vector (V,) and select a token.

    seen_ids: prompt + output so far, for the repetition penalty. step: which u to draw.
    output_ids: the output so far, for the presence and frequency penalties and
    min_new_tokens; None: the last `step` seen ids (in a run, step k follows k output
    tokens). end_ids: the end tokens min_new_tokens holds back.
    Greedy (argmax of the final logits, lowest id on ties, u = None) when the mode is
    "greedy" or "beam" (the stages are still recorded, for display) or when the
    temperature is <= 0; otherwise inverse-CDF sampling with u = uniform_draw(seed, step).

    The stages (repetition penalty, temperature, top-k, top-p, min-p) each turn a logits
    vector `(V,)` into a new one in which removed ids are `-inf`; they run in the configured
    order, every stage is recorded, and then one id is selected: greedily (argmax, lowest
    id on ties) or by inverse-CDF sampling with one uniform draw `u` per step, keyed by
    (seed, step) so that changing a setting reshapes the intervals while `u` stays put.
    Float64 throughout."""
    raw, first = _raw_of(logits)                              # (V,), shared for read-only logits
    seen = _checked_ids(seen_ids, raw.size)                   # (s,)
    output = seen[max(0, seen.size - step):] if output_ids is None else _checked_ids(output_ids, raw.size)
    check_bias_ids(config.logit_bias, raw.size)
    at = Context(seen, output, np.asarray(sorted(end_ids), dtype=np.int64), step)
    stages = [first]
    for name in config.shown_order:                           # an API stage that is off: not even a row
        change, note = _change(name, stages[-1], config, at)
        stages.append(_advance(stages[-1], name, change, note))

    final = stages[-1]
    greedy = config.mode != "sample" or config.temperature <= 0
    if greedy:
        u, position = None, int(np.argmax(final.values))
    else:
        u = uniform_draw(config.seed, step)
        position = inverse_cdf(final.candidate_probs, u)
    return Distribution(raw, tuple(stages), u, int(final.ids[position]), greedy)


def forced(dist: Distribution, token_id: int) -> Distribution:
    """The same distribution with `token_id` selected by a what-if override."""
    size = dist.raw_logits.size
    if isinstance(token_id, bool) or not isinstance(token_id, numbers.Integral) \
            or not 0 <= token_id < size:
        raise SettingError(f"forced token {token_id!r}: expected an id in 0..{size - 1}")
    return dataclasses.replace(dist, selected_id=int(token_id), forced=True)
