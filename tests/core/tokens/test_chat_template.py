"""Chat templates from the file: the real templates of Qwen2.5, Qwen3, Llama 3.2, Phi-3.5 and
Gemma 2 render the prompt each model card shows (written out by hand below); Qwen3's thinking
switch; a rendered turn's ids read back to the user's text; hostile or broken templates fall
back with a message and never hang."""

from dataclasses import replace
from datetime import datetime

import pytest

import chat_templates as real
from tokenizer_files import write_tokenizer_file

from explorer.core.errors import ChatTemplateError
from explorer.core.gguf.reader import GGUFFile
from explorer.core.tokens.chat import chat_message, chat_turn, has_chat_format, read_chat, thinking_switch
from explorer.core.tokens.from_gguf import vocabulary_from_gguf
from explorer.core.tokens.template import Limits, has_thinking_switch, render_chat

DAY = datetime(2025, 3, 1)
QUICK = Limits(seconds=0.2)


def test_qwen25_writes_its_default_system_prompt():
    assert render_chat(real.QWEN25, "Hi!").text == (
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n")
    assert render_chat(real.QWEN25, "Hi!", system="Be brief.").text == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n")


def test_qwen3_thinks_unless_told_not_to():
    assert has_thinking_switch(real.QWEN3)
    assert not any(has_thinking_switch(t) for t in (real.QWEN25, real.LLAMA32, real.PHI35, real.GEMMA2))
    on = "<|im_start|>user\n你好<|im_end|>\n<|im_start|>assistant\n"
    assert render_chat(real.QWEN3, "你好").text == on
    assert render_chat(real.QWEN3, "你好", thinking=True).text == on
    assert render_chat(real.QWEN3, "你好", thinking=False).text == on + "<think>\n\n</think>\n\n"


def test_llama32_writes_bos_headers_and_todays_date():
    assert render_chat(real.LLAMA32, "Hi!", bos="<|begin_of_text|>", now=DAY).text == (
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
        "Cutting Knowledge Date: December 2023\nToday Date: 01 Mar 2025\n\n<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n")


def test_phi35_and_gemma2():
    assert render_chat(real.PHI35, "Hi!").text == "<|user|>\nHi!<|end|>\n<|assistant|>\n"
    assert render_chat(real.GEMMA2, " Hi! ", bos="<bos>").text == (
        "<bos><start_of_turn>user\nHi!<end_of_turn>\n<start_of_turn>model\n")      # content | trim
    refused = render_chat(real.GEMMA2, "Hi!", system="Be brief.", bos="<bos>")
    assert refused.text is None and "System role not supported" in refused.problem


@pytest.mark.parametrize("template, expected", [
    ("{% for i in range(90000) %}{% for j in range(90000) %}{% endfor %}{% endfor %}", "longer than 0.2 s"),
    ("{% for i in range(10**7) %}{% endfor %}", "a range of 10,000,000 items"),
    ("{% for i in range(50000) %}{{ 'x' * 50 }}{% endfor %}", "output passed"),
    ("{% set n = 100000 %}{{ 10 ** n ** n }}", "a power of"),
    ("{{ 'x' * 1000000000 }}", "repeated text"),
    ("{{ ''.__class__.__mro__ }}", "SecurityError"),
    ("{{ messages.append(1) }}", "SecurityError"),
    ("{% for m in messages %}{{ m.content }", "TemplateSyntaxError"),
    ("{{ raise_exception('Only user and assistant roles are supported!') }}",
     "the template raised: Only user and assistant roles are supported!"),
    ("{{ 1 / 0 }}", "ZeroDivisionError"),
])
def test_a_hostile_or_broken_template_falls_back_with_a_message(template, expected):
    out = render_chat(template, "hi", limits=QUICK)
    assert out.text is None and expected in out.problem and out.problem.startswith("the chat template")


def test_a_template_too_long_is_not_rendered():
    out = render_chat("x" * 200_001, "hi")
    assert out.text is None and "200,001 characters" in out.problem


@pytest.fixture(scope="module")
def vocabs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("chat")
    out = {}
    for name in ("qwen2", "llama-bpe", "spm-gemma"):
        write_tokenizer_file(folder / f"{name}.gguf", name)
        out[name] = vocabulary_from_gguf(GGUFFile(folder / f"{name}.gguf"))
    return out


def test_a_rendered_turn_is_one_control_token_per_marker_and_reads_back(vocabs):
    vocab = replace(vocabs["qwen2"], chat_template=real.QWEN3)
    assert has_chat_format(vocab) and thinking_switch(vocab)
    im_start, im_end = vocab.tokens.index("<|im_start|>"), vocab.tokens.index("<|im_end|>")
    for thinking in (None, False):
        ids = vocab.encode(chat_turn(vocab, "What is 2+2?", thinking))
        assert ids[0] == im_start and ids.count(im_start) == 2 and ids.count(im_end) == 1
        assert chat_message(vocab, ids) == "What is 2+2?"
    no_think = vocab.encode(chat_turn(vocab, "hi", thinking=False))
    assert read_chat(vocab, no_think) == ("hi", False)
    assert vocab.tokens.index("<think>") in no_think        # a user-defined token, one id
    assert chat_message(vocab, vocab.encode("What is 2+2?")) is None


def test_a_template_that_writes_bos_gives_one_bos(vocabs):
    llama = replace(vocabs["llama-bpe"], chat_template=real.LLAMA32)
    ids = llama.encode(chat_turn(llama, "Hi!"))
    assert ids[0] == llama.specials["bos"] and ids.count(llama.specials["bos"]) == 1
    assert chat_message(llama, ids) == "Hi!"
    gemma = replace(vocabs["spm-gemma"], chat_template=real.GEMMA2)
    ids = gemma.encode(chat_turn(gemma, "我爱学习"))
    assert ids[:2] == [gemma.specials["bos"], gemma.tokens.index("<start_of_turn>")]
    assert chat_message(gemma, ids) == "我爱学习"


def test_a_failing_template_raises_for_the_plain_prompt(vocabs):
    vocab = replace(vocabs["qwen2"], chat_template="{{ raise_exception('no system role') }}")
    assert has_chat_format(vocab)
    with pytest.raises(ChatTemplateError, match="the template raised: no system role; the prompt is the plain text"):
        chat_turn(vocab, "hi")
    assert chat_message(vocab, vocab.encode("hi")) is None


def test_chatml_stays_the_fallback_of_a_chatml_vocabulary_without_a_template(vocabs):
    vocab = vocabs["qwen2"]
    assert vocab.chat_template is None and has_chat_format(vocab) and not thinking_switch(vocab)
    assert chat_turn(vocab, "hi") == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert not has_chat_format(vocabs["spm-gemma"])
