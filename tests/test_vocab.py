"""How token pieces are shown and decoded."""

from explorer.core.vocab import Vocabulary


def test_pieces_show_line_breaks_and_partial_characters():
    vocab = Vocabulary(("a\n", b"\xe4", b"\xbd\xa0", "x\ty"))
    assert [vocab.display_piece(i) for i in range(4)] == ["a↵", "<0xE4>", "<0xBD><0xA0>", "x⇥y"]
    assert vocab.decode([1]) == "" and vocab.decode([1, 2]) == "你" and vocab.decode([0]) == "a\n"
