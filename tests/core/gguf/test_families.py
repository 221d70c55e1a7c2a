"""Every model family against llama.cpp: the tiny models of tests/support/family_files.py,
run by the engine, give the numbers llama.cpp gave for the very same files
(tests/fixtures/families_llama_cpp.json, recorded by tools/record_family_reference.py)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

import numpy as np
import pytest

from explorer.core.gguf.architectures import FAMILIES as FAMILY_NAMES
from explorer.core.gguf.llama import load_llama, with_arithmetic
from explorer.core.gguf.reader import GGUFError
from explorer.core.models.decoder import DecoderModel
from explorer.core.models.layers import NO_SCALING
from family_files import FAMILIES, VARIANTS, write_family
from gguf_files import write_llama, llama_tensors
from paths import FIXTURES

FIXTURE = json.loads((FIXTURES / "families_llama_cpp.json").read_text("utf-8"))
PROMPT = FIXTURE["prompt"]
FLOAT_TOLERANCE = 1e-3      # the issue's bound for float weights (ours: a few 1e-7, Gemma 2's 2e-5)
QUANTISED_TOLERANCE = 0.05  # against llama.cpp's own quantised path, which rounds activations to 8 bits
CASES = sorted(FIXTURE["models"])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """"arch/variant" -> the tiny file, written here as the fixture's was."""
    folder = tmp_path_factory.mktemp("families")
    return {case: write_family(folder / f"{case.replace('/', '-')}.gguf", *case.split("/")) for case in CASES}


@pytest.fixture(scope="module")
def models(files):
    return {case: load_llama(path) for case, path in files.items()}


def probabilities(logits) -> np.ndarray:  # [V] float32 -> [V] float64
    z = np.asarray(logits, np.float64)
    z = np.exp(z - z.max())
    return z / z.sum()


def stepwise(model: DecoderModel, greedy) -> list[np.ndarray]:
    """The next-token probabilities after the prompt (one Prefill) and after each of
    `greedy` (Decode steps on the cache), as llama.cpp was run."""
    trace, cache = model.prefill(PROMPT)
    out = [probabilities(trace.last_logits)]
    for token in greedy:
        trace, cache = model.decode(token, cache)
        out.append(probabilities(trace.last_logits))
    return out


def worst(ours: list[np.ndarray], run: dict) -> float:
    """The largest difference between our probabilities and llama.cpp's, over its five most
    probable tokens at every step."""
    return max(float(np.abs(p[step["ids"]] - step["p"]).max()) for p, step in zip(ours, run["steps"]))


def test_the_files_are_the_ones_llama_cpp_read(files):
    assert set(FIXTURE["models"]) == {f"{a}/{v}" for a in FAMILIES for v in VARIANTS}
    for case, path in files.items():
        assert hashlib.sha256(path.read_bytes()).hexdigest() == FIXTURE["models"][case]["sha256"], case


def test_every_family_of_the_engine_has_a_tiny_model():
    assert set(FAMILY_NAMES) - {"gemma3"} == set(FAMILIES)   # Gemma 3: the real model's own tests


@pytest.mark.parametrize("case", [c for c in CASES if c.endswith("/f32")])
def test_float_weights_give_llama_cpps_greedy_picks_and_probabilities(models, case):
    run = FIXTURE["models"][case]
    ours = stepwise(models[case], run["greedy"])
    assert [int(np.argmax(p)) for p in ours[:-1]] == run["greedy"]
    assert worst(ours, run) < FLOAT_TOLERANCE


@pytest.mark.parametrize("case", [c for c in CASES if not c.endswith("/f32")])
def test_quantised_weights_in_float_are_llama_cpp_on_the_same_weights_dequantised(models, case):
    run = FIXTURE["models"][case]["dequantised"]
    ours = stepwise(models[case], run["greedy"])
    assert [int(np.argmax(p)) for p in ours[:-1]] == run["greedy"]
    assert worst(ours, run) < FLOAT_TOLERANCE


@pytest.mark.parametrize("arithmetic", ["float", "llama.cpp"])
@pytest.mark.parametrize("case", [c for c in CASES if not c.endswith("/f32")])
def test_quantised_weights_stay_near_llama_cpps_own_quantised_path(models, case, arithmetic):
    run = FIXTURE["models"][case]
    ours = stepwise(with_arithmetic(models[case], arithmetic), run["greedy"])
    assert worst(ours, run) < QUANTISED_TOLERANCE


@pytest.mark.parametrize("case", [c for c in CASES if c.endswith("/f32")])
def test_a_full_recompute_is_llama_cpps_and_equals_the_cached_steps(models, case):
    model, run = models[case], FIXTURE["models"][case]
    ids = PROMPT + run["greedy"]
    full = model.reference_logits(ids, len(run["greedy"]) + 1)          # [steps, V]
    recompute = probabilities(full[-1])
    assert np.abs(recompute[run["recompute"]["ids"]] - run["recompute"]["p"]).max() < FLOAT_TOLERANCE
    cached = stepwise(model, run["greedy"])
    for step, row in zip(cached, full):
        np.testing.assert_allclose(step, probabilities(row), atol=2e-6)


