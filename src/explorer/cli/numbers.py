"""Numbers given on the command line as comma-separated lists (--logits, --prompt-ids, …)."""

from __future__ import annotations

from ..core.errors import SettingError
from ..core.limits import shown


def parse_numbers(text: str, flag: str, kind=float) -> list:
    """Comma-separated numbers (float: also inf, -inf)."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    try:
        return [kind(t) for t in items]
    except ValueError:
        noun = "integers" if kind is int else "numbers"
        raise SettingError(f"{flag} = {shown(text)}: expected comma-separated {noun}") from None
