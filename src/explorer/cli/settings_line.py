"""The settings a run's choices were made with, in one line of the terminal output: a flag
that changed them is seen to have acted."""

from __future__ import annotations

from ..core.decode.orders import ARGMAX_KEEPING
from ..core.decode.sampling import SamplingConfig
from ..i18n import add_messages, tr

add_messages({
    "trace.settings": {"en": "settings: {items}", "zh": "设置：{items}"},
    "trace.stops": {"en": "stop at {texts}", "zh": "遇到{texts}停止"},
})


def settings_text(config: SamplingConfig, lang: str = "en") -> str:
    """The settings that act on the run's choices, as the flags spell them: the mode; the
    active stages (those that keep the highest logit only in sample mode), the seed of the
    draws; the order when it matters (two active stages); the length and the stops."""
    active = config.active_stages
    draws = config.mode == "sample" and config.temperature > 0
    items = [config.mode] + [_setting(config, name) for name in active
                             if name not in ARGMAX_KEEPING or config.mode == "sample"]
    if config.min_keep > 1:
        items.append(f"min-keep {config.min_keep}")
    if draws:
        items.append(f"seed {config.seed}")
    if len(active) > 1 and config.order != SamplingConfig().order:
        items.append(f"order {','.join(config.order)}")
    items.append(f"max-new-tokens {config.max_new_tokens}")
    if config.stop_strings:
        items.append(tr("trace.stops", lang, texts=", ".join(map(repr, config.stop_strings))))
    return tr("trace.settings", lang, items=", ".join(items))


def _setting(config: SamplingConfig, stage: str) -> str:
    """A stage's settings as the flags spell them."""
    if stage == "xtc":
        return f"xtc-probability {config.xtc_probability:g}, xtc-threshold {config.xtc_threshold:g}"
    if stage == "logit_bias":
        return "logit-bias " + ",".join(f"{token}:{bias:g}" for token, bias in config.logit_bias)
    return f"{stage.replace('_', '-')} {getattr(config, stage):g}"
