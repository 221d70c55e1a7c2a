"""The prompt bar: the prompt box, the chat-template box, and for a logits lesson's model
the logits editor in place of the prompt."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from PySide6.QtWidgets import QCheckBox, QLabel, QLineEdit, QToolBar

from ...core.tokens.chat import chat_turn, has_chat_format, read_chat, thinking_switch
from ...core.errors import ChatTemplateError, ExplorerError
from ...i18n import add_messages, tr
from ...lessons.models import CONTEXT, CONTEXT_ID, logits_model
from ...session import Session
from ...session.changes import logits_list

NEW_PIECES = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

add_messages({
    "chat.label": {"en": "Chat template", "zh": "对话模板"},
    "chat.tip": {"en": "Wrap the typed text in the model's chat template (a system turn, your text as the "
                       "user's turn, then the assistant's turn begins). The box keeps showing your text.",
                 "zh": "用模型的对话模板包装输入的文字（系统消息、你的文字作为用户消息，然后是助手的回答）。"
                       "输入框里仍然显示你的文字。"},
    "thinking.label": {"en": "Thinking", "zh": "思考"},
    "thinking.tip": {"en": "Let the model reason before it answers (its template's thinking mode); "
                           "off asks for the answer directly.",
                     "zh": "让模型先推理再回答（模板的思考模式）；关闭则直接要求回答。"},
    "logits.label": {"en": "Logits:", "zh": "Logits："},
    "logits.tip": {"en": "One number per candidate, separated by commas (e.g. 2, 1, 0); press Enter to "
                         "rebuild the model. More numbers add candidates named A, B, …",
                   "zh": "每个候选一个数，用逗号分隔（例如 2, 1, 0）；按回车重建模型。多写几个数会增加名为A、B…的候选"},
    "logits.bad": {"en": "logits {text!r}: {problem}", "zh": "logits {text!r}：{problem}"},
    "logits.not_number": {"en": "{item!r} is not a number", "zh": "{item!r}不是数字"},
    "logits.not_finite": {"en": "{item!r} is not a finite number", "zh": "{item!r}不是有限的数"},
    "logits.empty": {"en": "expected at least one number", "zh": "至少需要一个数"},
    "logits.too_many": {"en": "at most {n} numbers", "zh": "最多{n}个数"},
    "prompt.label": {"en": "Prompt:", "zh": "提示："},
    "prompt.tip": {"en": "Type a prompt the model's vocabulary can encode and press Enter",
                   "zh": "输入模型词表能编码的提示，按回车"},
})


class PromptBar:
    """The prompt's widgets in `toolbar`. Enter sets the session's prompt (or rebuilds a
    logits model) through `guarded`, which shows a rejected one and returns False; an
    accepted one gives the keys back to the player (`give_back`)."""

    def __init__(self, session: Session, toolbar: QToolBar, guarded: Callable[..., bool],
                 give_back: Callable[[], None]):
        self.session, self.guarded, self.give_back = session, guarded, give_back
        self._synced_for = (None, None)              # (model, prompt ids) the prompt box last showed
        self._chat_message_for = (None, None, None)  # (vocabulary, prompt ids, read_chat of them)
        self.label = QLabel()
        self.edit = QLineEdit()
        self.edit.setMinimumWidth(260)
        self.edit.returnPressed.connect(self._entered)
        self.chat_check = QCheckBox()
        self.chat_check.toggled.connect(self._chat_toggled)
        toolbar.addWidget(self.label)
        toolbar.addWidget(self.edit)
        self._chat_action = toolbar.addWidget(self.chat_check)     # shown for a model with a chat template
        self.thinking_check = QCheckBox()
        self.thinking_check.setChecked(True)
        self.thinking_check.toggled.connect(self._chat_toggled)
        self._thinking_action = toolbar.addWidget(self.thinking_check)   # for a template with a thinking switch
        self.sync()

    def _entered(self) -> None:
        changed = (self.guarded(self._logits_entered, self.edit.text()) if self.editing_logits
                   else self.guarded(self.set_prompt_text, self.edit.text()))
        if changed:
            self.edit.setModified(False)      # entered: no longer a pending edit
            if self.edit.hasFocus():
                self.give_back()              # the arrows step through the new run again
        else:
            self.sync(force=True)

    def left(self, field) -> None:
        """Escape left `field`: an edit of the prompt box not entered is dropped."""
        if field is self.edit:
            self.sync(force=True)

    def chat_available(self, model=None) -> bool:
        """Has the model a chat format (its file's template, or ChatML's turn markers)?"""
        model = self.session.requested_model if model is None else model
        return has_chat_format(model.vocab)

    def prompt_ids(self, model, text: str) -> tuple[int, ...]:
        """Prompt ids of the typed text for `model`, in the chat template when it is ticked
        (with thinking as its box says, where the template has the switch)."""
        chat = self.chat_check.isChecked() and self.chat_available(model)
        thinking = self.thinking_check.isChecked() if thinking_switch(model.vocab) else None
        return tuple(model.vocab.encode(chat_turn(model.vocab, text, thinking) if chat else text))

    def set_prompt_text(self, text: str) -> None:
        """The typed prompt, in the chat template when it is ticked; the box keeps the text.
        A template that fails sets the plain prompt, then raises its ChatTemplateError (shown)."""
        model = self.session.requested_model
        try:
            ids = self.prompt_ids(model, text)
        except ChatTemplateError:
            self.session.set_prompt_ids(tuple(model.vocab.encode(text)))
            raise
        self.session.set_prompt_ids(ids)

    def _chat_toggled(self, _checked: bool) -> None:
        """Wraps (or unwraps) the text in the box, also a question typed and not yet entered."""
        if self.chat_available() and not self.editing_logits:
            if not self.guarded(self.set_prompt_text, self.edit.text()):
                self.sync(force=True)

    def _read_chat(self) -> tuple[str, bool | None] | None:
        """(the user's text, thinking) when the shown prompt is one chat-template turn, else
        None (worked out once per prompt: a slider tick reruns the same one)."""
        vocab, ids = self.session.model.vocab, self.session.prompt_ids
        known_vocab, known_ids, found = self._chat_message_for
        if known_vocab is not vocab or known_ids != ids:
            found = read_chat(vocab, ids)
            self._chat_message_for = (vocab, ids, found)
        return found

    def _chat_message(self) -> str | None:
        found = self._read_chat()
        return None if found is None else found[0]

    def _shown_prompt_text(self) -> str:
        """What the prompt box shows: the user's text of a chat-template prompt, else the prompt."""
        message = self._chat_message()
        return message if message is not None else self.session.model.vocab.decode(self.session.prompt_ids)

    @property
    def editing_logits(self) -> bool:
        """A logits lesson's model: the bar edits its logits instead of the prompt."""
        model = self.session.model
        return (model.name == "logits" and hasattr(model, "default")
                and tuple(model.vocab.pieces[:1]) == (CONTEXT,))


    def _logits_entered(self, text: str) -> None:
        """Rebuild the logits model from the typed numbers; a bad list changes nothing."""
        lang = self.session.lang
        items = [t for t in re.split(r"[,，;；\s]+", text.strip()) if t]
        values = []
        for item in items:
            try:
                value = float(item)
            except ValueError:
                raise ExplorerError(tr("logits.bad", lang, text=text,
                                       problem=tr("logits.not_number", lang, item=item))) from None
            if not math.isfinite(value):
                raise ExplorerError(tr("logits.bad", lang, text=text,
                                       problem=tr("logits.not_finite", lang, item=item)))
            values.append(value)
        pieces = list(self.session.model.vocab.pieces[1:])
        spare = [p for p in NEW_PIECES if p not in pieces]
        if not values:
            raise ExplorerError(tr("logits.bad", lang, text=text, problem=tr("logits.empty", lang)))
        if len(values) > len(pieces) + len(spare):
            raise ExplorerError(tr("logits.bad", lang, text=text,
                                   problem=tr("logits.too_many", lang, n=len(pieces) + len(spare))))
        pieces = (pieces + spare)[:len(values)]
        # its prompt is its context token, also after a prompt typed on another scenario's
        # frame (a lesson that mixes a logits model with the teaching one)
        self.session.set_model(logits_model(tuple(pieces), tuple(values)), prompt_ids=(CONTEXT_ID,))

    def sync(self, force: bool = False) -> None:
        """Show the session's prompt (or logits) and words; `force`: also over an edit."""
        lang = self.session.lang
        logits = self.editing_logits
        self.label.setText(tr("logits.label" if logits else "prompt.label", lang))
        self.edit.setToolTip(tr("logits.tip" if logits else "prompt.tip", lang))
        # text being typed, or typed and not yet entered, stays while a slider or another
        # control reruns the same prompt; a new prompt or model (a lesson's frame, a logits
        # lesson's other numbers) replaces it
        model, ids = self.session.model, tuple(self.session.prompt_ids)
        synced_model, synced_ids = self._synced_for
        edited = self.edit.hasFocus() or self.edit.isModified()
        if force or model is not synced_model or ids != synced_ids or not edited:
            self._synced_for = (model, ids)
            text = logits_list(self.session.model) if logits else self._shown_prompt_text()
            if text != self.edit.text():          # a line edit repaints even for the same text
                self.edit.setText(text)
            self.edit.setModified(False)
        self.chat_check.setText(tr("chat.label", lang))
        self.thinking_check.setText(tr("thinking.label", lang))
        if not self.session.behind:      # while asked-for changes compute, it shows what was asked
            found = self._read_chat()
            self.chat_check.blockSignals(True)
            self.chat_check.setChecked(found is not None)
            self.chat_check.blockSignals(False)
            if found is not None and found[1] is not None:
                self.thinking_check.blockSignals(True)
                self.thinking_check.setChecked(found[1])
                self.thinking_check.blockSignals(False)
        self.chat_check.setToolTip(tr("chat.tip", lang))
        self.thinking_check.setToolTip(tr("thinking.tip", lang))
        chat = self.chat_available(self.session.model) and not logits
        self._chat_action.setVisible(chat)
        self._thinking_action.setVisible(chat and thinking_switch(self.session.model.vocab))
