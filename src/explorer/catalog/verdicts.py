"""Checking a named model's file against its SHA-256, once per size and modification time:
the verdicts are kept in verified.json beside the models (`verified_path`)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..core.errors import ExplorerError
from ..core.jsonfile import write_text_atomic
from .registry import cache_dir, model_path, require_installed, spec

VERDICTS = "verified.json"      # beside the models: {file name: {size, mtime_ns, sha256}} of checked files


class ModelDamaged(ExplorerError):
    """A known model's file has the right size but not the right SHA-256."""


def file_sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _stamp(path: Path, sha256: str) -> dict:
    """What a verdict is kept under: the file's size and modification time, and its digest."""
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256}


def _verdicts() -> dict:
    try:
        verdicts = json.loads((cache_dir() / VERDICTS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return verdicts if isinstance(verdicts, dict) else {}


def record_verified(name: str) -> None:
    """The model's file was just checked against its SHA-256: remember it under its size
    and modification time. A folder that cannot be written only means checking again."""
    s = spec(name)
    verdicts = _verdicts()
    verdicts[s.filename] = _stamp(model_path(name), s.sha256)
    try:
        write_text_atomic(cache_dir() / VERDICTS, json.dumps(verdicts, indent=1, sort_keys=True) + "\n")
    except OSError:
        pass


def verified_path(name: str) -> Path:
    """The installed file, checked against its SHA-256 (once per size and modification
    time); ModelNotInstalled or ModelDamaged with the command that (re)installs it."""
    path = require_installed(name)
    s = spec(name)
    if _verdicts().get(s.filename) == _stamp(path, s.sha256):
        return path
    digest = file_sha256(path)
    if digest != s.sha256:
        raise ModelDamaged(f"the model file is damaged: reinstall with: {s.install_command} "
                           f"({path} has SHA-256 {digest}, expected {s.sha256})")
    record_verified(name)
    return path
