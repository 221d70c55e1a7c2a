"""The raw logit lens against an independent float64 computation: for every layer, the final
norm and the output head written out here from the model's weights, applied to that layer's
recorded residual stream; and the last layer's lens against the step's raw distribution, for
the teaching model, every tiny GGUF family (both arithmetics) and the real models."""

from __future__ import annotations

import json

import numpy as np
import pytest

from explorer.core.decode.generate import generate
from explorer.core.decode.sampling import SamplingConfig
from explorer.core.gguf.blocks import BlockMatrix
from explorer.core.gguf.llama import load_llama, with_arithmetic
from explorer.core.models.lens import Lens, LensError, lens_dict, logit_lens
from explorer.core.models.table_model import load_table_model
from explorer.core.models.teaching import load_teaching_model
from family_files import FAMILIES, write_family
from paths import FIXTURES

CHUNK = 16384   # vocabulary rows of the head unpacked at a time (Gemma's whole head in float64: 1.3 GB)


def head_rows(model, start: int, stop: int) -> np.ndarray:  # -> [stop-start, d] float64
    """Rows start..stop-1 of the output head as a [V, d] matrix (the embedding when tied)."""
    p = model.params
    if model.config.tied_output:
        m = p.embed
    else:
        m = p.w_out.T       # [V, d]: an array, or the BlockMatrix under a transposed view
    block = m.row_block(start, stop).dense() if isinstance(m, BlockMatrix) else m[start:stop]
    return np.asarray(block, np.float64)


def reference_probs(model, residual) -> np.ndarray:  # [d] -> [V] float64
    """Final norm, head, soft cap and softmax in float64, from the definitions."""
    c, p = model.config, model.params
    x = np.asarray(residual, np.float64)
    if p.norm_f is not None and c.norm != "none":
        gamma, beta = p.norm_f
        if c.norm == "rms":
            x = x / np.sqrt(np.mean(x * x) + c.norm_eps) * np.asarray(gamma, np.float64)
        else:
            x = (x - x.mean()) / np.sqrt(np.var(x) + c.norm_eps) * gamma + beta
    vocab = len(model.vocab)
    z = np.concatenate([head_rows(model, a, min(a + CHUNK, vocab)) @ x for a in range(0, vocab, CHUNK)])
    if p.b_out is not None:
        z = z + np.asarray(p.b_out, np.float64)
    if c.final_softcap:
        z = c.final_softcap * np.tanh(z / c.final_softcap)
    e = np.exp(z - z.max())
    return e / e.sum()


def check_lens(model, run, tolerance: float) -> list[Lens]:
    """Every step's lens: the last layer is the raw distribution (same ids, 1e-6), every
    layer is the float64 reference within `tolerance`."""
    lenses = []
    for step in run.steps:
        lens = logit_lens(model, step)
        assert lens.n_layers == len(step.trace.layers)
        raw = step.distribution.stages[0]
        k = lens.ids.shape[1]
        assert lens.ids[-1].tolist() == raw.top(k).tolist()
        np.testing.assert_allclose(lens.probs[-1], raw.probs[lens.ids[-1]], rtol=0, atol=1e-6)
        for layer, lt in enumerate(step.trace.layers):
            ref = reference_probs(model, lt.hidden[-1])                       # [V]
            np.testing.assert_allclose(lens.probs[layer], ref[lens.ids[layer]], rtol=0, atol=tolerance)
            assert lens.probs[layer][0] >= ref.max() - tolerance              # nothing better left out
            assert abs(lens.selected_probs[layer] - ref[step.selected_id]) <= tolerance
            assert lens.pieces[layer] == tuple(model.vocab.piece_text(int(i)) for i in lens.ids[layer])
        lenses.append(lens)
    return lenses


def hand_commit(lens: Lens) -> int | None:
    """The commitment layer from its definition, layer by layer from the end."""
    layer = None
    for l in reversed(range(lens.n_layers)):
        if lens.selected_ranks[l] != 1:
            break
        layer = l
    return layer


# ------------------------------------------------------------------ the teaching model

def test_the_teaching_models_one_layer_is_the_courses_h_times_wout():
    model = load_teaching_model()
    run = generate(model, [1, 2])
    lenses = check_lens(model, run, 1e-12)
    for step, lens in zip(run.steps, lenses):
        h = np.asarray(step.trace.layers[0].hidden[-1], np.float64)
        course = h @ model.params.w_out + model.params.b_out          # the course's h·Wout (+ b)
        np.testing.assert_allclose(lens.logits[0], course[lens.ids[0]], atol=1e-12)
        assert lens.ids.shape == (1, 7)                                 # 7 pieces: all of them
        assert lens.commit_layer == 0 and lens.selected_id == step.selected_id   # greedy: top-1 at its layer
    assert [lens.ids[0][0] for lens in lenses] == [3, 5, 6]            # 学习, ！, EOS


