"""The course's teaching model (7 tokens, d_model 4, one layer, one head, tanh FFN) and how
its output head is fitted so that greedy decoding of "我爱" gives 学习, ！, EOS."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from .decoder import DecoderConfig, DecoderModel, random_params
from ..errors import ExplorerError
from .layers import softmax
from .params_file import load_params, save_params
from ..tokens.vocab import Vocabulary

PIECES = ("<pad>", "我", "爱", "学习", "你", "！", "<eos>")
SPECIALS = {"pad": 0, "eos": 6}
CONFIG = DecoderConfig()   # the defaults are the teaching model


@dataclass(frozen=True)
class FitTargets:
    seed: int = 20261129                               # the body's random draw
    prefixes: tuple = ((1, 2), (1, 2, 3), (1, 2, 3, 5))  # 我爱 / 我爱学习 / 我爱学习！
    # Next-token probabilities each prefix should give, in vocabulary order
    # (<pad>, 我, 爱, 学习, 你, ！, <eos>): a clear winner, a runner-up that sampling at
    # temperature 1 often picks, and a tail that top-k / top-p sliders cut step by step.
    probs: tuple = (
        (0.01, 0.05, 0.03, 0.47, 0.26, 0.11, 0.07),
        (0.01, 0.04, 0.06, 0.09, 0.17, 0.45, 0.18),
        (0.01, 0.16, 0.05, 0.07, 0.06, 0.10, 0.55),
    )
    head_decimals: int = 4                             # output head rounding
    body_decimals: int = 2                             # random body rounding


def teaching_vocabulary() -> Vocabulary:
    return Vocabulary(PIECES, dict(SPECIALS))


def fit(targets: FitTargets = FitTargets()) -> DecoderModel:
    """Build the teaching model deterministically from `targets`."""
    rng = np.random.default_rng(targets.seed)
    body = random_params(replace(CONFIG, output_bias=False), rng, scale=1.0)
    body = _rounded(body, targets.body_decimals)
    model = DecoderModel(CONFIG, replace(body, w_out=np.zeros((4, 7)), b_out=np.zeros(7)),
                         teaching_vocabulary(), name="teaching")
    # Last hidden state of each prefix does not depend on the head: [3, d]
    hidden = np.stack([model.full_forward(p).final_hidden[-1] for p in targets.prefixes])
    logits = np.log(np.asarray(targets.probs, np.float64))       # [3, V]
    logits -= logits.mean(axis=1, keepdims=True)
    design = np.hstack([hidden, np.ones((len(hidden), 1))])      # [3, d+1]
    # Minimum-norm exact solution of design @ head = logits (3 equations, d+1 unknowns)
    head = design.T @ np.linalg.solve(design @ design.T, logits)  # [d+1, V]
    head = np.round(head, targets.head_decimals) + 0.0             # + 0.0 turns -0.0 into 0.0
    params = replace(model.params, w_out=head[:-1], b_out=head[-1])
    fitted = replace(model, params=params)
    check_teachable(fitted, targets)
    return fitted


def _rounded(params, decimals):
    """Every array in the parameter tree rounded (and -0.0 made 0.0)."""
    def rnd(a):
        return None if a is None else np.round(a, decimals) + 0.0
    layers = tuple(replace(lp, **{k: rnd(getattr(lp, k)) for k in
                                  ("wq", "wk", "wv", "wo", "w1", "w2", "w3", "b1", "b2")})
                   for lp in params.layers)
    return replace(params, embed=rnd(params.embed), layers=layers)


def check_teachable(model: DecoderModel, targets: FitTargets) -> None:
    """The fitted model must select the course's tokens and give distributions worth
    teaching with: no ties, a runner-up above 15 %, within 0.01 of each target."""
    for prefix, want, expected_next in zip(targets.prefixes, targets.probs, (3, 5, 6)):
        probs = softmax(model.full_forward(prefix).last_logits)
        order = np.argsort(-probs)
        problems = []
        if order[0] != expected_next:
            problems.append(f"selects {order[0]} instead of {expected_next}")
        if np.min(np.diff(np.sort(probs))) < 1e-3:
            problems.append("two candidates tie")
        if probs[order[1]] < 0.15:
            problems.append(f"runner-up has only {probs[order[1]]:.3f}")
        if np.max(np.abs(probs - want)) > 0.01:
            problems.append(f"probabilities {np.round(probs, 3).tolist()} are far from the targets")
        if problems:
            raise ExplorerError(f"fit failed for prefix {list(prefix)}: " + "; ".join(problems))


def fit_document(targets: FitTargets) -> dict:
    """How the file was made, written into it so anyone can rerun the fit."""
    return {"command": "explorer fit", "seed": targets.seed,
            "prefixes": [list(p) for p in targets.prefixes],
            "target_probs": [list(p) for p in targets.probs],
            "body_decimals": targets.body_decimals, "head_decimals": targets.head_decimals}


DESCRIPTION = ("Teaching model of the course: 7 pieces, d_model 4, one layer, one causal head, "
               "residual connections, tanh feed-forward, no norm, no positions. Only the output "
               "head is fitted, on three prefixes; it is not a language model of Chinese.")


def write_teaching_params(path) -> None:
    targets = FitTargets()
    save_params(path, fit(targets), fit_document(targets), DESCRIPTION)


def default_params_path() -> Path:
    from ...resources import params_dir
    return params_dir() / "teaching.json"


def load_teaching_model(path=None) -> DecoderModel:
    return load_params(path or default_params_path())
