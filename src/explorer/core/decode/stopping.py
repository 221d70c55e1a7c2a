"""Why generation stops, as codes checked after every selection in this order: `eos` (an
end token was selected), `tool_call` (a complete tool call: control passes to the host),
`stop_string` (the output contains a stop text; the one whose match ends first wins, and
the output is cut where it starts), `length`
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
    """The stop string whose first match in the decoded output ENDS first (ties: the one
    earlier in the list), if any: what checking after every character would find, so the
    cut never depends on how the text was split into tokens ("abc" arriving as one token or
    as a, b, c with stops ["abc", "b"] is cut at "b" both times)."""
    hits = [(start + len(s), rank, start, s) for rank, s in enumerate(stop_strings)
            if s and (start := output_text.find(s)) >= 0]
    if not hits:
        return None
    _, _, index, text = min(hits)
    return StopMatch(text, index, step)


def ends_with_any(ids, sequences) -> bool:
    """True when `ids` ends with one of `sequences` (complete tool-call items)."""
    ids = tuple(ids)
    return any(len(s) <= len(ids) and ids[len(ids) - len(s):] == tuple(s) for s in sequences if s)
