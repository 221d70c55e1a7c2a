"""A corpus of broken files and out-of-range values, fed to the command line (the
window's open dialogs get the same corpus in test_window_dialogs.py): each gets a sentence naming the file (or the flag) and what was
expected, never a traceback, a hang or a memory bomb."""

from __future__ import annotations

import json
import os
import stat
import struct

import numpy as np
import pytest
from gguf import GGUFValueType
from test_gguf import llama_tensors, write_llama

from explorer import cli
from explorer.core.limits import MAX_BEAMS, MAX_LESSON_BYTES, MAX_NEW_TOKENS, MAX_PARAMS_BYTES, MAX_SEED
from explorer.core.teaching import default_params_path

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


def run_cli(capsys, *argv) -> tuple[int, str]:
    """(exit status, stderr) of `explorer ARGV`; an uncaught exception fails the test."""
    status = cli.main(list(argv))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return status, err


# ---------------------------------------------------------------------------- the command line

BROKEN_FILES = [("--lesson", f"{name}.toml", *case) for name, case in BROKEN_LESSONS.items()] + \
               [("--params", f"{name}.json", *case) for name, case in BROKEN_PARAMS.items()]


@pytest.mark.parametrize("flag, file_name, text, words", BROKEN_FILES, ids=[f[1] for f in BROKEN_FILES])
def test_a_broken_lesson_or_parameter_file_is_a_sentence_naming_the_file(flag, file_name, text, words, tmp_path,
                                                                         capsys):
    status, err = run_cli(capsys, "trace", flag, write(tmp_path / file_name, text))
    assert status == 2 and file_name in err and words in err, err


def test_special_files_and_big_files_are_refused_before_reading(tmp_path, capsys, special_files):
    for path, words in special_files.values():
        for flag in ("--params", "--lesson"):
            status, err = run_cli(capsys, "trace", flag, path)
            assert status == 2 and words in err and os.path.basename(path) in err, err
    big_lesson, big_params = tmp_path / "big.toml", tmp_path / "big.json"
    for path, limit in ((big_lesson, MAX_LESSON_BYTES), (big_params, MAX_PARAMS_BYTES)):
        with open(path, "wb") as f:
            f.truncate(limit + 1)                # sparse: nothing is written to the disk
    status, err = run_cli(capsys, "trace", "--lesson", str(big_lesson))
    assert status == 2 and f"big.toml: {MAX_LESSON_BYTES + 1:,} bytes, more than a lesson file may hold" in err
    status, err = run_cli(capsys, "trace", "--params", str(big_params))
    assert status == 2 and "big.json" in err and "more than a parameter file may hold" in err


def test_counts_have_one_limit_and_one_message_in_the_command_line_and_in_lessons(tmp_path, capsys):
    status, err = run_cli(capsys, "trace", "--mode", "beam", "--beam-width=100000000000000000000")
    assert status == 2 and f"num_beams = 100000000000000000000: expected an integer from 1 to {MAX_BEAMS}" in err
    status, err = run_cli(capsys, "trace", "--mode", "beam", "--beam-width", "1000000")
    text, words = BROKEN_LESSONS["huge-beam"]
    assert words in err
    status, err = run_cli(capsys, "trace", "--mode", "beam", "--length-penalty", "1e308")
    assert status == 2 and "length_penalty = 1e+308: expected a number from -10 to 10" in err
    status, err = run_cli(capsys, "trace", "--max-new-tokens", str(MAX_NEW_TOKENS + 1))
    assert status == 2 and f"max_new_tokens = {MAX_NEW_TOKENS + 1}: expected an integer from 1 to {MAX_NEW_TOKENS}" \
        in err
    for command in (("trace",), ("sample", "--logits", "2,1,0")):
        status, err = run_cli(capsys, *command, "--top=-1")
        assert status == 2 and "--top = -1: expected an integer from 1 to 1000" in err, err
    status, err = run_cli(capsys, "trace", "--prompt", "我爱" * 1100)
    assert status == 2 and "prompt: 2,200 tokens, more than the 2,048 a run may start from" in err
    status, err = run_cli(capsys, "sample", "--logits", "2,1,0", "--step", "1" + "0" * 40)
    assert status == 2 and "--step = a number of about 41 digits" in err


