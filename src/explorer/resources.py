"""Where the shipped data lives: `params/` and `resources/`, in a wheel or a checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGE.parent.parent   # src/explorer -> repository root


def _data_dir(name: str) -> Path:
    """Installed wheels carry the folder inside the package; a checkout has it at the top."""
    inside = _PACKAGE / name
    return inside if inside.is_dir() else _CHECKOUT / name


def params_dir() -> Path:
    return _data_dir("params")


def resources_dir() -> Path:
    return _data_dir("resources")
