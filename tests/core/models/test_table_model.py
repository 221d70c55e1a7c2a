"""TableModel: logits are log(table probabilities), longest-suffix rows, a layer-less
cache that still counts processed tokens, and validation errors that name the key path."""

import copy
import json

import numpy as np
import pytest

from explorer.core.errors import ParamsError, PromptError
from explorer.core.models.protocol import LanguageModel
from explorer.core.models.table_model import load_table_model, table_model_from_dict
from paths import RESOURCES

BEAM_FILE = RESOURCES / "tables" / "beam-example.json"
EOS, A, B, D, E, F, BOS = range(7)          # ids of the beam example's pieces


def beam_dict():
    return {
        "format": "token-explorer/table-model", "version": 1, "name": "beam",
        "vocabulary": {"pieces": ["<eos>", "A", "B", "D", "E", "F", "<bos>"],
                       "specials": {"eos": 0, "bos": 6}},
        "default": {"<eos>": 1.0},
        "table": [{"after": ["<bos>"], "probs": {"A": 0.6, "B": 0.4}},
                  {"after": ["<bos>", "A"], "probs": {"E": 0.51, "F": 0.49}},
                  {"after": ["<bos>", "B"], "probs": {"D": 0.99, "F": 0.01}}],
    }


def test_an_end_of_turn_token_ends_generation_and_beams_like_eos():
    from explorer.core.decode.beam import beam_search
    from explorer.core.decode.generate import generate
    from explorer.core.decode.sampling import SamplingConfig
    data = beam_dict()
    data["vocabulary"]["specials"]["eot"] = D          # "D" now also ends a turn
    model = table_model_from_dict(data)
    assert model.vocab.end_ids == {EOS, D}
    run = generate(model, [BOS, B], SamplingConfig(mode="greedy", max_new_tokens=5))
    assert run.output_ids == (D,) and run.finish_reason == "eos"
    result = beam_search(model, [BOS], num_beams=2, max_new_tokens=3, length_penalty=0.0)
    best = result.beams[0]                             # 0.4 x 0.99, finished at D
    assert best.ids == (B, D) and best.finish_reason == "eos"
    assert [n.status for n in result.nodes if result.path(n.node_id) == [B, D]] == ["finished"]


def probs(logits):
    return np.exp(logits)


def test_beam_example_file_loads_as_a_language_model():
    model = load_table_model(BEAM_FILE)
    assert isinstance(model, LanguageModel)
    assert model.name == "beam-example"
    assert model.vocab.eos_id == EOS and model.vocab.specials["bos"] == BOS
    assert model.tool_call_sequences == ()


def test_logits_are_log_probabilities_of_each_positions_context():
    model = load_table_model(BEAM_FILE)
    trace = model.full_forward([BOS, A, E])
    assert trace.logits.shape == (3, 7)
    np.testing.assert_allclose(probs(trace.logits[0]), [0, 0.6, 0.4, 0, 0, 0, 0])
    np.testing.assert_allclose(probs(trace.logits[1]), [0, 0, 0, 0, 0.51, 0.49, 0])
    np.testing.assert_allclose(probs(trace.logits[2]), [1, 0, 0, 0, 0, 0, 0])   # default row
    assert trace.logits[0, 3] == -np.inf
    assert trace.logits[0, 1] == np.log(0.6)


def test_longest_matching_context_wins_and_default_applies_otherwise():
    data = beam_dict()
    data["table"] = [{"after": ["A"], "probs": {"E": 1}},
                     {"after": ["B", "A"], "probs": {"F": 1}},
                     {"after": [1, 1], "probs": {"D": 1}}]          # ids work as tokens too
    model = table_model_from_dict(data)
    assert model.next_logprobs([B, A])[F] == 0            # longest suffix: [B, A]
    assert model.next_logprobs([D, A])[E] == 0            # only [A] matches
    assert model.next_logprobs([A, A])[D] == 0
    assert model.next_logprobs([A, B])[EOS] == 0          # nothing matches: default
    np.testing.assert_allclose(probs(model.full_forward([B, A, D]).logits)[:, [F, EOS]],
                               [[0, 1], [1, 0], [0, 1]])


def test_trace_and_cache_shapes_follow_the_protocol():
    model = load_table_model(BEAM_FILE)
    trace, cache = model.prefill([BOS, A])
    assert len(cache) == 2 and cache.n_layers == 0
    assert trace.layers == ()
    assert trace.embeddings.shape == (2, 0) and trace.final_hidden.shape == (2, 0)
    np.testing.assert_array_equal(trace.positions, [0, 1])
    np.testing.assert_array_equal(trace.key_ids, [BOS, A])

    trace, cache = model.decode(E, cache)
    assert len(cache) == 3
    np.testing.assert_array_equal(cache.ids, [BOS, A, E])
    np.testing.assert_array_equal(trace.positions, [2])
    np.testing.assert_array_equal(trace.key_positions, [0, 1, 2])
    assert trace.logits.shape == (1, 7)
    np.testing.assert_array_equal(trace.last_logits, model.full_forward([BOS, A, E]).last_logits)
    assert len(model.new_cache()) == 0


def test_ids_are_checked_like_the_decoder():
    model = load_table_model(BEAM_FILE)
    with pytest.raises(PromptError, match="index 1"):
        model.prefill([BOS, 7])
    with pytest.raises(PromptError, match="empty"):
        model.prefill([])
    _, cache = model.prefill([BOS])
    with pytest.raises(PromptError, match="decode id"):
        model.decode(-1, cache)


