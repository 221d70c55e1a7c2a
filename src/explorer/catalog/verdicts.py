"""Checking a named model's file against its SHA-256, once per version of the file: the
verdicts are kept in verified.json beside the models (`verified_path`), each under the
file's fingerprint (`fingerprint`), so a file changed in any way is checked again."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from ..core.errors import ExplorerError
from ..core.jsonfile import read_json, write_text_atomic
from ..core.userfile import open_regular
from .registry import cache_dir, model_path, require_installed, spec

VERDICTS = "verified.json"      # beside the models: {file name: fingerprint + sha256 + checked_at}
VERDICTS_LIMIT = 1 << 20        # bytes of verified.json read at most (a few lines per model)
SAMPLE_BLOCK = 64 << 10         # bytes of each block the fingerprint hashes
SAMPLES = 5                     # blocks at fixed offsets: the start, the end and three between
GGUF_MAGIC = b"GGUF"            # the first bytes of every named model's file


class ModelDamaged(ExplorerError):
    """A known model's file has the right size but not the right SHA-256."""


def file_sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sample_offsets(size: int) -> list[int]:
    """Where the fingerprint's blocks start: evenly spread from 0 to the last block."""
    last = max(0, size - SAMPLE_BLOCK)
    return sorted({last * i // (SAMPLES - 1) for i in range(SAMPLES)})


def fingerprint(path: Path) -> dict:
    """What a verdict is kept under, cheap to recompute at every load: the file's size,
    modification and change times, inode, and a SHA-256 of a few 64 KiB blocks. Size and
    mtime alone are kept by a copy or a `touch -r`; the change time and inode are not (no
    program can set them back), and the sampled blocks catch a damage that kept all four
    (a file system restored from a backup). Read without blocking and only if regular."""
    fd = open_regular(path, 1 << 62, "model file")
    try:
        st = os.fstat(fd)
        h = hashlib.sha256()
        for at in sample_offsets(st.st_size):
            h.update(os.pread(fd, SAMPLE_BLOCK, at))
    finally:
        os.close(fd)
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns, "inode": st.st_ino,
            "sample": h.hexdigest()}


def _verdicts() -> dict:
    """The kept verdicts; an unreadable, damaged or odd verified.json (a folder, a pipe) is none."""
    try:
        verdicts = read_json(cache_dir() / VERDICTS, limit=VERDICTS_LIMIT, what="verdict file")
    except (ExplorerError, OSError):
        return {}
    return verdicts if isinstance(verdicts, dict) else {}


def record_verified(name: str) -> None:
    """The model's file was just checked against its SHA-256: remember it under its
    fingerprint. A verified.json that cannot be written (a folder, a read-only file system)
    only means checking again."""
    s = spec(name)
    verdicts = _verdicts()
    try:
        verdicts[s.filename] = {**fingerprint(model_path(name)), "sha256": s.sha256, "checked_at": time.time()}
        write_text_atomic(cache_dir() / VERDICTS, json.dumps(verdicts, indent=1, sort_keys=True) + "\n")
    except (ExplorerError, OSError):
        pass


def last_check(name: str) -> tuple[bool, float | None]:
    """(does the kept verdict still hold for the file as it is now, when was it last
    checked): what `model list` reports without reading the whole file."""
    s = spec(name)
    kept = _verdicts().get(s.filename)
    if not isinstance(kept, dict):
        return False, None
    when = kept.get("checked_at")
    when = when if isinstance(when, (int, float)) and not isinstance(when, bool) else None
    try:
        current = fingerprint(model_path(name))
    except (ExplorerError, OSError):
        return False, when
    holds = kept.get("sha256") == s.sha256 and all(kept.get(k) == v for k, v in current.items())
    return holds, when


def looks_like_gguf(path: Path) -> bool:
    """Does the file start as every GGUF does? (A zero-filled file of the right size does not.)"""
    try:
        fd = open_regular(path, 1 << 62, "model file")
    except ExplorerError:
        return False
    try:
        return os.pread(fd, len(GGUF_MAGIC), 0) == GGUF_MAGIC
    except OSError:
        return False
    finally:
        os.close(fd)


def verified_path(name: str) -> Path:
    """The installed file, checked against its SHA-256 (once per version of the file, see
    `fingerprint`); ModelNotInstalled or ModelDamaged with the command that (re)installs it."""
    path = require_installed(name)
    s = spec(name)
    if last_check(name)[0]:
        return path
    digest = file_sha256(path)
    if digest != s.sha256:
        raise ModelDamaged(f"the model file is damaged: reinstall with: {s.install_command} "
                           f"({path} has SHA-256 {digest}, expected {s.sha256})")
    record_verified(name)
    return path
