"""`trace --lens`: every step's raw logit lens (what each layer's residual stream would
choose through the final norm and the output head), as JSON fields or one line per layer."""

from __future__ import annotations

from ..core.decode.generate import Run
from ..core.errors import SettingError
from ..core.models.lens import has_lens, logit_lens, lens_dict
from ..i18n import add_messages, tr
from .texttable import format_table

SHOWN = 5   # candidates a plain line shows (the JSON carries all 20)

add_messages({
    "lens.heading": {"en": "{phase}: raw logit lens at position {position} (final norm and output head on each "
                           "layer's residual stream; no trained translators) - {commit}",
                     "zh": "{phase}：位置{position}的原始logit lens（把每层残差流直接接上最终归一化和输出头；"
                           "没有训练过的转换器）——{commit}"},
    "lens.commit": {"en": "{piece} is top-1 from layer {layer} on", "zh": "从第{layer}层起{piece}一直排第一"},
    "lens.no_commit": {"en": "{piece} is not top-1 at the last layer (sampled or forced)",
                       "zh": "{piece}在最后一层不是第一（抽样或强制选出）"},
    "lens.col.layer": {"en": "layer", "zh": "层"},
    "lens.col.selected": {"en": "{piece}: rank, prob", "zh": "{piece}：名次，概率"},
    "lens.col.top": {"en": "top {n}", "zh": "前{n}名"},
})


def add_lens_flag(parser) -> None:
    parser.add_argument("--lens", action="store_true",
                        help="add every step's raw logit lens: the top 20 candidates after each layer "
                             "and the commitment layer (--json: \"lens\" and \"commit_layer\" per step)")


def check_lens_models(session, lesson: str | None) -> None:
    """SettingError (exit 2) before any lens is drawn when a run's model has no layers to
    show, naming the lesson that chose that model."""
    for (run, _), scenario in zip(session.scenario_results(), session.scenarios):
        model = scenario.model
        if not has_lens(model, run.steps[0].trace):
            said = f"--lens with --lesson {lesson}: the lesson's model" if lesson else "--lens: model"
            raise SettingError(f"{said} {model.name!r} has no layers to show in a logit lens (its next-token "
                               "scores come from a table, not from a residual stream through layers)")


def run_lenses(run: Run, model) -> list:
    """The lens of every step of `run` (SettingError when `model` has no layers to show)."""
    if not has_lens(model, run.steps[0].trace):
        raise SettingError(f"--lens: model {model.name!r} has no layers to show in a logit lens (its "
                           f"next-token scores come from a table, not from a residual stream through layers)")
    return [logit_lens(model, step) for step in run.steps]


def add_lens_json(data: dict, run: Run, model) -> dict:
    """`run_to_dict`'s `data` with "lens" and "commit_layer" in every step."""
    for step, lens in zip(data["steps"], run_lenses(run, model)):
        step |= lens_dict(lens)
    return data


def format_lenses(run: Run, model, lang: str = "en") -> str:
    """Per step a heading (position, commitment) and one line per layer: the selected
    token's rank and probability, then the best candidates with theirs."""
    vocab = model.vocab
    blocks = []
    for step, lens in zip(run.steps, run_lenses(run, model)):
        piece = vocab.display_piece(lens.selected_id)
        commit = (tr("lens.no_commit", lang, piece=piece) if lens.commit_layer is None
                  else tr("lens.commit", lang, piece=piece, layer=lens.commit_layer))
        phase = tr("phase.prefill", lang) if step.phase == "prefill" else tr("phase.decode", lang, n=step.index)
        rows = [[layer, f"{lens.selected_ranks[layer]}, {lens.selected_probs[layer]:.4f}",
                 "  ".join(f"{vocab.display_piece(int(i))} {p:.4f}"
                           for i, p in zip(lens.ids[layer][:SHOWN], lens.probs[layer][:SHOWN]))]
                for layer in range(lens.n_layers)]
        headers = [tr("lens.col.layer", lang), tr("lens.col.selected", lang, piece=piece),
                   tr("lens.col.top", lang, n=min(SHOWN, lens.ids.shape[1]))]
        blocks.append(tr("lens.heading", lang, phase=phase, position=lens.position, commit=commit) + "\n"
                      + format_table(headers, rows, align_right=(0,)))
    return "\n\n".join(blocks)
