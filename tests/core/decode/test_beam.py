"""Beam search: the course's numbers on the table model, and reference checks against
full recompute on a small random transformer."""

from collections import Counter

import numpy as np
import pytest

from explorer.cli.beam_tree import format_tree
from explorer.core.decode import beam as beam_module
from explorer.core.decode.beam import beam_search
from explorer.core.models.decoder import DecoderConfig, DecoderModel, random_params
from explorer.core.errors import SettingError
from explorer.core.models.table_model import load_table_model
from explorer.core.tokens.vocab import Vocabulary
from paths import RESOURCES

BEAM_FILE = RESOURCES / "tables" / "beam-example.json"
EOS, A, B, D, E, F, BOS = range(7)

# The course's example, as printed in the course (not computed by the code under test).
P_AE, P_AF, P_BD, P_BF = 0.306, 0.294, 0.396, 0.004


@pytest.fixture(scope="module")
def table():
    return load_table_model(BEAM_FILE)


def node_at(result, ids):
    """The tree node reached by the new tokens `ids`."""
    matches = [n for n in result.nodes if result.path(n.node_id) == list(ids)]
    assert len(matches) == 1, ids
    return matches[0]


def test_greedy_gives_ae(table):
    result = beam_search(table, [BOS], num_beams=2, max_new_tokens=2)
    assert result.greedy.ids == (A, E)
    assert result.greedy.prob == pytest.approx(P_AE)


def test_width_two_finds_bd_and_keeps_the_whole_tree(table):
    result = beam_search(table, [BOS], num_beams=2, max_new_tokens=2)
    assert [h.ids for h in result.beams] == [(B, D), (A, E)]
    assert result.beams[0].prob == pytest.approx(P_BD)
    assert result.beams[1].prob == pytest.approx(P_AE)
    assert result.beams[0].score == pytest.approx(np.log(P_BD))
    assert result.beams[0].finish_reason == "length"

    expected = {(): ("root", 1.0), (A,): ("kept", 0.6), (B,): ("kept", 0.4),
                (A, E): ("kept", P_AE), (A, F): ("pruned", P_AF),
                (B, D): ("kept", P_BD), (B, F): ("pruned", P_BF)}
    assert len(result.nodes) == len(expected)
    for ids, (status, prob) in expected.items():
        node = node_at(result, ids)
        assert node.status == status, ids
        assert node.prob == pytest.approx(prob), ids
        assert node.depth == len(ids)
    assert node_at(result, (A, F)).pruned_at_depth == 2
    assert node_at(result, (B, D)).pruned_at_depth is None
    assert node_at(result, (A, F)).logprob == pytest.approx(np.log(0.49))
    assert result.greedy.node_id == node_at(result, (A, E)).node_id


def test_width_one_is_greedy(table):
    result = beam_search(table, [BOS], num_beams=1, max_new_tokens=2)
    assert len(result.beams) == 1
    assert result.beams[0] == result.greedy
    assert result.greedy.ids == (A, E)
    assert node_at(result, (B,)).status == "pruned"


@pytest.mark.parametrize("length_penalty", [0.0, 0.5, 1.0, 2.0])
def test_equal_lengths_rank_the_same_under_any_length_penalty(table, length_penalty):
    result = beam_search(table, [BOS], 2, 2, length_penalty=length_penalty)
    assert [h.ids for h in result.beams] == [(B, D), (A, E)]
    assert result.beams[0].normalised_score == pytest.approx(np.log(P_BD) / 2 ** length_penalty)


def test_eos_finishes_a_beam_and_the_search_stops(table):
    result = beam_search(table, [BOS], num_beams=2, max_new_tokens=10)
    assert [h.ids for h in result.beams] == [(B, D, EOS), (A, E, EOS)]
    assert all(h.finish_reason == "eos" for h in result.beams)
    assert node_at(result, (B, D, EOS)).status == "finished"
    assert max(n.depth for n in result.nodes) == 3
    assert result.beams[0].prob == pytest.approx(P_BD)


