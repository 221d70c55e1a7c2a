"""Where the checkout's folders are, for tests at any depth of tests/."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]     # tests/support/paths.py -> the checkout
RESOURCES = REPO / "resources"
FIXTURES = REPO / "tests" / "fixtures"
SRC = REPO / "src"
