"""How token pieces are shown and decoded."""

from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.core.tokens.vocab import Vocabulary


def test_pieces_show_spaces_line_breaks_and_partial_characters():
    vocab = Vocabulary(("a\n", b"\xe4", b"\xbd\xa0", "x\ty", b" Paris", "Paris", "  "))
    assert [vocab.display_piece(i) for i in range(7)] == ["a↵", "<0xE4>", "<0xBD><0xA0>", "x⇥y",
                                                          "␣Paris", "Paris", "␣␣"]
    assert [vocab.piece_text(i) for i in (0, 1, 4, 6)] == ["a\n", "<0xE4>", " Paris", "  "]
    assert vocab.decode([1]) == "" and vocab.decode([1, 2]) == "你" and vocab.decode([0]) == "a\n"


def test_tokens_holding_part_of_a_character_name_it():
    vocab = Vocabulary((b"\xe4", b"\xbd\xa0", "a", b"a\xe4", b"\xff", "<eos>"), {"eos": 5})
    assert vocab.split_characters([0, 1, 2]) == ["你", "你", ""]       # <0xE4> <0xBD><0xA0> a
    assert vocab.split_characters([3, 1]) == ["你", "你"]              # "a" whole, 你 begun
    assert vocab.split_characters([4, 2, 5]) == ["", "", ""]           # a lone byte, a special
    assert vocab.split_characters([0, 5, 1]) == ["你", "", "你"]       # the special holds no byte


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet="ab 你好😀é\n", min_size=1, max_size=12), data=st.data())
def test_split_characters_marks_exactly_the_tokens_that_cut_a_character(text, data):
    raw = text.encode("utf-8")
    cuts = sorted(data.draw(st.sets(st.integers(1, len(raw) - 1), max_size=len(raw))) if len(raw) > 1 else [])
    edges = [0, *cuts, len(raw)]
    pieces = tuple(raw[a:b] for a, b in zip(edges, edges[1:]))
    boundaries = {len(text[:k].encode("utf-8")) for k in range(len(text) + 1)}
    split = Vocabulary(pieces).split_characters(range(len(pieces)))
    for (a, b), chars in zip(zip(edges, edges[1:]), split):
        assert bool(chars) == (a not in boundaries or b not in boundaries)
        assert all(c in text and len(c.encode("utf-8")) > 1 for c in chars)