def test_tree_text_in_english_and_chinese(table):
    result = beam_search(table, [BOS], num_beams=2, max_new_tokens=2)
    text = format_tree(result, table.vocab)
    assert "width 2" in text
    lines = text.splitlines()
    bf = next(line for line in lines if "└─ F" in line and "0.0100" in line)
    assert "0.0040" in bf and "pruned" in bf
    assert any("D" in line and "0.9900" in line and "0.3960" in line and "kept" in line for line in lines)
    assert any(line.startswith("  1. B D") and "0.3960" in line for line in lines)
    assert any(line.startswith("greedy") and "A E" in line and "0.3060" in line for line in lines)

    zh = format_tree(result, table.vocab, lang="zh")
    assert "保留" in zh and "剪枝" in zh and "贪心" in zh
    with pytest.raises(SettingError, match="lang"):
        format_tree(result, table.vocab, lang="fr")


def test_path_and_unknown_node(table):
    result = beam_search(table, [BOS], 2, 2)
    assert result.path(0) == []
    with pytest.raises(IndexError):
        result.path(len(result.nodes))


@pytest.mark.parametrize("kwargs, name", [({"num_beams": 0}, "num_beams"),
                                          ({"max_new_tokens": 0}, "max_new_tokens"),
                                          ({"length_penalty": float("nan")}, "length_penalty")])
def test_bad_settings_name_the_setting(table, kwargs, name):
    settings = {"num_beams": 2, "max_new_tokens": 2, **kwargs}
    with pytest.raises(SettingError, match=name):
        beam_search(table, [BOS], **settings)


# --- the teaching-style transformer ---------------------------------------------------

def decoder(seed, vocab_size=12):
    config = DecoderConfig(vocab_size=vocab_size, d_model=8, head_dim=8, d_ff=16)
    params = random_params(config, np.random.default_rng(seed), scale=1.0)
    pieces = tuple(f"t{i}" for i in range(vocab_size - 1)) + ("<eos>",)
    return DecoderModel(config, params, Vocabulary(pieces, {"eos": vocab_size - 1}))


def log_softmax(x):  # the reference, written independently of core
    x = x - x.max()
    return x - np.log(np.exp(x).sum())


def reference_logprobs(model, prompt, ids):
    """Log-probability of each new token, each from a full recompute of its prefix."""
    seq = list(prompt)
    out = []
    for t in ids:
        out.append(log_softmax(model.full_forward(seq).last_logits)[t])
        seq.append(t)
    return out


PROMPT = [0, 3, 5]
SEEDS = range(6)


@pytest.mark.parametrize("seed", SEEDS)
def test_width_one_equals_greedy_argmax_of_full_recompute(seed):
    model = decoder(seed)
    seq, expected = list(PROMPT), []
    for _ in range(6):
        token = int(np.argmax(model.full_forward(seq).last_logits))
        expected.append(token)
        seq.append(token)
        if token == model.vocab.eos_id:
            break
    result = beam_search(model, PROMPT, num_beams=1, max_new_tokens=6)
    assert result.beams[0].ids == tuple(expected)
    assert result.greedy.ids == tuple(expected)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("num_beams", [2, 3])
def test_scores_match_full_recompute_and_width_is_respected(seed, num_beams):
    model = decoder(seed)
    result = beam_search(model, PROMPT, num_beams=num_beams, max_new_tokens=5)
    best = result.beams[0]
    assert best.score == pytest.approx(sum(reference_logprobs(model, PROMPT, best.ids)), abs=1e-9)
    assert best.prob == pytest.approx(np.exp(best.score))
    assert 1 <= len(result.beams) <= num_beams
    scores = [h.normalised_score for h in result.beams]
    assert scores == sorted(scores, reverse=True)

    survivors = Counter(n.depth for n in result.nodes if n.status in ("kept", "finished"))
    assert all(count <= num_beams for count in survivors.values())
    for node in result.nodes[1:]:
        parent = result.nodes[node.parent_id]
        assert node.score == pytest.approx(parent.score + node.logprob)
        assert parent.status in ("root", "kept")
        assert node.logprob == pytest.approx(
            reference_logprobs(model, PROMPT, result.path(node.node_id))[-1], abs=1e-9)


