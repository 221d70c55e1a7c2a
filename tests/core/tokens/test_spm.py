"""The SentencePiece-style tokenizer (Gemma's) on small hand-made vocabularies: merges by
score, byte fallback, spaces as ▁, user-defined tokens cut out first, <bos> added, and
decoding that joins byte tokens only when a character is complete. (Its agreement with
llama.cpp on Gemma's own 262,144 tokens is in test_gemma3.py.)"""

import pytest

from explorer.core.errors import PromptError
from explorer.core.tokens.spm import SentencePieceVocabulary
from explorer.core.tokens.specials import BYTE, CONTROL, NORMAL, USER_DEFINED


def vocab(entries, add_bos=True):
    """entries: (text, score, type) after the three control tokens and the 256 byte tokens."""
    head = [("<pad>", 0.0, CONTROL), ("<eos>", 0.0, CONTROL), ("<bos>", 0.0, CONTROL)]
    byte_tokens = [(f"<0x{b:02X}>", 0.0, BYTE) for b in range(256)]
    rows = head + byte_tokens + list(entries)
    tokens, scores, types = zip(*rows)
    return SentencePieceVocabulary.build(tokens, scores, types, {"pad": 0, "eos": 1, "bos": 2}, add_bos)


def ids_of(v, *pieces):
    return [v.tokens.index(p) for p in pieces]


def test_the_pair_whose_token_scores_highest_merges_first():
    low_ab = vocab([("a", -1, NORMAL), ("b", -1, NORMAL), ("c", -1, NORMAL), ("ab", -5, NORMAL), ("bc", -2, NORMAL)])
    assert low_ab.encode("abc") == [2] + ids_of(low_ab, "a", "bc")
    high_ab = vocab([("a", -1, NORMAL), ("b", -1, NORMAL), ("c", -1, NORMAL), ("ab", -1, NORMAL), ("bc", -2, NORMAL)])
    assert high_ab.encode("abc") == [2] + ids_of(high_ab, "ab", "c")
    tie = vocab([("a", -1, NORMAL), ("ab", -3, NORMAL), ("ba", -3, NORMAL), ("b", -1, NORMAL)])
    assert tie.encode("aba") == [2] + ids_of(tie, "ab", "a")          # equal scores: leftmost first


def test_merges_continue_through_intermediate_tokens():
    v = vocab([("▁", -1, NORMAL), ("c", -1, NORMAL), ("a", -1, NORMAL), ("t", -1, NORMAL),
               ("▁c", -2, NORMAL), ("at", -3, NORMAL), ("▁cat", -4, NORMAL)])
    assert v.encode(" cat") == [2] + ids_of(v, "▁cat")
    assert v.encode("cat cat") == [2] + ids_of(v, "c", "at", "▁cat")


def test_a_character_without_a_token_is_spelt_in_its_utf8_bytes():
    v = vocab([("a", -1, NORMAL)])
    ids = v.encode("a我")
    assert ids == [2, *ids_of(v, "a"), 3 + 0xE6, 3 + 0x88, 3 + 0x91]
    assert [v.display_piece(i) for i in ids[2:]] == ["<0xE6>", "<0x88>", "<0x91>"]
    assert v.decode(ids[:4]) == "a"                  # the character is not complete yet
    assert v.decode(ids) == "a我"
    assert v.split_characters(ids) == ["", "", "我", "我", "我"]


def test_user_defined_tokens_are_cut_out_first_longest_first():
    v = vocab([("a", -1, NORMAL), ("b", -1, NORMAL), ("\n", 0, USER_DEFINED), ("\n\n", 0, USER_DEFINED),
               ("▁", -1, NORMAL), ("▁▁", 0, USER_DEFINED)])
    nl, nl2, sp2 = ids_of(v, "\n", "\n\n", "▁▁")
    assert v.encode("a\n\n\nb") == [2, v.tokens.index("a"), nl2, nl, v.tokens.index("b")]
    assert v.decode(v.encode("a  b\n")) == "a  b\n"
    assert sp2 in v.encode("a  b")


def test_bos_comes_first_when_the_model_adds_it_and_control_tokens_stay_out_of_text():
    v = vocab([("h", -1, NORMAL), ("i", -1, NORMAL), ("hi", -1, NORMAL)], add_bos=False)
    assert v.encode("hi") == ids_of(v, "hi")
    with_bos = vocab([("h", -1, NORMAL), ("i", -1, NORMAL), ("hi", -1, NORMAL)])
    assert with_bos.decode(with_bos.encode("hi") + [1]) == "hi"
    assert with_bos.display_piece(2) == "<bos>" and with_bos.is_special(2)


def test_an_empty_prompt_is_refused_by_name():
    with pytest.raises(PromptError, match="prompt is empty"):
        vocab([("a", -1, NORMAL)]).encode("")
