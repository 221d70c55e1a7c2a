"""The settings a run's choices were made with, in one line of the terminal output: a flag
that changed them is seen to have acted."""

from __future__ import annotations

from ..core.decode.sampling import SamplingConfig
from ..i18n import add_messages, tr

add_messages({
    "trace.settings": {"en": "settings: {items}", "zh": "设置：{items}"},
    "trace.stops": {"en": "stop at {texts}", "zh": "遇到{texts}停止"},
})


def settings_text(config: SamplingConfig, lang: str = "en") -> str:
    """The settings that act on the run's choices, as the flags spell them: the mode; in
    sample mode the temperature, the seed and the active stages; the repetition penalty
    when active; the order when it matters (two active stages); the length and the stops."""
    active = [name for name, off in (("repetition_penalty", 1.0), ("temperature", 1.0), ("top_k", 0), ("top_p", 1.0),
                                     ("min_p", 0.0)) if getattr(config, name) != off]
    draws = config.mode == "sample" and config.temperature > 0
    items = [config.mode] + [f"{name.replace('_', '-')} {getattr(config, name):g}" for name in
                             ("temperature", "top_k", "top_p", "min_p") if name in active and config.mode == "sample"]
    if "repetition_penalty" in active:
        items.append(f"repetition-penalty {config.repetition_penalty:g}")
    if draws:
        items.append(f"seed {config.seed}")
    if len(active) > 1 and config.order != SamplingConfig().order:
        items.append(f"order {','.join(config.order)}")
    items.append(f"max-new-tokens {config.max_new_tokens}")
    if config.stop_strings:
        items.append(tr("trace.stops", lang, texts=", ".join(map(repr, config.stop_strings))))
    return tr("trace.settings", lang, items=", ".join(items))
