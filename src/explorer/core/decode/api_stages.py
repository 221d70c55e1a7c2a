"""The sampling stages students meet in real APIs: OpenAI's presence and frequency penalties
and logit bias, Hugging Face's and vLLM's min_new_tokens, and llama.cpp's typical-p,
top-n-sigma and XTC; plus min_keep, the fewest candidates a truncation stage may leave.

Each rule has the shape of `sampling`'s own: it looks at the previous stage (anything with
`ids`, `values`, `candidate_probs`, `vocab_size` and `top(n)`) and returns None when its
setting is off, else (new values (n,) or None, keep (n,) bool or None). Each one's
definition is the peer's it is named after (the docstrings say which)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ExplorerError, SettingError
from ..limits import MAX_NEW_TOKENS, MAX_TOKEN_ID, Real, Whole, shown_text

TOP_P_TOLERANCE = 1e-9   # keeps 0.55 + 0.25 "reaching" 0.8 despite float64 round-off (top-p, typical-p)
XTC_STREAM = 1           # the XTC draw's generator is keyed by (seed, step, 1); u's by (seed, step)

# the range of each setting, shared by the config, the command line, lesson files and the window
MAX_LOGIT_BIAS = 100.0   # OpenAI's range: -100 bans a token in practice, +100 forces it
RANGES = {
    "presence_penalty": Real(-2.0, 2.0),          # OpenAI's range
    "frequency_penalty": Real(-2.0, 2.0),
    "typical_p": Real(0.0, 1.0, open_low=True),   # 1 = off
    "min_keep": Whole(0, MAX_TOKEN_ID),           # 0 or 1: off (every stage keeps one anyway)
    "xtc_probability": Real(0.0, 1.0),            # 0 = off
    "xtc_threshold": Real(0.0, 1.0),              # above 0.5: off (two tokens cannot both exceed it)
    "top_n_sigma": Real(0.0, math.inf, open_high=True, words="a finite number >= 0 (0 = off)"),
    "min_new_tokens": Whole(0, MAX_NEW_TOKENS),   # 0 = off
}
LOGIT_BIAS = Real(-MAX_LOGIT_BIAS, MAX_LOGIT_BIAS)
TOKEN_ID = Whole(0, MAX_TOKEN_ID)


def checked_logit_bias(value) -> tuple[tuple[int, float], ...]:
    """A logit bias as ((id, bias), ...) sorted by id, from a {id: bias} table (ids may be
    written as digits, as a TOML key is) or (id, bias) pairs; a SettingError naming the
    entry otherwise. Ids are checked against the vocabulary when a distribution is made."""
    items = value.items() if isinstance(value, dict) else value
    if not isinstance(items, (list, tuple, type({}.items()))):
        raise SettingError(f"logit_bias = {value!r}: expected a table of token id = bias")
    out = {}
    for item in items:
        if not (isinstance(item, (list, tuple)) and len(item) == 2):
            raise SettingError(f"logit_bias = {value!r}: expected a table of token id = bias")
        token, bias = item
        if isinstance(token, str) and token.isascii() and token.isdigit() and len(token) <= 10:
            token = int(token)
        if isinstance(token, bool) or not isinstance(token, (int, np.integer)) or not 0 <= token <= MAX_TOKEN_ID:
            raise SettingError(f"logit_bias: token {token!r}: expected a token id from 0 to {MAX_TOKEN_ID:,}")
        if int(token) in out:
            raise SettingError(f"logit_bias: token {int(token)} is given twice: expected each id once")
        out[int(token)] = LOGIT_BIAS.check(f"logit_bias[{int(token)}]", bias)
    return tuple(sorted(out.items()))


def is_piece_key(token) -> bool:
    """Whether a logit_bias key of a lesson file names a piece (text) rather than an id (digits)."""
    return isinstance(token, str) and not (token.isascii() and token.isdigit())


def check_bias_ids(bias, vocab_size: int) -> None:
    """SettingError if a biased id is outside the vocabulary 0..V-1."""
    for token, _ in bias:
        if token >= vocab_size:
            raise SettingError(f"logit_bias: token {token} is outside the vocabulary: expected an id "
                               f"from 0 to {vocab_size - 1:,}")


def logit_bias_item(text: str) -> tuple[int | str, float]:
    """One ID:BIAS of a logit bias typed as text, as (id or piece, bias); a piece is looked up
    in the model's vocabulary later (`resolved_logit_bias`)."""
    token, sep, bias = text.rpartition(":")
    if not sep or not token:
        raise SettingError(f"{shown_text(text)} is not ID:BIAS; expected ID:BIAS or PIECE:BIAS, e.g. 5:-100")
    value = LOGIT_BIAS.parse(bias, "BIAS")
    digits = token.strip().isascii() and token.strip().isdigit()
    return (TOKEN_ID.parse(token, "ID") if digits else token), value


