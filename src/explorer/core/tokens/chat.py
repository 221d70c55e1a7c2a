"""A user turn as the model reads it (`chat_turn`): the file's own chat template rendered
(`template.render_chat`), or ChatML for a vocabulary with ChatML's markers and no template;
whether a vocabulary has a chat format and a thinking switch; the user's text read back
from a prompt's ids (`chat_message`)."""

from __future__ import annotations

from ..errors import ChatTemplateError, ExplorerError
from .bpe import BPEVocabulary
from .template import Rendered, has_thinking_switch, render_chat

CHAT_MARKERS = ("<|im_start|>", "<|im_end|>")   # the ChatML control tokens chat_prompt writes
_PLACEHOLDER = "\0"                              # the user's text while a turn is split around it


def chat_prompt(user_text: str, system: str | None = None) -> str:
    """The ChatML text of one user turn (after a system turn, if `system`), ending where the
    assistant's answer begins."""
    head = f"<|im_start|>system\n{system}<|im_end|>\n" if system else ""
    return f"{head}<|im_start|>user\n{user_text}<|im_end|>\n<|im_start|>assistant\n"


def speaks_chatml(vocab) -> bool:
    """Does the vocabulary have ChatML's turn markers as control tokens (SmolLM2 does; another
    GGUF may use another template, and `chat_prompt` would then be plain text to it)?"""
    return isinstance(vocab, BPEVocabulary) and all(vocab.control_id(m) is not None for m in CHAT_MARKERS)


def has_chat_format(vocab) -> bool:
    """A chat template of the file's own, or ChatML's markers: the chat toggle is offered."""
    return bool(getattr(vocab, "chat_template", None)) or speaks_chatml(vocab)


def thinking_switch(vocab) -> bool:
    """Does the model's template offer thinking on and off (Qwen3's `enable_thinking`)?"""
    return has_thinking_switch(getattr(vocab, "chat_template", None))


def render_turn(vocab, user_text: str, thinking: bool | None = None) -> Rendered:
    """One user turn as the model's chat format writes it (see `chat_turn`), or why not."""
    template = getattr(vocab, "chat_template", None)
    if not template:
        if speaks_chatml(vocab):
            return Rendered(chat_prompt(user_text, vocab.chat_system))
        return Rendered(None, "the model has no chat template")
    bos, eos = (_token_text(vocab, role) for role in ("bos", "eos"))
    rendered = render_chat(template, user_text, bos=bos, eos=eos, thinking=thinking)
    if rendered.text is not None and getattr(vocab, "add_bos", False) and bos and rendered.text.startswith(bos):
        return Rendered(rendered.text[len(bos):])      # the tokenizer adds it: one <bos>, not two
    return rendered


def chat_turn(vocab, user_text: str, thinking: bool | None = None) -> str:
    """One user turn as the model's own chat template writes it, ending where the assistant's
    answer begins: the file's template (Jinja, sandboxed), else ChatML after the default
    system prompt the template names, if any (SmolLM2's; without it that model loops).
    thinking: the template's `enable_thinking` (None: its default). Raises ChatTemplateError
    (the caller falls back to the plain text) when the template fails or passes a limit."""
    rendered = render_turn(vocab, user_text, thinking)
    if rendered.text is None:
        raise ChatTemplateError(f"{rendered.problem}; the prompt is the plain text")
    return rendered.text


def read_chat(vocab, ids) -> tuple[str, bool | None] | None:
    """(the user's text, the thinking setting) if `ids` are exactly `chat_turn(vocab, text,
    thinking)` encoded for some text and setting, else None (also for a vocabulary without
    a chat format)."""
    if not has_chat_format(vocab):
        return None
    ids = [int(i) for i in ids]
    body = ids[1:] if getattr(vocab, "add_bos", False) and ids[:1] == [vocab.specials.get("bos")] else ids
    try:
        raw = b"".join(vocab.pieces[i] for i in body).decode("utf-8")
    except (IndexError, UnicodeDecodeError):
        return None
    for thinking in ((None, False, True) if thinking_switch(vocab) else (None,)):
        try:
            parts = chat_turn(vocab, _PLACEHOLDER, thinking).split(_PLACEHOLDER)
        except ChatTemplateError:
            return None
        if len(parts) != 2:
            continue
        head, tail = parts
        if len(raw) <= len(head) + len(tail) or not (raw.startswith(head) and raw.endswith(tail)):
            continue
        text = raw[len(head):len(raw) - len(tail)]
        try:
            if vocab.encode(chat_turn(vocab, text, thinking)) == ids:
                return text, thinking
        except ExplorerError:
            continue
    return None


def chat_message(vocab, ids) -> str | None:
    """The user's text if `ids` are exactly `chat_turn(vocab, text)` encoded (with any
    thinking setting), else None: what a window shows of a wrapped prompt, whoever wrapped it."""
    found = read_chat(vocab, ids)
    return None if found is None else found[0]


def _token_text(vocab, role: str) -> str:
    """The text of the vocabulary's `role` token ("<|begin_of_text|>"), "" if it has none."""
    token_id = vocab.specials.get(role)
    tokens = getattr(vocab, "tokens", ())
    return tokens[token_id] if token_id is not None and token_id < len(tokens) else ""
