"""Broken and special input files (lessons, parameter files, GGUFs, devices and pipes) shared by
the command line's tests and the window's."""

from __future__ import annotations

import json
import os
import struct

import numpy as np
import pytest
from gguf import GGUFValueType
from gguf_files import llama_tensors, write_llama

from explorer.core.limits import MAX_BEAMS, MAX_NEW_TOKENS, MAX_SEED
from explorer.core.models.teaching import default_params_path

LESSON = """
format = "token-explorer/lesson"
version = 1
prompt_ids = [0]
title = {{ en = "Three logits", zh = "三个logits" }}
summary = {{ en = "Candidates A, B, C.", zh = "候选A、B、C。" }}
model = {model}
settings = {settings}

[[frames]]
show = "pick"
step = 0
title = {{ en = "{title}", zh = "选中" }}
"""
GOOD_MODEL = '{ kind = "logits", pieces = ["A", "B", "C"], logits = [2.0, 1.0, 0.0] }'
GOOD_SETTINGS = '{ mode = "greedy", max_new_tokens = 1 }'


def lesson_text(model=GOOD_MODEL, settings=GOOD_SETTINGS, title="Pick {piece}") -> str:
    return LESSON.format(model=model, settings=settings, title=title)


# name -> (file text, words the message must hold besides the file's name)
BROKEN_LESSONS = {
    "huge-beam": (lesson_text(settings='{ mode = "beam", num_beams = 1000000 }'),
                  f"num_beams = 1000000: expected an integer from 1 to {MAX_BEAMS}"),
    "huge-length": (lesson_text(settings=f"{{ max_new_tokens = {MAX_NEW_TOKENS + 1} }}"), "max_new_tokens"),
    "huge-seed": (lesson_text(settings=f"{{ seed = {MAX_SEED + 1} }}"), "seed"),
    "huge-length-penalty": (lesson_text(settings='{ mode = "beam", length_penalty = 1e308 }'), "length_penalty"),
    "logits-as-text": (lesson_text(model='{ kind = "logits", pieces = ["A", "B", "C"], logits = ["2", "1", "0"] }'),
                       "model.logits[0]: text '2', expected a number"),
    "logits-nested": (lesson_text(model='{ kind = "logits", pieces = ["A", "B", "C"], logits = [[2.0], [1.0], [0.0]] }'),
                      "model.logits[0]: a list, expected a number"),
    "logits-bool": (lesson_text(model='{ kind = "logits", pieces = ["A", "B"], logits = [true, 1.0] }'),
                    "model.logits[0]: true"),
    "pieces-not-text": (lesson_text(model='{ kind = "logits", pieces = [1, 2], logits = [1.0, 0.0] }'),
                        "model.pieces"),
    "projection-ragged": (lesson_text(model='{ kind = "projection", pieces = ["A", "B"], hidden = [1.0, 2.0], '
                                            'w_out = [[0.0, 1.0], [1.0]] }'), "model.w_out: ragged"),
    "projection-text": (lesson_text(model='{ kind = "projection", pieces = ["A", "B"], hidden = [1.0, 2.0], '
                                          'w_out = [["a", 1.0], [1.0, 0.0]] }'), "model.w_out[0][0]: text 'a'"),
    "projection-hidden-matrix": (lesson_text(model='{ kind = "projection", pieces = ["A", "B"], hidden = [[1.0]], '
                                                   'w_out = [[0.0, 1.0]] }'), "model.hidden[0]: a list"),
    "force-far": (lesson_text() + '\n[forces]\n"' + "9" * 5000 + '" = 1\n',
                  "forces.99999999999999999999: expected a step"),
    "scenarios-not-tables": (lesson_text().replace("prompt_ids = [0]", "prompt_ids = [0]\nscenarios = 5"),
                             "scenarios: expected an array of tables"),
    "stop-strings-number": (lesson_text(settings="{ stop_strings = 5 }"), "stop_strings = 5: expected a list"),
    "order-number": (lesson_text(settings="{ order = 5 }"), "order = 5: expected a preset"),
    "force-unreached": (lesson_text(model='{ kind = "teaching" }', settings="{}")     # 我爱: EOS at step 2
                        .replace("prompt_ids = [0]", "prompt_ids = [1, 2]") + '\n[forces]\n"5" = 1\n',
                        "forces.5: the run has only 3 steps (0 = Prefill to 2; it stopped: eos), so step 5 never"),
    "deep-toml": ("x = " + "[" * 100_000, "nested too deeply"),
    "nested-70": ("x = " + "[" * 70 + "]" * 70 + "\n", "nested too deeply"),
    "long-number": ("order = " + "1" * 5001 + "\n", "more than 4300 digits"),
    "placeholder-attribute": (lesson_text(title="{piece.__class__}"), "a placeholder is a bare name such as {piece}"),
    "placeholder-index": (lesson_text(title="{ids[0]}"), "a placeholder is a bare name such as {ids}"),
    "placeholder-conversion": (lesson_text(title="{piece!r}"), "a placeholder is a bare name such as {piece}"),
    "placeholder-positional": (lesson_text(title="{0}"), "unknown placeholder or stray brace: '0'"),
    "not-utf8": (b"title = \xff\xfe\n", "not UTF-8 text"),
}