# each family's own feature switched off: the logits must move far beyond the tolerance, or
# the comparison with llama.cpp would prove nothing about that feature
SWITCHED_OFF = {
    "llama": [("rotary scaling", lambda m: _config(m, rope_scaling=NO_SCALING))],
    "qwen2": [("q/k/v biases", lambda m: _layers(m, bq=None, bk=None, bv=None))],
    "qwen3": [("head norms", lambda m: _layers(m, q_norm=None, k_norm=None))],
    "phi3": [("rotary factors", lambda m: _config(m, rope_scaling=replace(m.config.rope_scaling, factors=()))),
             ("rotary attn_factor", lambda m: _config(m, rope_scaling=replace(m.config.rope_scaling, mscale=1.0)))],
    "gemma2": [("attention soft cap", lambda m: _config(m, attn_softcap=0.0)),
               ("final soft cap", lambda m: _config(m, final_softcap=0.0)),
               ("sliding window", lambda m: _config(m, windows=())),
               ("post norms", lambda m: _layers(m, post_norm1=None, post_norm2=None))],
}


def _config(model, **changes):
    return replace(model, config=replace(model.config, **changes))


def _layers(model, **changes):
    return replace(model, params=replace(model.params, layers=tuple(replace(lp, **changes) for lp in model.params.layers)))


@pytest.mark.parametrize("arch,feature,switch_off", [(a, f, s) for a, cases in SWITCHED_OFF.items() for f, s in cases],
                         ids=lambda x: x if isinstance(x, str) else "")
def test_each_family_feature_moves_the_numbers(models, arch, feature, switch_off):
    case = f"{arch}/f32"
    run = FIXTURE["models"][case]
    assert worst(stepwise(switch_off(models[case]), run["greedy"]), run) > 20 * FLOAT_TOLERANCE, feature


def test_the_family_settings_read_from_the_files(models):
    llama, phi3, gemma2 = (models[f"{a}/f32"].config for a in ("llama", "phi3", "gemma2"))
    assert llama.rope_pairs == "adjacent" and llama.rope_scaling.freq_scale == 0.5
    assert len(llama.rope_scaling.factors) == llama.head_dim // 2
    assert phi3.rope_pairs == "halves" and phi3.rope_scaling.mscale == 1.25
    assert gemma2.windows == (8, 0) and (gemma2.attn_softcap, gemma2.final_softcap) == (2.0, 6.0)
    assert gemma2.queries_scaled_first and gemma2.ffn == "geglu"
    phi3_layer = models["phi3/q8_0"].params.layers[0]
    assert phi3_layer.wqkv is not None and phi3_layer.w13 is not None   # its fused tensors stay one product


# ---------------------------------------------------------------- refused, by name


def _tiny_llama(tmp_path, name, **kwargs):
    return write_llama(tmp_path / name, llama_tensors(np.random.default_rng(3)), **kwargs)


def test_yarn_rope_scaling_is_refused_by_name(tmp_path):
    import gguf
    path = _tiny_llama(tmp_path, "yarn.gguf", extra_kv={"llama.rope.scaling.type": ("yarn", gguf.GGUFValueType.STRING)})
    with pytest.raises(GGUFError, match=r"llama\.rope\.scaling\.type = 'yarn' is not supported"):
        load_llama(path)


def test_a_key_the_engine_does_not_implement_is_refused_by_name(tmp_path):
    import gguf
    path = _tiny_llama(tmp_path, "experts.gguf", extra_kv={"llama.expert_count": (8, gguf.GGUFValueType.UINT32)})
    with pytest.raises(GGUFError, match=r"llama\.expert_count = 8 changes how the model computes"):
        load_llama(path)


def test_a_tensor_the_engine_does_not_read_is_refused_by_name(tmp_path):
    tensors = llama_tensors(np.random.default_rng(3))
    tensors["blk.0.attn_output.bias"] = np.zeros(tensors["blk.0.attn_output.weight"].shape[0], np.float32)
    path = write_llama(tmp_path / "bias.gguf", tensors)
    with pytest.raises(GGUFError, match=r"tensor blk\.0\.attn_output\.bias is not part of a Llama"):
        load_llama(path)


def test_longrope_without_its_factors_is_refused(tmp_path):
    import gguf
    path = _tiny_llama(tmp_path, "longrope.gguf",
                       extra_kv={"llama.rope.scaling.type": ("longrope", gguf.GGUFValueType.STRING)})
    with pytest.raises(GGUFError, match="longrope.*no rope_factors_short tensor"):
        load_llama(path)


def test_float32_weights_are_read_in_place_from_the_mapped_file(models, files):
    embedding = models["qwen3/f32"].params.embed                     # [V, d] F32 in the file
    assert not embedding.flags.owndata and not embedding.flags.writeable   # a view of the map, not a copy
    again = load_llama(files["qwen3/f32"])                            # its pages let go after the load: still readable
    np.testing.assert_array_equal(again.params.embed[:3], embedding[:3])
