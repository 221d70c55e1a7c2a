"""The sampling stages by name and the orders they run in: the course's five, always listed,
and the stages of real APIs, recorded only when on; where Hugging Face and llama.cpp run each."""

from __future__ import annotations

from ..errors import SettingError

# the stages every chart lists, on or off (the course's)
STAGE_NAMES = ("repetition_penalty", "temperature", "top_k", "top_p", "min_p")
# the stages of real APIs: recorded only when on, so a run without them is what it was before them
API_STAGE_NAMES = ("logit_bias", "min_new_tokens", "frequency_penalty", "presence_penalty",
                   "top_n_sigma", "typical_p", "xtc")
ALL_STAGE_NAMES = STAGE_NAMES + API_STAGE_NAMES
# the stages that never change a greedy choice: they keep the highest logit highest (a penalty,
# a bias, typical-p, XTC and min_new_tokens can remove or move it)
ARGMAX_KEEPING = ("temperature", "top_k", "top_p", "min_p", "top_n_sigma")
# where each library runs each stage. Hugging Face has no top-n-sigma or XTC: they sit where
# llama.cpp puts them relative to the truncation stages (top-n-sigma before top-k, XTC after the last).
ORDER_PRESETS = {
    # HF: sequence bias, repetition penalty (vLLM: then frequency, presence), min_new_tokens,
    # then the warpers temperature, top-k, top-p, min-p, typical
    "hf": ("logit_bias", "repetition_penalty", "frequency_penalty", "presence_penalty", "min_new_tokens",
           "temperature", "top_n_sigma", "top_k", "top_p", "min_p", "typical_p", "xtc"),
    # common_params_sampling's default chain after the logit bias: penalties, (DRY,) top-n-sigma,
    # top-k, typical, top-p, min-p, XTC, temperature; llama.cpp has no min_new_tokens: a ban, next to the bias
    "llama.cpp": ("logit_bias", "min_new_tokens", "repetition_penalty", "frequency_penalty", "presence_penalty",
                  "top_n_sigma", "top_k", "typical_p", "top_p", "min_p", "xtc", "temperature"),
}

# an order written before the API stages existed, one preset's course stages, reads as that preset
UPGRADED = {tuple(s for s in chain if s in STAGE_NAMES): chain for chain in ORDER_PRESETS.values()}


def parse_order(text: str) -> tuple[str, ...]:
    """A preset name ("hf", "llama.cpp") or a comma list of stage names, each at most once.

    Hyphens are read as underscores, so "top-k,temperature" works too."""
    text = text.strip()
    if text in ORDER_PRESETS:
        return ORDER_PRESETS[text]
    if not text:
        raise SettingError(f"order = {text!r}: expected a preset ({', '.join(ORDER_PRESETS)}) "
                           f"or a comma list of {', '.join(ALL_STAGE_NAMES)}")
    return checked_order(tuple(name.strip().replace("-", "_") for name in text.split(",")))


def checked_order(names: tuple) -> tuple[str, ...]:
    """The stage names unchanged, or a SettingError naming the first unknown or repeated one."""
    for i, name in enumerate(names):
        if name not in ALL_STAGE_NAMES:
            raise SettingError(f"order: unknown stage {name!r}: expected one of {', '.join(ALL_STAGE_NAMES)} "
                               f"or a preset ({', '.join(ORDER_PRESETS)})")
        if name in names[:i]:
            raise SettingError(f"order: stage {name!r} appears twice: expected each stage at most once")
    return names
