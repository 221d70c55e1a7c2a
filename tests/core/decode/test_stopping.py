"""Every finish reason, recorded and shown for what it is."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.cli.main import main
from explorer.core.decode.generate import generate
from explorer.core.decode.sampling import SamplingConfig
from explorer.core.decode.stopping import find_stop_string
from explorer.core.models.table_model import table_model_from_dict
from explorer.core.models.teaching import load_teaching_model


@pytest.fixture(scope="module")
def teaching():
    return load_teaching_model()


def test_stop_string_spanning_two_tokens_is_found_and_cut(teaching):
    # 学习 (id 3) then ！ (id 5): "习！" only exists once both tokens are there
    run = generate(teaching, [1, 2], SamplingConfig(max_new_tokens=8, stop_strings=("习！",)))
    assert run.finish_reason == "stop_string"
    assert run.output_ids == (3, 5)
    assert run.stop_match.text == "习！" and run.stop_match.char_index == 1 and run.stop_match.step == 1
    assert run.output_text == "学"
    assert not run.incomplete


def test_earliest_stop_string_wins():
    match = find_stop_string("abcdef", ("ef", "bc"), step=4)
    assert (match.text, match.char_index, match.step) == ("bc", 1, 4)
    assert find_stop_string("abc", ("x",), 0) is None


def test_length_is_incomplete(teaching):
    run = generate(teaching, [1, 2], SamplingConfig(max_new_tokens=1))
    assert run.finish_reason == "length" and run.incomplete and run.output_ids == (3,)


def test_cancellation_stops_after_the_current_step(teaching):
    run = generate(teaching, [1, 2], SamplingConfig(max_new_tokens=8), cancel=lambda: True)
    assert run.finish_reason == "cancelled" and run.incomplete and len(run.steps) == 1


TOOL_MODEL = {
    "format": "token-explorer/table-model", "version": 1, "name": "tool",
    "vocabulary": {"pieces": ["<eos>", "<bos>", "CALL", "read_file", "END"], "specials": {"eos": 0, "bos": 1}},
    "default": {"<eos>": 1.0},
    "table": [{"after": ["<bos>"], "probs": {"CALL": 1.0}},
              {"after": ["CALL"], "probs": {"read_file": 1.0}},
              {"after": ["read_file"], "probs": {"END": 1.0}}],
    "tool_calls": [["CALL", "read_file", "END"]],
}


def test_complete_tool_call_hands_control_to_the_host():
    model = table_model_from_dict(TOOL_MODEL)
    run = generate(model, [1], SamplingConfig(max_new_tokens=10))
    assert run.finish_reason == "tool_call"
    assert run.output_ids == (2, 3, 4)
    assert not run.incomplete


def test_trace_cli_stop_flag(capsys):
    assert main(["trace", "--prompt", "我爱", "--stop", "习！", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["finish_reason"] == "stop_string" and data["output_text"] == "学"
    assert data["stop_match"] == {"text": "习！", "char_index": 1, "step": 1}



# ---------------------------------------------------------------------------- stop strings and tokenization

def streamed_cut(pieces, stops):
    """The generation loop's check: after each token, find_stop_string on the text so far;
    -> the cut (char index, stop string) of the first token that completes a match."""
    text = ""
    for step, piece in enumerate(pieces):
        text += piece
        if (match := find_stop_string(text, stops, step)) is not None:
            return match.char_index, match.text
    return None


def per_character_cut(text, stops):
    """The reference, written from the rule: check after every character; the first
    character that completes a match stops, and of the stops it completes the earlier in
    the list wins; the cut is where that match starts."""
    for end in range(1, len(text) + 1):
        for s in stops:
            if text[:end].endswith(s):
                return end - len(s), s
    return None


def test_the_stop_that_ends_first_wins_however_the_text_is_split():
    """The issue's case: "abc" as one token or as a, b, c, with stops ["abc", "b"]."""
    assert streamed_cut(["abc"], ["abc", "b"]) == streamed_cut(["a", "b", "c"], ["abc", "b"]) == (1, "b")
    assert find_stop_string("abc", ("bc", "abc"), 0).text == "bc"       # a tie on the end: the earlier in the list
    assert find_stop_string("abc", ("abc", "bc"), 0).text == "abc"


def test_a_run_is_cut_the_same_for_either_tokenization():
    def model(split):
        pieces = ["<eos>", "<bos>", *split]
        table = [{"after": ["<bos>"], "probs": {split[0]: 1.0}}]
        table += [{"after": [a], "probs": {b: 1.0}} for a, b in zip(split, split[1:])]
        return table_model_from_dict({
            "format": "token-explorer/table-model", "version": 1, "name": "split",
            "vocabulary": {"pieces": pieces, "specials": {"eos": 0, "bos": 1}},
            "default": {"<eos>": 1.0}, "table": table})
    config = SamplingConfig(max_new_tokens=8, stop_strings=("xyz", "y"))
    whole, parts = generate(model(["xyz"]), [1], config), generate(model(["x", "y", "z"]), [1], config)
    assert whole.output_text == parts.output_text == "x"
    assert whole.stop_match.text == parts.stop_match.text == "y"


@settings(max_examples=400, deadline=None)
@given(st.text("abc", min_size=1, max_size=24), st.lists(st.text("abc", min_size=1, max_size=4), min_size=1, max_size=4),
       st.data())
def test_the_cut_never_depends_on_the_split(text, stops, data):
    cuts = sorted(data.draw(st.sets(st.integers(1, len(text) - 1), max_size=len(text))) if len(text) > 1 else [])
    bounds = [0, *cuts, len(text)]
    pieces = [text[a:b] for a, b in zip(bounds, bounds[1:])]
    assert streamed_cut(pieces, stops) == streamed_cut([text], stops) == per_character_cut(text, stops)