def teaching_doc() -> dict:
    return json.loads(default_params_path().read_text(encoding="utf-8"))


def _changed(change) -> str:
    doc = teaching_doc()
    change(doc)
    return json.dumps(doc)


def _set(path, value):
    def change(doc):
        *parents, last = path
        for key in parents:
            doc = doc[key]
        doc[last] = value
    return change


BROKEN_PARAMS = {
    "true-weight": (_changed(_set(("tensors", "embed", 0, 0), True)), "tensors.embed[0][0]: true, expected a number"),
    "text-weight": (_changed(_set(("tensors", "embed", 1, 2), "0.5")), "tensors.embed[1][2]: text '0.5'"),
    "ragged": (_changed(_set(("tensors", "embed", 1), [0.0])), "tensors.embed: ragged"),
    "huge-weight": (_changed(_set(("tensors", "embed", 0, 0), 10**400)), "too large for a float"),
    "duplicate-piece": (_changed(lambda d: d["vocabulary"]["pieces"].__setitem__(4, d["vocabulary"]["pieces"][3])),
                        "vocabulary.pieces[4]: '学习' is already piece 3"),
    "empty-piece": (_changed(_set(("vocabulary", "pieces", 4), "")), "vocabulary.pieces[4]: is empty"),
    "deep-json": ("[" * 100_000, "nested too deeply"),
    "nested-70": ('{"format": ' + "[" * 70 + "]" * 70 + "}", "nested too deeply"),
    "long-number": ('{"format": ' + "1" * 5001 + "}", "more than 4300 digits"),
}


def write(path, content) -> str:
    (path.write_bytes if isinstance(content, bytes) else lambda t: path.write_text(t, encoding="utf-8"))(content)
    return str(path)


@pytest.fixture
def special_files(tmp_path):
    """name -> (a path that is not a usable file, words its message holds)."""
    fifo = tmp_path / "pipe-without-writer"
    os.mkfifo(fifo)
    folder = tmp_path / "a-folder.toml"
    folder.mkdir()
    return {"fifo": (str(fifo), "is a pipe (FIFO)"), "folder": (str(folder), "is a folder"),
            "dev-zero": ("/dev/zero", "is a character device")}


def _patched_u32(raw: bytes, key: str, value: int) -> bytes:
    """`raw` with the uint32 metadata value of `key` replaced."""
    at = raw.index(key.encode() + struct.pack("<I", GGUFValueType.UINT32)) + len(key) + 4
    return raw[:at] + struct.pack("<I", value) + raw[at + 4:]


@pytest.fixture(scope="module")
def broken_ggufs(tmp_path_factory):
    """name -> (path of a broken GGUF file, words its message holds)."""
    folder = tmp_path_factory.mktemp("broken-gguf")
    tensors = llama_tensors(np.random.default_rng(3))
    good = write_llama(folder / "good.gguf", tensors).read_bytes()
    files = {
        "layers-ffffffff": (_patched_u32(good, "llama.block_count", 0xFFFFFFFF),
                            "llama.block_count = 4294967295"),
        "zero-heads": (_patched_u32(good, "llama.attention.head_count", 0), "llama.attention.head_count = 0"),
        "zero-kv-heads": (_patched_u32(good, "llama.attention.head_count_kv", 0),
                          "llama.attention.head_count_kv = 0"),
        "huge-tensor-count": (good[:8] + struct.pack("<Q", 2**62) + good[16:], "announces"),
    }
    out = {name: (write(folder / f"{name}.gguf", raw), words) for name, (raw, words) in files.items()}
    for name, key, value, vtype in (
            ("alignment-text", "general.alignment", "32", GGUFValueType.STRING),
            ("alignment-nan", "general.alignment", float("nan"), GGUFValueType.FLOAT32),
            ("alignment-array", "general.alignment", [32, 64], GGUFValueType.ARRAY),
            ("eot-id-text", "tokenizer.ggml.eot_token_id", "x", GGUFValueType.STRING),
            ("head-size-text", "llama.attention.key_length", "16", GGUFValueType.STRING)):
        path = write_llama(folder / f"{name}.gguf", tensors, extra_kv={key: (value, vtype)})
        out[name] = (str(path), key)
    return out