def logit_bias_items(text: str) -> tuple:
    """ID:BIAS[,ID:BIAS...] (--logit-bias, the window's field) as ((id or piece, bias), ...)."""
    if not text.strip():
        raise SettingError(f"{shown_text(text)} is empty; expected ID:BIAS[,ID:BIAS...]")
    return tuple(logit_bias_item(part) for part in text.split(","))


def resolved_logit_bias(items, vocab, name: str = "logit_bias") -> dict[int, float]:
    """Typed items with each piece turned into its id (the vocabulary's spelling, or
    text that encodes to one token) and each id checked against the vocabulary."""
    out = {}
    for token, bias in items:
        if isinstance(token, str):
            if vocab is None:
                raise SettingError(f"{name} {token}:{bias:g}: a piece needs a model's vocabulary "
                                   "(open a model), or write the token id")
            try:
                ids = [vocab.pieces.index(token)] if token in vocab.pieces else vocab.encode(token)
            except ExplorerError as exc:                    # text the tokenizer cannot read
                ids, why = [], str(exc).partition(": ")[2]
            else:
                why = f"it encodes to {len(ids)} tokens"
            if len(ids) != 1:
                raise SettingError(f"{name} {token}:{bias:g}: {token!r} is not one token of the vocabulary "
                                   f"({why}); expected a piece or an id")
            token = ids[0]
        if vocab is not None and not 0 <= token < len(vocab):
            raise SettingError(f"{name} {token}:{bias:g}: token {token} is outside the vocabulary: "
                               f"expected an id from 0 to {len(vocab) - 1:,}")
        if token in out:
            raise SettingError(f"{name}: token {token} is given twice: expected each token once")
        out[token] = bias
    return out


# ---------------------------------------------------------------------------- helpers

@dataclass(frozen=True)
class Context:
    """What the stages know besides the logits: the tokens so far and where the run is."""
    seen: np.ndarray      # (s,) prompt + output, for the repetition penalty
    output: np.ndarray    # (o,) the output only, for the presence and frequency penalties
    end_ids: np.ndarray   # (e,) the end tokens, for min_new_tokens
    step: int             # which draws


def keeping(note: str, config) -> str:
    """A truncation stage's note, with min_keep when it is more than the one every stage keeps."""
    return note + (f", keep≥{config.min_keep}" if config.min_keep > 1 else "")



