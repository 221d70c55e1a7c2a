"""Process settings made at start-up."""

import sys

import pytest

from explorer import cli
from explorer.runtime import tune_allocator


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a glibc setting")
def test_the_allocator_keeps_room_at_the_top_of_the_heap():
    assert tune_allocator() is True


def test_every_command_tunes_the_allocator_first(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(cli, "tune_allocator", lambda: calls.append("tuned") or True)
    assert cli.main(["sample", "--logits", "2,1,0"]) == 0
    assert calls == ["tuned"] and "2" in capsys.readouterr().out
