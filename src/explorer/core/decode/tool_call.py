"""The host's side of a tool call: after a generation ends with `tool_call`, the next prompt
is the old one, the call and the tool's result, matched to the call by its id."""

from __future__ import annotations

from ..errors import SettingError
from .generate import Run
from ..tokens.vocab import Vocabulary

CALL_ID_PREFIX = "call_"


def call_id(ids, vocab: Vocabulary) -> int | None:
    """The first token of `ids` that is a call id, or None."""
    return next((int(t) for t in ids if vocab.piece_text(int(t)).startswith(CALL_ID_PREFIX)), None)


def continue_after_tool(run: Run, result_ids, vocab: Vocabulary) -> tuple[int, ...]:
    """The prompt of the generation after the host ran the tool: the run's prompt, the call it
    produced, then the result. Refused if the run did not end with a complete tool call, or if
    the result answers another call id."""
    result = tuple(vocab.check_ids(result_ids, "tool result"))
    if run.finish_reason != "tool_call":
        raise SettingError(f"the run ended with {run.finish_reason!r}, not with a complete tool call: "
                           "there is no call for the host to answer")
    asked, answered = call_id(run.output_ids, vocab), call_id(result, vocab)
    if asked is not None and answered != asked:
        said = "no call id" if answered is None else repr(vocab.piece_text(answered))
        raise SettingError(f"the result carries {said}, but the call was {vocab.piece_text(asked)!r}: "
                           "a result must name the call it answers")
    return run.prompt_ids + run.output_ids + result
