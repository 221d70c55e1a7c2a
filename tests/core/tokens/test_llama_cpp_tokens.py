"""The tokenizers give llama.cpp's ids: for a tiny file of each pre-tokenizer (qwen2,
llama-bpe, gpt-2, smollm) and two SentencePiece-style ones (Gemma-like, Phi-3-like), every
text of tokenizer_files.TEXTS encodes to the ids llama-cpp-python gave for the same file
(tests/fixtures/tokenization_llama_cpp.json, written by tools/record_tokenization.py)."""

import json
from dataclasses import replace

import pytest

from paths import FIXTURES
from tokenizer_files import BPE_FILES, FILES, TEXTS, write_tokenizer_file

from explorer.core.gguf.reader import GGUFFile
from explorer.core.tokens.from_gguf import vocabulary_from_gguf
from explorer.core.tokens.pretokenize import PRE_TOKENIZERS

FIXTURE = json.loads((FIXTURES / "tokenization_llama_cpp.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def vocabularies(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tokenizers")
    out = {}
    for name in FILES:
        write_tokenizer_file(folder / f"{name}.gguf", name)
        out[name] = vocabulary_from_gguf(GGUFFile(folder / f"{name}.gguf"))
    return out


def test_the_fixture_covers_every_file_and_text():
    assert set(FIXTURE["files"]) == set(FILES)
    assert all([c["text"] for c in cases] == TEXTS for cases in FIXTURE["files"].values())


@pytest.mark.parametrize("name", FILES)
def test_ids_equal_llama_cpps(vocabularies, name):
    vocab = vocabularies[name]
    wrong = [(c["text"], vocab.encode(c["text"]), c["ids"]) for c in FIXTURE["files"][name]
             if vocab.encode(c["text"]) != c["ids"]]
    assert wrong == []


@pytest.mark.parametrize("name", list(BPE_FILES))
def test_another_pre_tokenizer_would_give_other_ids(vocabularies, name):
    """The files' merges make every pre-tokenizer's cuts show in the ids: the same vocabulary
    with any other rule misses llama.cpp's ids on some text."""
    vocab = vocabularies[name]
    for other in {"gpt-2", "llama-bpe", "qwen2", "smollm", "default"} - {name}:
        swapped = replace(vocab, pre=PRE_TOKENIZERS[other], _words={})
        assert any(swapped.encode(c["text"]) != c["ids"] for c in FIXTURE["files"][name]), other


def test_llama3_adds_bos_and_takes_a_whole_word_token_whole(vocabularies):
    vocab = vocabularies["llama-bpe"]
    ids = vocab.encode("Hello world")
    assert ids[0] == vocab.specials["bos"] and vocab.tokens[ids[-1]] == "Ġworld"
    assert vocabularies["qwen2"].encode("Hello")[0] != vocabularies["qwen2"].specials["bos"]


def test_end_of_generation_ids_follow_llama_cpps_list(vocabularies):
    def ends(name):
        vocab = vocabularies[name]
        return {vocab.tokens[i] for i in vocab.end_ids}
    assert ends("qwen2") == {"<|endoftext|>", "<|im_end|>"}
    assert ends("llama-bpe") == {"<|end_of_text|>", "<|eot_id|>"}
    assert ends("spm-gemma") == {"</s>", "<end_of_turn>"}
    assert ends("spm-phi3") == {"</s>", "<|end|>", "<|endoftext|>"}


def test_user_defined_tokens_are_found_in_the_text_and_kept_in_decoded_text(vocabularies):
    vocab = vocabularies["qwen2"]
    ids = vocab.encode("<think>x</think>")
    assert vocab.tokens[ids[0]] == "<think>" and vocab.tokens[ids[-1]] == "</think>"
    assert vocab.decode(ids) == "<think>x</think>"
    assert vocab.decode(vocab.encode("<|im_start|>x")) == "x"          # a control token is not text
