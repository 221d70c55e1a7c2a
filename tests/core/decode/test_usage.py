"""Usage: prompt, reasoning and output tokens counted apart (as serving APIs report them),
from a run's ids and the vocabulary's reasoning markers. Expected counts are counted by hand."""

import json

from explorer.cli.main import main
from explorer.core.decode.usage import count_usage
from explorer.core.tokens.vocab import Vocabulary

VOCAB = Vocabulary(("<eos>", "<bos>", "<think>", "</think>", "a", "b"), {"eos": 0, "bos": 1})


def test_the_reasoning_segment_is_counted_apart_markers_included():
    u = count_usage([1, 4], [2, 4, 5, 3, 5, 0], VOCAB)        # <think> a b </think> | b <eos>
    assert (u.prompt_tokens, u.reasoning_tokens, u.output_tokens, u.total_tokens) == (2, 4, 2, 8)
    assert u.answer_ids == (5, 0)
    assert u.as_dict() == {"prompt_tokens": 2, "reasoning_tokens": 4, "output_tokens": 2, "total_tokens": 8}


def test_a_segment_cut_by_the_budget_is_reasoning_to_the_end_and_a_template_may_open_it():
    assert count_usage([1], [2, 4, 4], VOCAB).as_dict()["reasoning_tokens"] == 3        # never closed
    opened = count_usage([1, 2], [4, 3, 5], VOCAB)              # the prompt ends inside <think>
    assert (opened.reasoning_tokens, opened.output_tokens, opened.answer_ids) == (2, 1, (5,))


def test_without_markers_every_generated_token_is_output():
    plain = Vocabulary(("<eos>", "x"), {"eos": 0})
    assert plain.reasoning_markers is None
    assert count_usage([1], [1, 1, 0], plain).as_dict() == {"prompt_tokens": 1, "reasoning_tokens": 0,
                                                            "output_tokens": 3, "total_tokens": 4}
    named = Vocabulary(("<eos>", "[T]", "[/T]"), {"eos": 0, "think": 1, "think_end": 2})   # the file's own roles
    assert named.reasoning_markers == (1, 2)


def test_trace_json_has_a_usage_block_on_every_run(capsys):
    assert main(["trace", "--prompt", "我爱", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["usage"] == {"prompt_tokens": 2, "reasoning_tokens": 0, "output_tokens": 3, "total_tokens": 5}
    assert main(["trace", "--lesson", "stop-reasons", "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    assert [r["usage"]["total_tokens"] for r in runs] == [9, 8, 5, 5, 6, 12]    # prompt + every generated token


def test_a_byte_level_vocabulary_finds_its_think_pieces():
    """A GGUF's byte-level vocabulary stores pieces as bytes; its <think> markers are found too."""
    bpe = Vocabulary((b"<eos>", b"<think>", b"x", b"</think>"), {"eos": 0})
    assert bpe.reasoning_markers == (1, 3)
    assert count_usage([2], [1, 2, 3, 2, 0], bpe).as_dict()["reasoning_tokens"] == 3