def test_silent_wrong_results_now_say_so(capsys):
    status, err = run_cli(capsys, "trace", "--force", "5:1")        # the run ends at step 2 (EOS)
    assert status == 2 and "--force 5:1: the run has only 3 steps" in err and "step 5 never happens" in err
    status, err = run_cli(capsys, "trace", "--force", "0:4", "--force", "0:5")
    assert status == 2 and "step 0 is already forced to 4" in err
    with pytest.raises(SystemExit) as stop:
        cli.main(["trace", "--model", ""])
    assert stop.value.code == 2 and "--model '': expected teaching" in capsys.readouterr().err
    # forces given in any order all count: step 1's force is not dropped by step 0's
    assert cli.main(["trace", "--force", "1:5", "--force", "0:4", "--json"]) == 0
    steps = json.loads(capsys.readouterr().out)["steps"]
    assert [s["selected_id"] for s in steps[:2]] == [4, 5] and all(s["forced"] for s in steps[:2])


def test_a_prompt_that_is_not_utf8_is_a_message_on_a_real_model(smollm2, capsys):
    bad = b"caf\xe9".decode("utf-8", "surrogateescape")         # Latin-1 bytes from a terminal
    status, err = run_cli(capsys, "trace", "--model", "smollm2", "--prompt", bad, "--max-new-tokens", "1")
    assert status == 2 and "prompt: character 4 is not valid text (byte 0xE9): expected UTF-8" in err


# ---------------------------------------------------------------------------- GGUF files

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


def test_a_broken_gguf_is_refused_quickly_with_its_name(broken_ggufs, capsys):
    for name, (path, words) in broken_ggufs.items():
        status, err = run_cli(capsys, "trace", "--model", path, "--max-new-tokens", "1")
        assert status == 2 and f"{name}.gguf" in err and words in err, (name, err)


def test_a_gguf_that_is_a_fifo_does_not_block(tmp_path, capsys):
    from explorer.core.gguf import GGUFError, GGUFFile
    fifo = tmp_path / "model.gguf"
    os.mkfifo(fifo)
    with pytest.raises(GGUFError, match="model.gguf: is a pipe"):
        GGUFFile(fifo)


# ---------------------------------------------------------------------------- writing

def test_fit_refuses_to_replace_anything_but_a_regular_file(tmp_path, capsys, special_files):
    for path, words in special_files.values():
        if path.startswith("/dev/"):
            continue                                 # never aim a write at a real device
        status, err = run_cli(capsys, "fit", "--out", path)
        assert status == 2 and "refusing to replace it" in err and words in err
    fifo = special_files["fifo"][0]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)          # still a FIFO
    link = tmp_path / "link-to-fifo.json"
    link.symlink_to(fifo)
    status, err = run_cli(capsys, "fit", "--out", str(link))
    assert status == 2 and "is a pipe (FIFO)" in err and link.is_symlink()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]      # no temporary file left
    target = tmp_path / "teaching-copy.json"
    target.write_text("old", encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    status, err = run_cli(capsys, "fit", "--out", str(link))       # a link is never written through
    assert status == 2 and f"is a symbolic link to {target}, which is a regular file; refusing" in err
    assert link.is_symlink() and target.read_text(encoding="utf-8") == "old"
    assert cli.main(["fit", "--out", str(target)]) == 0               # the regular file itself is replaced
    assert target.read_bytes() == default_params_path().read_bytes()
    status, err = run_cli(capsys, "fit", "--out", str(tmp_path / "no-such-folder" / "t.json"))
    assert status == 2 and "does not exist" in err


def test_a_device_is_never_a_write_target():
    from explorer.core.errors import ExplorerError
    from explorer.core.userfile import check_replaceable
    with pytest.raises(ExplorerError, match="is a character device; refusing to replace it"):
        check_replaceable(os.devnull)            # only looked at (lstat), never opened
