"""Why generation stops, as codes checked after every selection in this order: `eos` (an
end token was selected), `tool_call` (a complete tool call: control passes to the host),
`stop_string` (the output contains a stop text; it is cut where that starts), `length`
(`max_new_tokens` reached: incomplete), `cancelled` (the user stopped it)."""

from __future__ import annotations

from dataclasses import dataclass

FINISH_REASONS = ("eos", "tool_call", "stop_string", "length", "context", "cancelled")
INCOMPLETE = frozenset({"length", "context", "cancelled"})   # the output was cut, not finished


@dataclass(frozen=True)
class StopMatch:
    text: str          # the stop string that matched
    char_index: int    # where it starts in the decoded output text
    step: int          # index of the step whose token completed the match


def find_stop_string(output_text: str, stop_strings, step: int) -> StopMatch | None:
    """The earliest occurrence of any stop string in the decoded output, if any."""
    hits = [(output_text.find(s), s) for s in stop_strings if s and s in output_text]
    if not hits:
        return None
    index, text = min(hits)
    return StopMatch(text, index, step)


def ends_with_any(ids, sequences) -> bool:
    """True when `ids` ends with one of `sequences` (complete tool-call items)."""
    ids = tuple(ids)
    return any(len(s) <= len(ids) and ids[len(ids) - len(s):] == tuple(s) for s in sequences if s)
