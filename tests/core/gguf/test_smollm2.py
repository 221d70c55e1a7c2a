"""SmolLM2-135M-Instruct from its real GGUF file (installed by `explorer model install smollm2`).

These tests do not skip: without the file they fail and say how to install it.
The ids below were checked against Hugging Face's `tokenizers` built from the same
vocabulary and merges (test_ids_match_hugging_faces_tokenizer does it every run).
"""

from __future__ import annotations

import numpy as np
import pytest

from explorer.catalog import registry as model_registry
from explorer.catalog.verdicts import file_sha256
from explorer.core.tokens.chat import chat_turn
from explorer.core.decode.generate import generate
from explorer.core.models.layers import softmax
from explorer.core.gguf.blocks import BlockMatrix
from explorer.core.decode.sampling import SamplingConfig

KNOWN_IDS = {
    "The capital of France is": [504, 3575, 282, 4649, 314],
    "12345": [33, 34, 35, 36, 37],                       # digits one by one
    "café naïve": [83, 1939, 2756, 15486, 46494],
    "我爱学习": [19805, 235, 178, 226, 126, 18753, 116, 27948, 250],
}


@pytest.fixture(scope="module")
def path(smollm2):
    """The installed file (the `smollm2` fixture says how to install it when it is missing)."""
    return model_registry.installed_path("smollm2")


@pytest.fixture(scope="module")
def model(path, smollm2):
    return smollm2


def test_installed_file_is_the_expected_one(path):
    assert file_sha256(path) == model_registry.MODELS["smollm2"].sha256


def test_config_read_from_the_file(model):
    c = model.config
    assert (c.n_layers, c.d_model, c.n_heads, c.n_kv_heads, c.head_dim, c.d_ff, c.vocab_size) == \
           (30, 576, 9, 3, 64, 1536, 49152)
    assert c.rope_base == 100000.0 and c.tied_output and model.dtype == np.float32
    assert model.vocab.specials["bos"] == 1 and model.vocab.eos_id == 2


def test_weights_stay_in_the_files_blocks(model):
    """A decode step reads every weight once: 111 MB of Q4_1 and Q8_0 blocks, not 538 MB
    of float32 (the issue's 20 ms per token rests on this)."""
    p = model.params
    matrices = [p.embed.T] + [w for lp in p.layers for w in (lp.wqkv, lp.wo, lp.w13, lp.w2)]
    assert all(isinstance(w.T, BlockMatrix) for w in matrices)
    stored = sum(w.T.nbytes for w in matrices)
    as_float32 = sum(4 * w.shape[0] * w.shape[1] for w in matrices)
    assert 110e6 < stored < 112e6 and as_float32 > 4.8 * stored


def test_plain_prompt_continues_with_paris(model):
    """The plain prompt (no chat template) puts " Paris" first (p = 0.77 when measured)."""
    ids = model.vocab.encode("The capital of France is")
    trace, cache = model.prefill(ids)
    probs = softmax(trace.last_logits.astype(np.float64))
    top = int(np.argmax(probs))
    print(f"top candidate {model.vocab.display_piece(top)!r} with p = {probs[top]:.3f}")
    assert model.vocab.piece_text(top) == " Paris" and probs[top] > 0.5
    assert model.vocab.display_piece(top) == "␣Paris"                # the space shown, not lost
    assert trace.logits.dtype == np.float32 and trace.layers[-1].hidden.dtype == np.float32


def test_greedy_run_cached_equals_recompute(model):
    ids = model.vocab.encode("The capital of France is")
    run = generate(model, ids, SamplingConfig(temperature=0, max_new_tokens=4))
    assert model.vocab.decode(run.output_ids).startswith(" Paris")
    assert run.cache_len == len(ids) + 3                 # the last selected token is not processed
    assert run.max_recompute_diff < 1e-3                 # float32 logits of magnitude ~20
    for step in run.steps:
        assert step.trace.logits.dtype == np.float32 and step.trace.layers[0].k.dtype == np.float32


def test_chat_template_answers_and_stops_at_im_end(model):
    assert model.vocab.chat_system == "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
    ids = model.vocab.encode(chat_turn(model.vocab, "What is the capital of France?"))
    assert ids[:2] == [1, 9690] and ids[-4:] == [1, 520, 9531, 198] and ids.count(2) == 2
    run = generate(model, ids, SamplingConfig(temperature=0, max_new_tokens=12), check_recompute=False)
    assert "Paris" in run.output_text and run.finish_reason == "eos"


@pytest.mark.parametrize("text", list(KNOWN_IDS))
def test_known_ids_and_round_trip(model, text):
    vocab = model.vocab
    ids = vocab.encode(text)
    assert ids == KNOWN_IDS[text]
    assert vocab.decode(ids) == text


def test_byte_pieces_of_a_chinese_character(model):
    vocab = model.vocab
    ids = KNOWN_IDS["我爱学习"]
    assert [vocab.display_piece(i) for i in ids[:3]] == ["<0xE6><0x88>", "<0x91>", "<0xE7>"]
    assert vocab.decode(ids[:1]) == "" and vocab.decode(ids[:2]) == "我"
    assert vocab.decode(ids[:3]) == "我"                  # 爱 is still incomplete


def test_ids_match_hugging_faces_tokenizer(model, path):
    from tokenizers import AddedToken, Tokenizer, decoders, models as tm, pre_tokenizers
    from explorer.core.gguf.reader import GGUFFile
    meta = GGUFFile(path).metadata
    tokens, merges = meta["tokenizer.ggml.tokens"], meta["tokenizer.ggml.merges"]
    ref = Tokenizer(tm.BPE({t: i for i, t in enumerate(tokens)}, [tuple(m.split(" ", 1)) for m in merges]))
    ref.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    ref.decoder = decoders.ByteLevel()
    ref.add_special_tokens([AddedToken(tokens[i], special=True, normalized=False)
                            for i in sorted(model.vocab.control)])
    rng = np.random.default_rng(5)
    alphabet = list("ab Z9 '\n\t.,!é我🙂-_0\u00a0\u3000x") + ["<|im_end|>", "don't", "  "]
    texts = list(KNOWN_IDS) + [chat_turn(model.vocab, "Hi there, 2+2=?"), "It's 3.14159 — π ≈ 22/7;\r\n  ok  "]
    texts += ["".join(rng.choice(alphabet, rng.integers(1, 25))) for _ in range(300)]
    for text in texts:
        assert model.vocab.encode(text) == ref.encode(text).ids, repr(text)