def _positions(stage, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # (s,) ascending distinct
    """(positions in the stage's candidates, which of `ids` they are) for the ids still candidates."""
    at = np.minimum(np.searchsorted(stage.ids, ids), stage.ids.size - 1)
    hit = stage.ids[at] == ids
    return at[hit], np.flatnonzero(hit)


def at_least(stage, keep: np.ndarray, min_keep: int) -> np.ndarray:  # (n,) bool -> (n,) bool
    """`keep`, widened to the `min_keep` most likely candidates when it keeps fewer
    (Hugging Face's min_tokens_to_keep; lower id first on ties)."""
    n = min(min_keep, stage.ids.size)
    if np.count_nonzero(keep) >= n:
        return keep
    best, _ = _positions(stage, np.sort(stage.top(n)))
    keep = keep.copy()
    keep[best] = True
    return keep


# ---------------------------------------------------------------------------- rules

def logit_bias(stage, bias):
    """OpenAI's logit_bias: add each id's bias to its logit (ids already removed stay removed)."""
    if not bias:
        return None
    ids = np.array([t for t, _ in bias], dtype=np.int64)                   # (b,) ascending
    amounts = np.array([b for _, b in bias], dtype=np.float64)             # (b,)
    at, which = _positions(stage, ids)
    values = stage.values.copy()
    values[at] += amounts[which]
    return values, None


def _counts(stage, output_ids: np.ndarray):  # -> positions (c,), counts (c,)
    """How often each candidate occurs in the output (only those that occur)."""
    seen, counts = np.unique(output_ids, return_counts=True)               # (s,), (s,)
    at, which = _positions(stage, seen)
    return at, counts[which]


def frequency_penalty(stage, output_ids: np.ndarray, alpha: float):
    """OpenAI: logit[j] -= alpha * c[j], c[j] = how often j occurs in the output so far."""
    if alpha == 0 or not output_ids.size:
        return None
    at, counts = _counts(stage, output_ids)
    values = stage.values.copy()
    values[at] -= alpha * counts
    return values, None


def presence_penalty(stage, output_ids: np.ndarray, alpha: float):
    """OpenAI: logit[j] -= alpha once if j occurs in the output so far (c[j] > 0)."""
    if alpha == 0 or not output_ids.size:
        return None
    at, _ = _counts(stage, output_ids)
    values = stage.values.copy()
    values[at] -= alpha
    return values, None


def min_new_tokens(stage, n_out: int, minimum: int, end_ids: np.ndarray):
    """Hugging Face's MinNewTokensLengthLogitsProcessor: the end tokens are removed while
    fewer than `minimum` tokens are out. Off when minimum is 0 or no end token is known;
    when only end tokens are left they stay (a stage never empties the candidates)."""
    if minimum <= 0 or not end_ids.size:
        return None
    if n_out >= minimum:
        return None, None
    keep = np.ones(stage.ids.size, dtype=bool)
    keep[_positions(stage, end_ids)[0]] = False                            # a search per end id, not a scan
    return None, keep if keep.any() else None


def typical_p(stage, mass: float, min_keep: int):
    """Locally typical sampling (Meister et al.), as Hugging Face's TypicalLogitsWarper:
    rank the candidates by |-log p - H| (H the entropy), closest first; keep the smallest
    prefix whose probability reaches `mass` (within 1e-9), ties with its last score, and the
    min_keep most typical. Off when mass >= 1."""
    if mass >= 1:
        return None
    probs = stage.candidate_probs                                          # (n,)
    with np.errstate(divide="ignore"):
        surprise = -np.log(probs)                                          # (n,) inf where p underflowed
    entropy = float(np.dot(probs[probs > 0], surprise[probs > 0]))
    shifted = np.abs(surprise - entropy)                                   # (n,)
    order = np.argsort(shifted, kind="stable")                             # (n,) most typical first
    reached = np.cumsum(probs[order])                                      # (n,)
    last = min(int(np.searchsorted(reached, mass - TOP_P_TOLERANCE)), order.size - 1)
    keep = shifted <= shifted[order[last]]                                 # ties at the boundary stay
    keep[order[:min_keep]] = True                                          # the most typical min_keep, ties or not
    return None, keep


def top_n_sigma(stage, n: float, min_keep: int):
    """llama.cpp's top-n-sigma (Tang et al.): keep logits >= max - n * std, the standard
    deviation over the candidates (the finite logits); at least min_keep. Off when n <= 0."""
    if n <= 0:
        return None
    values = stage.values                                                  # (n,)
    if values.size <= 1:
        return None, None
    top = values.max()
    if not math.isfinite(top):                                             # +inf after a tiny T: the limit
        return None, at_least(stage, values == top, min_keep)
    mean = float(values.mean())
    # np.std without its (n,) temporaries, and einsum rather than a BLAS dot (whose threads wait on a busy machine)
    spread = math.sqrt(max(0.0, float(np.einsum("i,i->", values, values)) / values.size - mean * mean))
    return None, at_least(stage, values >= top - n * spread, min_keep)


def xtc(stage, probability: float, threshold: float, min_keep: int, draw: float):
    """llama.cpp's XTC (exclude top choices): when the draw < probability, remove every
    candidate with p >= threshold except the least likely of them (when at least two are
    above it, and the rest leaves at least min_keep). Off when probability is 0 or the
    threshold above 0.5; a step whose draw misses changes nothing."""
    if probability <= 0 or threshold > 0.5:
        return None
    if draw >= probability or stage.ids.size < 2:
        return None, None
    probs = stage.candidate_probs                                          # (n,)
    above = np.flatnonzero(probs >= threshold)                             # (a,)
    if above.size < 2:
        return None, None
    # the least likely of them: lowest probability, the higher id on ties (it comes last on the ruler)
    low = probs[above].min()
    spared = above[probs[above] == low][-1]
    if stage.ids.size - (above.size - 1) < min_keep:
        return None, None
    keep = np.ones(probs.size, dtype=bool)
    keep[above] = False
    keep[spared] = True
    return None, keep


# ---------------------------------------------------------------------------- the stage by name

def change(name: str, stage, config, at: Context, draw: float | None):
    """-> (the change the API stage `name` makes to `stage`, its note); draw: XTC's (sampling.xtc_draw)."""
    c, keep = config, config.min_keep
    if name == "logit_bias":
        return logit_bias(stage, c.logit_bias), ", ".join(f"{t}:{b:+g}" for t, b in c.logit_bias)
    if name == "frequency_penalty":
        return (frequency_penalty(stage, at.output, c.frequency_penalty),
                f"−{c.frequency_penalty:g}×count")
    if name == "presence_penalty":
        return presence_penalty(stage, at.output, c.presence_penalty), f"−{c.presence_penalty:g} once"
    if name == "min_new_tokens":
        note = f"{at.output.size}/{c.min_new_tokens} out" + ("" if at.end_ids.size else ", no end token known")
        return min_new_tokens(stage, at.output.size, c.min_new_tokens, at.end_ids), note
    if name == "top_n_sigma":
        return top_n_sigma(stage, c.top_n_sigma, keep), keeping(f"n={c.top_n_sigma:g}", c)
    if name == "typical_p":
        return typical_p(stage, c.typical_p, keep), keeping(f"p={c.typical_p:g}", c)
    fired = "<" if draw < c.xtc_probability else "≥"
    return (xtc(stage, c.xtc_probability, c.xtc_threshold, keep, draw),
            keeping(f"p≥{c.xtc_threshold:g}, draw {draw:.2f}{fired}{c.xtc_probability:g}", c))
