"""The prompt bar with a model whose file carries a Qwen3-style chat template: the chat box
renders that template, a Thinking box appears beside it (off: enable_thinking false), and a
template that fails falls back to the plain prompt with its message shown."""

import gguf
import numpy as np
import pytest
from PySide6.QtCore import Qt

import chat_templates
from gguf_files import llama_tensors, write_llama
from teacher import at_rest

from explorer.core.gguf.llama import load_llama
from explorer.core.tokens.chat import chat_turn


def tiny_with_template(path, template):
    extra = {"tokenizer.chat_template": (template, gguf.GGUFValueType.STRING)}
    return load_llama(write_llama(path, llama_tensors(np.random.default_rng(5)), extra_kv=extra))


def wait_idle(qtbot, window):
    qtbot.waitUntil(lambda: at_rest(window) and not window.session.behind, timeout=60_000)


@pytest.fixture
def qwen3_like(qtbot, window, tmp_path):
    model = tiny_with_template(tmp_path / "qwen3.gguf", chat_templates.QWEN3)
    window.session.set_model(model, prompt_ids=tuple(model.vocab.encode("hi")))
    wait_idle(qtbot, window)
    return window


def enter(qtbot, window, text):
    bar = window.prompt_bar
    bar.edit.setFocus()
    bar.edit.setText(text)
    qtbot.keyClick(bar.edit, Qt.Key.Key_Return)
    wait_idle(qtbot, window)


def test_the_thinking_box_switches_the_templates_enable_thinking(qtbot, qwen3_like):
    s, bar, text = qwen3_like.session, qwen3_like.prompt_bar, "the then"
    vocab = s.model.vocab
    qtbot.waitUntil(bar.chat_check.isVisible)
    assert bar.thinking_check.isVisible() and bar.thinking_check.text() == "Thinking"
    assert bar.thinking_check.isChecked()
    enter(qtbot, qwen3_like, text)
    bar.chat_check.setChecked(True)
    wait_idle(qtbot, qwen3_like)
    assert s.prompt_ids == tuple(vocab.encode(chat_turn(vocab, text, thinking=True)))
    bar.thinking_check.setChecked(False)
    wait_idle(qtbot, qwen3_like)
    assert s.prompt_ids == tuple(vocab.encode(chat_turn(vocab, text, thinking=False)))
    assert vocab.decode(s.prompt_ids).endswith("<think>\n\n</think>\n\n")
    bar.edit.clearFocus()
    bar.sync()
    assert bar.edit.text() == text and bar.chat_check.isChecked() and not bar.thinking_check.isChecked()
    assert qwen3_like.errors == []


def test_no_thinking_box_for_a_template_without_the_switch(qtbot, window, tmp_path):
    model = tiny_with_template(tmp_path / "qwen25.gguf", chat_templates.QWEN25)
    window.session.set_model(model, prompt_ids=tuple(model.vocab.encode("hi")))
    wait_idle(qtbot, window)
    qtbot.waitUntil(window.prompt_bar.chat_check.isVisible)
    assert not window.prompt_bar.thinking_check.isVisible()


def test_a_failing_template_falls_back_to_the_plain_prompt_with_its_message(qtbot, window, tmp_path):
    model = tiny_with_template(tmp_path / "bad.gguf", "{{ raise_exception('roles must alternate') }}")
    window.session.set_model(model, prompt_ids=tuple(model.vocab.encode("hi")))
    wait_idle(qtbot, window)
    enter(qtbot, window, "the then")
    window.prompt_bar.chat_check.setChecked(True)
    wait_idle(qtbot, window)
    assert window.session.prompt_ids == tuple(model.vocab.encode("the then"))
    assert not window.prompt_bar.chat_check.isChecked()
    assert any("roles must alternate" in e and "plain text" in e for e in window.errors)