def test_tool_call_sequences_and_byte_pieces():
    data = {
        "format": "token-explorer/table-model", "version": 1,
        "vocabulary": {"pieces": ["<eos>", "CALL", "read_file", "END_CALL", {"hex": "e5"},
                                 {"hex": "ad90"}, "你"],
                       "specials": {"eos": "<eos>"}},
        "default": {"<eos>": 0.5, "4": 0.25, "<0xAD><0x90>": 0.25},
        "table": [{"after": ["<0xE5>"], "probs": {"<0xAD><0x90>": 1}}],
        "tool_calls": [["CALL", "read_file", "END_CALL"], [1, 3]],
    }
    model = table_model_from_dict(data)
    assert model.name == "table"
    assert model.tool_call_sequences == ((1, 2, 3), (1, 3))
    assert model.vocab.pieces[4] == b"\xe5" and model.vocab.pieces[5] == b"\xad\x90"
    assert model.vocab.eos_id == 0
    assert model.vocab.display_piece(4) == "<0xE5>"
    assert model.vocab.decode([4, 5]) == "子"
    np.testing.assert_allclose(probs(model.next_logprobs([6])), [0.5, 0, 0, 0, 0.25, 0.25, 0])
    np.testing.assert_allclose(probs(model.next_logprobs([4])), [0, 0, 0, 0, 0, 1, 0])


def edited(path, value):
    """beam_dict() with the value at key path `path` (a tuple) replaced, or deleted if None."""
    data = copy.deepcopy(beam_dict())
    *parents, last = path
    target = data
    for key in parents:
        target = target[key]
    if value is None:
        del target[last]
    else:
        target[last] = value
    return data


BAD = [
    (("table", 2, "probs"), {"D": 0.96, "F": 0.01}, "table[2].probs: sums to 0.97, expected 1"),
    (("table", 0, "probs"), {"A": 0.6, "Z": 0.4}, "table[0].probs.Z: unknown piece 'Z'"),
    (("table", 1, "after"), ["<bos>", "Q"], "table[1].after[1]: unknown piece 'Q'"),
    (("table", 1, "after"), [6, 9], "table[1].after[1]: id 9 is outside the vocabulary"),
    (("table", 0, "probs"), {"A": 1.4, "B": -0.4}, "table[0].probs.A: 1.4 is not a probability"),
    (("table", 0, "probs"), {"A": 0.6, "B": -0.4, "D": 0.8}, "table[0].probs.B: -0.4 is not"),
    (("table", 0, "probs"), {"A": float("nan"), "B": 1}, "table[0].probs.A: nan is not"),
    (("table", 0, "probs"), {"A": "0.6", "B": 0.4}, "table[0].probs.A: expected a probability"),
    (("table", 0, "probs"), {"A": 0.6, "1": 0.4}, "table[0].probs.1: same token as 'A'"),
    (("default", "9"), 0.0, "default.9: id 9 is outside the vocabulary"),
    (("default",), None, "(top level): missing key 'default'"),
    (("table", 1, "probs"), None, "table[1]: missing key 'probs'"),
    (("table", 1, "prob"), {"E": 1}, "table[1]: unknown key 'prob'"),
    (("table", 1, "after"), [], "table[1].after: empty"),
    (("table", 2, "after"), ["<bos>", "A"], "table[2].after: same context as table[1]"),
    (("table", 2, "after"), ["<bos>", True], "table[2].after[1]: expected a piece or an integer id"),
    (("table",), {}, "table: expected a list"),
    (("vocabulary", "pieces", 3), "A", "vocabulary.pieces[3]: 'A' is already piece 1"),
    (("vocabulary", "pieces", 3), {"hex": "zz"}, "vocabulary.pieces[3].hex: 'zz' is not a hex"),
    (("vocabulary", "specials", "eos"), 7, "vocabulary.specials.eos: id 7 is outside"),
    (("tool_calls",), [["A", "CALL"]], "tool_calls[0][1]: unknown piece 'CALL'"),
    (("format",), "something-else", "format: 'something-else', expected"),
    (("version",), 2, "version: 2, expected 1"),
]


@pytest.mark.parametrize("path, value, message", BAD, ids=[m.split(":")[0] for _, _, m in BAD])
def test_validation_errors_name_the_key_path(path, value, message):
    with pytest.raises(ParamsError) as err:
        table_model_from_dict(edited(path, value), source="beam.json")
    assert str(err.value).startswith("beam.json: ")
    assert message in str(err.value)


def test_file_errors_name_the_file(tmp_path):
    bad_sum = tmp_path / "beam.json"
    bad_sum.write_text(json.dumps(edited(("table", 2, "probs"), {"D": 0.96, "F": 0.01})))
    with pytest.raises(ParamsError, match=r"beam\.json: table\[2\]\.probs: sums to 0\.97, expected 1"):
        load_table_model(bad_sum)

    nan = tmp_path / "nan.json"
    nan.write_text(json.dumps(beam_dict()).replace('"A": 0.6', '"A": NaN'))
    with pytest.raises(ParamsError, match=r"nan\.json: table\[0\]\.probs\.A: nan is not a probability"):
        load_table_model(nan)

    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "format": "token-explorer/table-model",\n  "version": 1\n  "name": "x"\n}')
    with pytest.raises(ParamsError, match=r"broken\.json: not valid JSON at line 4, column 3"):
        load_table_model(broken)

    with pytest.raises(ParamsError, match="missing.json: file not found"):
        load_table_model(tmp_path / "missing.json")