def test_big_vocabulary_expands_top_candidates_only_and_finds_the_same_beams(monkeypatch):
    model = decoder(seed=1, vocab_size=100)
    result = beam_search(model, PROMPT, num_beams=2, max_new_tokens=4)
    assert result.children_per_beam == 4
    assert max(Counter(n.parent_id for n in result.nodes[1:]).values()) == 4
    assert "top 4 tokens" in format_tree(result, model.vocab)

    monkeypatch.setattr(beam_module, "FULL_EXPANSION_VOCAB", 1000)
    full = beam_search(model, PROMPT, num_beams=2, max_new_tokens=4)
    assert full.children_per_beam is None
    assert [h.ids for h in full.beams] == [h.ids for h in result.beams]
    assert [h.score for h in full.beams] == pytest.approx([h.score for h in result.beams])


def test_the_random_models_exercise_finishing_and_beat_greedy():
    """Guards the tests above against trivial models: some beams end with EOS, and with
    raw scores (length_penalty 0) beam search sometimes finds a likelier sequence."""
    results = [beam_search(decoder(seed), PROMPT, 3, 5, length_penalty=0.0) for seed in SEEDS]
    assert any(h.finish_reason == "eos" for r in results for h in r.beams)
    assert any(r.beams[0].score > r.greedy.score + 1e-6 for r in results)
    assert all(r.beams[0].score >= max(h.score for h in r.beams) for r in results)


def hf_processed_logprobs(model, prompt, ids, penalty=1.0, bias=None, min_new=0):
    """Each new token's score in Hugging Face's beam search (`_beam_search`: log_softmax of the
    logits, then the logits processors on those scores, added up as they are), the processors
    written out here as transformers has them, in its order: SequenceBias of single tokens
    (added), RepetitionPenaltyLogitsProcessor (every id of prompt + tokens so far: score /
    penalty if > 0, score * penalty if < 0), MinNewTokensLengthLogitsProcessor (the end
    tokens -inf before min_new new tokens); from a full recomputation."""
    seq, out = list(prompt), []
    for t in ids:
        logits = log_softmax(np.array(model.full_forward(seq).last_logits, dtype=np.float64))
        for i, b in (bias or {}).items():
            logits[i] += b
        for i in set(seq):
            logits[i] = logits[i] / penalty if logits[i] > 0 else logits[i] * penalty
        if len(seq) - len(prompt) < min_new:
            logits[sorted(model.vocab.end_ids)] = -np.inf
        out.append(logits[t])
        seq.append(t)
    return out


@pytest.mark.parametrize("seed", range(3))
def test_the_processors_hugging_face_applies_in_beam_search_shape_every_node(seed):
    from explorer.core.decode.sampling import SamplingConfig
    model = decoder(seed)
    settings = dict(repetition_penalty=1.8, logit_bias={2: 1.5}, min_new_tokens=3)
    result = beam_search(model, PROMPT, num_beams=2, max_new_tokens=5,
                         config=SamplingConfig(mode="beam", **settings))
    assert result.processors == ("logit_bias", "repetition_penalty", "min_new_tokens")
    plain = beam_search(model, PROMPT, num_beams=2, max_new_tokens=5)
    assert plain.processors == () and [n.logprob for n in plain.nodes] != [n.logprob for n in result.nodes]
    for node in result.nodes[1:]:
        expected = hf_processed_logprobs(model, PROMPT, result.path(node.node_id), 1.8, {2: 1.5}, 3)[-1]
        assert node.logprob == pytest.approx(expected, abs=1e-9)
        assert not (node.depth <= 3 and node.token_id in model.vocab.end_ids)     # held back
    assert result.greedy.score == pytest.approx(
        sum(hf_processed_logprobs(model, PROMPT, result.greedy.ids, 1.8, {2: 1.5}, 3)), abs=1e-9)
    assert "then pass logit_bias, repetition_penalty, min_new_tokens" in format_tree(result, model.vocab)
    warped = beam_search(model, PROMPT, num_beams=2, max_new_tokens=5,     # a draw's stages: not applied
                         config=SamplingConfig(mode="beam", temperature=0.3, top_k=2))
    assert warped == plain
