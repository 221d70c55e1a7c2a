"""How token pieces are shown and decoded."""

from explorer.core.vocab import Vocabulary


def test_pieces_show_spaces_line_breaks_and_partial_characters():
    vocab = Vocabulary(("a\n", b"\xe4", b"\xbd\xa0", "x\ty", b" Paris", "Paris", "  "))
    assert [vocab.display_piece(i) for i in range(7)] == ["a↵", "<0xE4>", "<0xBD><0xA0>", "x⇥y",
                                                          "␣Paris", "Paris", "␣␣"]
    assert [vocab.piece_text(i) for i in (0, 1, 4, 6)] == ["a\n", "<0xE4>", " Paris", "  "]
    assert vocab.decode([1]) == "" and vocab.decode([1, 2]) == "你" and vocab.decode([0]) == "a\n"
