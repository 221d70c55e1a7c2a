"""A corpus of broken files and out-of-range values, fed to the command line (the
window's open dialogs get the same corpus in test_window_dialogs.py): each gets a sentence naming the file (or the flag) and what was
expected, never a traceback, a hang or a memory bomb."""

from __future__ import annotations

import json
import os
import stat

import pytest

from broken_files import BROKEN_LESSONS, BROKEN_PARAMS, broken_ggufs, special_files, write  # noqa: F401
from chat_templates import BROKEN_TEMPLATES

from explorer.cli import main as cli
from explorer.core.limits import MAX_BEAMS, MAX_LESSON_BYTES, MAX_NEW_TOKENS, MAX_PARAMS_BYTES
from explorer.core.models.teaching import default_params_path

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
    assert status == 2 and f"--beam-width '100000000000000000000' is out of range; expected an integer from 1 to " \
                           f"{MAX_BEAMS}" in err
    status, err = run_cli(capsys, "trace", "--mode", "beam", "--beam-width", "1000000")
    assert f"--beam-width '1000000' is out of range; expected an integer from 1 to {MAX_BEAMS}" in err
    status, err = run_cli(capsys, "trace", "--mode", "beam", "--length-penalty", "1e308")
    assert status == 2 and "--length-penalty '1e308' is out of range; expected a number from -10 to 10" in err
    status, err = run_cli(capsys, "trace", "--max-new-tokens", str(MAX_NEW_TOKENS + 1))
    assert status == 2 and f"--max-new-tokens '{MAX_NEW_TOKENS + 1}' is out of range; expected an integer from 1 to " \
                           f"{MAX_NEW_TOKENS:,}" in err
    for command in (("trace",), ("sample", "--logits", "2,1,0")):
        status, err = run_cli(capsys, *command, "--top=-1")
        assert status == 2 and "--top '-1' is out of range; expected an integer from 1 to 1,000" in err, err
    status, err = run_cli(capsys, "trace", "--prompt", "我爱" * 1100)
    assert status == 2 and "prompt: 2,200 tokens, more than the 2,048 a run may start from" in err
    status, err = run_cli(capsys, "sample", "--logits", "2,1,0", "--step", "1" + "0" * 40)
    assert status == 2 and f"--step '{'1' + '0' * 23}'… (41 characters) is out of range" in err


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

def test_a_broken_gguf_is_refused_quickly_with_its_name(broken_ggufs, capsys):
    for name, (path, words) in broken_ggufs.items():
        status, err = run_cli(capsys, "trace", "--model", path, "--max-new-tokens", "1")
        assert status == 2 and f"{name}.gguf" in err and words in err, (name, err)


def test_a_gguf_that_is_a_fifo_does_not_block(tmp_path, capsys):
    from explorer.core.gguf.reader import GGUFError, GGUFFile
    fifo = tmp_path / "model.gguf"
    os.mkfifo(fifo)
    with pytest.raises(GGUFError, match="model.gguf: is a pipe"):
        GGUFFile(fifo)


# ---------------------------------------------------------------------------- chat templates

@pytest.mark.parametrize("name", sorted(BROKEN_TEMPLATES))
def test_a_broken_chat_template_renders_nothing_and_says_why(name):
    from explorer.core.tokens.template import Limits, render_chat
    template, words = BROKEN_TEMPLATES[name]
    out = render_chat(template, "hi", limits=Limits(seconds=0.2))
    assert out.text is None and out.problem.startswith("the chat template") and words in out.problem, out.problem


def test_a_gguf_with_a_broken_chat_template_runs_on_the_plain_prompt_and_says_why(tmp_path, capsys):
    """The template comes in the file (`tokenizer.chat_template`): `--chat` says what is wrong
    with it and runs the plain prompt, never a traceback, a hang or a lost prompt."""
    import numpy as np
    from gguf import GGUFValueType
    from gguf_files import llama_tensors, write_llama
    tensors = llama_tensors(np.random.default_rng(5))

    def prompt_of(path, *flags) -> tuple[list[int], str]:
        status = cli.main(["trace", "--model", str(path), "--prompt", "the", *flags, "--max-new-tokens", "1",
                           "--json"])
        out, err = capsys.readouterr()
        assert status == 0 and "Traceback" not in err, err
        return json.loads(out)["prompt_ids"], err

    plain, _ = prompt_of(write_llama(tmp_path / "plain.gguf", tensors))
    for name, (template, words) in BROKEN_TEMPLATES.items():
        if not template:                     # an empty template in a file is no template: ChatML is used
            continue
        path = write_llama(tmp_path / f"{name}.gguf", tensors,
                           extra_kv={"tokenizer.chat_template": (template, GGUFValueType.STRING)})
        ids, err = prompt_of(path, "--chat")
        assert ids == plain, name
        assert err.startswith("--chat: the chat template") and words in err and \
            "the prompt is the plain text" in err, (name, err)


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