def test_a_token_sampled_or_forced_below_the_top_has_no_commitment_layer():
    model = load_teaching_model()
    run = generate(model, [1, 2], overrides={0: 4})                    # 你 instead of 学习
    lens = logit_lens(model, run.steps[0])
    assert lens.selected_id == 4 and lens.selected_ranks[0] == 2 and lens.commit_layer is None


def test_the_commitment_layer_follows_its_definition():
    def lens_with(ranks):
        n = len(ranks)
        return Lens(0, 0, 0, np.zeros((n, 1), int), np.zeros((n, 1)), np.zeros((n, 1)),
                    np.zeros(n), np.asarray(ranks))
    for ranks, want in [([1], 0), ([3], None), ([2, 1, 3, 1, 1], 3), ([1, 1, 1], 0), ([1, 1, 2], None),
                        ([4, 1, 1], 1)]:
        assert lens_with(ranks).commit_layer == want == hand_commit(lens_with(ranks))


def test_the_json_form_holds_every_layer_and_the_commitment():
    model = load_teaching_model()
    lens = logit_lens(model, generate(model, [1, 2]).steps[0])
    d = json.loads(json.dumps(lens_dict(lens)))
    assert [entry["layer"] for entry in d["lens"]] == [0]
    top = d["lens"][0]["top"]
    assert [t["id"] for t in top] == lens.ids[0].tolist() and top[0]["piece"] == "学习"
    assert abs(sum(t["prob"] for t in top) - 1) < 1e-12 and d["commit_layer"] == 0


def test_a_table_model_has_no_layers_to_show(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"format": "token-explorer/table-model", "version": 1, "name": "tiny",
                                "vocabulary": {"pieces": ["<eos>", "A"], "specials": {"eos": 0}},
                                "default": {"<eos>": 1.0}, "table": []}), "utf-8")
    model = load_table_model(path)
    with pytest.raises(LensError, match="'tiny' has no layers"):
        logit_lens(model, generate(model, [1]).steps[0])


# ------------------------------------------------------------------ every family, both arithmetics

PROMPT = json.loads((FIXTURES / "families_llama_cpp.json").read_text("utf-8"))["prompt"]
# (variant, arithmetic, tolerance): float weights in float32 arithmetic are float64 within a
# few float32 roundings (measured: 1.5e-7); llama.cpp's rounds the activations to 8 bits
# before the head (measured: 3.2e-3)
CASES = [("f32", "float", 1e-6), ("q4_1", "float", 1e-6), ("q4_1", "llama.cpp", 0.01)]


@pytest.mark.parametrize("variant,arithmetic,tolerance", CASES)
@pytest.mark.parametrize("arch", sorted(FAMILIES))
def test_every_family_reads_as_the_float64_reference(tmp_path, arch, variant, arithmetic, tolerance):
    model = with_arithmetic(load_llama(write_family(tmp_path / f"{arch}.gguf", arch, variant)), arithmetic)
    run = generate(model, PROMPT, SamplingConfig(max_new_tokens=3), check_recompute=False)
    lenses = check_lens(model, run, tolerance)
    assert all(lens.n_layers == model.config.n_layers for lens in lenses)
    assert all(lens.commit_layer == hand_commit(lens) for lens in lenses)


# ------------------------------------------------------------------ the real models

@pytest.mark.parametrize("arithmetic,tolerance", [("float", 1e-5), ("llama.cpp", 0.03)])
def test_smollm2_reads_as_the_float64_reference(smollm2, arithmetic, tolerance):
    model = with_arithmetic(smollm2, arithmetic)
    run = generate(model, model.vocab.encode("The capital of France is"), SamplingConfig(max_new_tokens=2),
                   check_recompute=False)
    lenses = check_lens(model, run, tolerance)
    assert lenses[0].n_layers == 30 and lenses[0].ids.shape == (30, 20)
    assert lenses[0].pieces[-1][0] == " Paris" and lenses[0].commit_layer == hand_commit(lenses[0])


def test_gemma3_reads_as_the_float64_reference(gemma3):
    run = generate(gemma3, gemma3.vocab.encode("The capital of France is"), SamplingConfig(max_new_tokens=1),
                   check_recompute=False)
    lenses = check_lens(gemma3, run, 1e-5)
    assert lenses[0].n_layers == 18 and lenses[0].commit_layer == hand_commit(lenses[0])
