"""Flags that do not combine: one refusal, worded alike for every such pair."""

from __future__ import annotations

from ..core.errors import SettingError


def refuse_together(flag: str, why: str, others) -> None:
    """SettingError (exit 2) naming the first of `others` ((flag, given), ...) given beside `flag`."""
    for other, given in others:
        if given:
            raise SettingError(f"{flag} with {other}: {why}; leave out one of the two")
