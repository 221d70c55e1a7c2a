"""ChatML, the chat template of SmolLM2 and its kind: a user turn as the model reads it
(`chat_turn`), whether a vocabulary speaks it, and the user's text read back from its ids."""

from __future__ import annotations

from .bpe import BPEVocabulary

CHAT_MARKERS = ("<|im_start|>", "<|im_end|>")   # the ChatML control tokens chat_prompt writes


def chat_prompt(user_text: str, system: str | None = None) -> str:
    """The ChatML text of one user turn (after a system turn, if `system`), ending where the
    assistant's answer begins."""
    head = f"<|im_start|>system\n{system}<|im_end|>\n" if system else ""
    return f"{head}<|im_start|>user\n{user_text}<|im_end|>\n<|im_start|>assistant\n"


def chat_turn(vocab: BPEVocabulary, user_text: str) -> str:
    """One user turn as the model's own chat template writes it: after the default system
    prompt the template names, if any (SmolLM2's; without it that model loops)."""
    return chat_prompt(user_text, vocab.chat_system)


def speaks_chatml(vocab) -> bool:
    """Does the vocabulary have ChatML's turn markers as control tokens (SmolLM2 does; another
    GGUF may use another template, and `chat_prompt` would then be plain text to it)?"""
    return isinstance(vocab, BPEVocabulary) and all(vocab.control_id(m) is not None for m in CHAT_MARKERS)


def chat_message(vocab, ids) -> str | None:
    """The user's text if `ids` are exactly `chat_turn(vocab, text)` encoded, else None (also
    for a vocabulary without ChatML): what a window shows of a wrapped prompt, whoever
    wrapped it."""
    if not speaks_chatml(vocab):
        return None
    try:
        raw = b"".join(vocab.pieces[int(i)] for i in ids).decode("utf-8")
    except (IndexError, UnicodeDecodeError):
        return None
    head, tail = chat_turn(vocab, "\0").split("\0")
    if len(raw) <= len(head) + len(tail) or not (raw.startswith(head) and raw.endswith(tail)):
        return None
    text = raw[len(head):-len(tail)]
    return text if vocab.encode(chat_turn(vocab, text)) == [int(i) for i in ids] else None
