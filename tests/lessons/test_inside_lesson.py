"""The shipped lesson on the three views inside the model and across runs (SmolLM2): each
frame's numbers, checked against runs and sums computed here (the lens's commitment from the
layers' own logits in float64, the total variation and the split from two plain `generate`
runs), in both languages; its slides show both runs of an A/B frame."""

import numpy as np
import pytest

from explorer.core.decode.generate import generate
from explorer.core.decode.sampling import SamplingConfig
from explorer.lessons import load_lesson
from explorer.session.narration import frame_explanation, frame_title

PARIS = 7042                                   # ␣Paris
PROMPT = (504, 3575, 282, 4649, 314)           # The ␣capital ␣of ␣France ␣is


@pytest.fixture(scope="module")
def session(smollm2):
    return load_lesson("inside-and-across").build_session()


def sample(model, temperature: float, seed: int):
    return generate(model, PROMPT, SamplingConfig(mode="sample", temperature=temperature, seed=seed,
                                                  max_new_tokens=10), check_recompute=False)


def texts(session, index: int, lang: str = "en") -> tuple[str, dict]:
    run, model = session.run_at(index)
    frame = session.frames[index]
    return frame_title(frame, run, model.vocab, lang), frame_explanation(frame, run, model.vocab, lang)


@pytest.mark.parametrize("index, token", [(0, PARIS), (1, 30)])          # ␣Paris, then "."
def test_the_lens_frames_name_the_layer_from_which_the_token_stays_on_top(session, smollm2, index, token):
    run, model = session.run_at(index)
    step = run.steps[session.frames[index].step]
    assert run.prompt_ids == PROMPT and step.selected_id == token
    z = np.asarray(model.layer_logits(step.trace), np.float64)               # [L, V] the layers' own logits
    top1 = z.argmax(axis=1) == token                                           # [L]
    commit = next(layer for layer in range(len(z)) if top1[layer:].all())
    rank_before = 1 + int((z[commit - 1] > z[commit - 1, token]).sum())
    title, explain = texts(session, index)
    zh_title, _ = texts(session, index, "zh")
    if token == PARIS:
        assert title == f"Where ␣Paris settles: top-1 only from layer {commit} of {len(z)}"
        assert f"at layer {commit - 1} it was still ranked {rank_before} " in explain["what"]
        assert f"从第{commit}层起才排第一（共{len(z)}层）" in zh_title
    else:
        assert title == f"The full stop after it settles earlier: top-1 from layer {commit}"
        assert f"at layer {commit - 1} it was ranked {rank_before}." in explain["what"]


def test_one_seed_two_temperatures_are_apart_from_the_first_step(session, smollm2):
    cool, hot = sample(smollm2, 0.5, 1), sample(smollm2, 1.5, 1)
    tv0 = 0.5 * np.abs(cool.steps[0].distribution.probs - hot.steps[0].distribution.probs).sum()
    assert tv0 > 0.3                                                           # T changes the distribution itself
    title, explain = texts(session, 2)
    assert title == f"One seed, T = 0.5 beside T = 1.5: {tv0:.3f} apart at the first step"
    v = session.frames[2].versus.comparison
    assert v.a.output_ids == cool.output_ids and v.b.output_ids == hot.output_ids
    mean = [np.mean([s.distribution.probs[s.selected_id] for s in r.steps]) for r in (cool, hot)]
    assert mean[1] < mean[0]                                                   # the hot text is darker
    title, explain = texts(session, 3)
    assert title == f"The colours of the text: mean probability {mean[0]:.2f} at T = 0.5, {mean[1]:.2f} at T = 1.5"


def test_two_seeds_part_at_the_step_the_frame_names_with_equal_distributions_before(session, smollm2):
    a, b = sample(smollm2, 1.0, 1), sample(smollm2, 1.0, 11)
    split = next(i for i, (x, y) in enumerate(zip(a.steps, b.steps)) if x.selected_id != y.selected_id)
    assert split == session.frames[4].step == 2                               # the frame shows the split itself
    for i in range(split + 1):                                                 # same text so far: same distribution
        assert np.abs(a.steps[i].distribution.probs - b.steps[i].distribution.probs).sum() == 0
    title, explain = texts(session, 4)
    assert title == f"Two seeds, one temperature: they part at step {split}"
    vocab = smollm2.vocab
    assert (f"A chose {vocab.display_piece(a.steps[split].selected_id)} and B chose "
            f"{vocab.display_piece(b.steps[split].selected_id)}, yet the distance between their distributions is 0.000"
            in explain["what"])
    assert "第2步分开" in texts(session, 4, "zh")[0]
    title, _ = texts(session, 5)
    tv = [0.5 * np.abs(x.distribution.probs - y.distribution.probs).sum() for x, y in zip(a.steps, b.steps)]
    assert title.endswith(f"up to {max(tv):.3f} apart")


def test_the_a_b_slides_show_both_runs(session, qapp):
    from explorer.ui.slides.compose import SlideComposer
    from explorer.ui.slides.layout import SlideGeometry
    from explorer.ui.theme import THEMES
    s = session.copy()
    s.go(4)
    composer = SlideComposer(s, SlideGeometry(1920, 1080, True), THEMES["light"])
    assert composer.panel_ids()[0] == "versus"
    placed = {panel.panel_id: (panel, rect) for panel, rect, _scale in composer.lay_out()}
    panel, rect = placed["versus"]
    assert rect.width() > 1920 / 3 and "distribution" in placed           # beside the distribution, a real share
    panel.strip.grab()
    c = s.frame.versus.comparison
    assert panel.strip.drawn["split"] == ["▼ first divergence: step 2"]
    assert [t.id for t in panel.texts[1].flow.tokens] == list(c.b.prompt_ids + c.b.output_ids[:3])
