"""The model a lesson names in its [model] table, built once per file and kind (a shared
model object lets every scenario of a lesson reuse the same forward passes)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..core.errors import ExplorerError
from ..core.user_numbers import NumbersError, number_array
from ..core.models.params_file import load_params
from ..core.models.table_model import TableModel, load_table_model
from ..core.models.teaching import load_teaching_model
from ..core.tokens.vocab import Vocabulary
from ..catalog.load import load_model
from ..catalog.local import OLLAMA_PREFIX, ModelNotFound, ollama_path
from ..catalog.verdicts import file_sha256

CONTEXT = "…"        # the one-token prompt of a logits lesson: it stands for "the text so far"
CONTEXT_ID = 0       # its id: a logits model's prompt is always (CONTEXT_ID,)


def build_model(spec: dict, lesson_path: Path):
    """kind = teaching | installed (name: a real model installed with `explorer model
    install NAME`) | gguf (a GGUF model already on the computer: name = "ollama:NAME:TAG",
    or file = its path, relative to the lesson or from ~) | params (file) | table (file) |
    logits (pieces, logits) | projection (pieces, hidden, w_out: the logits are hidden @ w_out)."""
    kind = spec["kind"]
    if kind == "teaching":
        return _teaching()
    if kind == "installed":
        return load_model(installed_name(spec))
    if kind == "gguf":
        return load_model(gguf_key(spec, lesson_path))
    if kind in ("params", "table"):
        if not isinstance(spec.get("file"), str):
            raise ExplorerError(f"model.file: missing (the {kind} file, relative to the lesson)")
        path = (lesson_path.parent / spec["file"]).resolve()
        return _params(path) if kind == "params" else _table(path)
    if kind == "logits":
        return logits_model(_pieces(spec), tuple(_numbers(spec, "logits", 1).tolist()))
    if kind == "projection":
        hidden = _numbers(spec, "hidden", 1)                                    # [d]
        w_out = _numbers(spec, "w_out", 2)                                      # [d, V]
        if w_out.shape[0] != hidden.size:
            raise ExplorerError(f"model: hidden has {hidden.size} numbers, so w_out needs {hidden.size} rows "
                                f"(got shape {list(w_out.shape)})")
        return logits_model(_pieces(spec), tuple((hidden @ w_out).tolist()))
    raise ExplorerError(f"model.kind: {kind!r}: expected teaching, installed, gguf, params, table, logits or projection")


def gguf_key(spec: dict, lesson_path: Path) -> str:
    """What `load_model` takes for a [model] of kind "gguf"; ModelNotFound saying which
    model and where it was looked for when it is not on this computer (an Ollama name's
    manifest is looked for when it is loaded)."""
    name, file = spec.get("name"), spec.get("file")
    if (name is None) == (file is None):
        raise ExplorerError(f'model: a gguf model needs name = "{OLLAMA_PREFIX}NAME:TAG" or file = "PATH" '
                            "(the GGUF file), one of the two")
    if name is not None:
        if not isinstance(name, str) or not name.startswith(OLLAMA_PREFIX):
            raise ExplorerError(f"model.name: {name!r}: expected an Ollama model such as "
                                f'"{OLLAMA_PREFIX}qwen2.5:0.5b" (or file = "PATH" for a GGUF file)')
        return name
    if not isinstance(file, str) or not file:
        raise ExplorerError("model.file: expected the path of a GGUF file (relative to the lesson, or from ~)")
    path = lesson_path.parent / Path(file).expanduser()
    if not path.is_file():
        raise ModelNotFound(f"model.file: {file!r}: this lesson's model is not on this computer "
                            f"(looked for {path.resolve()})")
    return str(path.resolve())


@dataclass(frozen=True)
class ModelDifference:
    """A lesson's GGUF model found on this computer is not the file it was saved with."""
    name: str            # as the lesson names it: "ollama:NAME:TAG" or the file's path
    path: Path           # the file found today
    digest: str          # its SHA-256
    expected: str        # the lesson's model.sha256

    def __str__(self) -> str:
        return (f"model {self.name}: the file {self.path} is not the one this lesson was saved with (its "
                f"SHA-256 is {self.digest[:12]}…, the lesson's model.sha256 is {self.expected[:12]}…): the "
                f"lesson plays on this file, so its numbers and the tokens it picks may differ from the saved run")


def model_difference(spec: dict, lesson_path: Path) -> ModelDifference | None:
    """How the model a [model] table finds today differs from the one the lesson was saved
    with (Save as lesson writes the GGUF file's SHA-256), or None: the same file, or nothing
    to compare. The lesson still opens on the file that is there; its numbers are that
    file's, so the window and the command line say so rather than refuse it."""
    expected = spec.get("sha256")
    if spec.get("kind") != "gguf" or expected is None:
        return None
    try:
        key = gguf_key(spec, lesson_path)
        path = ollama_path(key) if key.startswith(OLLAMA_PREFIX) else Path(key)
        digest = gguf_digest(path)
    except (ExplorerError, OSError):
        return None                         # not there: `absence` says so, by name
    if digest == expected:
        return None
    return ModelDifference(spec.get("name") or spec["file"], path, digest, expected)


def gguf_digest(path) -> str:
    """The SHA-256 of a GGUF file: an Ollama blob's name is its digest (Ollama checks it when
    it pulls); any other file is read, once per size and modification time."""
    name = Path(path).name
    if re.fullmatch(r"sha256-[0-9a-f]{64}", name):
        return name.removeprefix("sha256-")
    return cached_sha256(path)


def cached_sha256(path) -> str:
    """A file's SHA-256, read once per size and modification time (a model file is hundreds of MB)."""
    st = Path(path).stat()
    return _sha256(str(path), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=64)
def _sha256(path: str, _size: int, _mtime_ns: int) -> str:
    return file_sha256(path)


def _pieces(spec: dict) -> tuple[str, ...]:
    pieces = spec.get("pieces", [])
    if not isinstance(pieces, list) or not all(isinstance(p, str) and p for p in pieces):
        raise ExplorerError('model.pieces: expected a list of non-empty strings, e.g. ["Paris", "London"]')
    return tuple(pieces)


def _numbers(spec: dict, key: str, ndim: int) -> np.ndarray:  # -> float64 array of `ndim` dimensions
    """A [model] key holding a list (ndim 1) or a matrix (ndim 2) of numbers; ExplorerError
    naming the key and what is wrong (text, booleans, ragged rows)."""
    try:
        return number_array(spec.get(key, []), ndim)
    except NumbersError as exc:
        raise ExplorerError(f"model.{key}{exc.where}: {exc.problem}") from None


def installed_name(spec: dict) -> str | None:
    """The name of the installed model a [model] table names (kind = "installed"), else None."""
    return spec.get("name") if spec["kind"] == "installed" else None


def real_model_key(spec: dict, lesson_path: Path) -> str | None:
    """What `load_model` takes for the real model a [model] table names (an installed
    model's name, an Ollama name, a GGUF file's path), else None (a model built from
    numbers in the lesson)."""
    if spec["kind"] == "installed":
        return spec.get("name")
    if spec["kind"] == "gguf":
        try:
            return gguf_key(spec, lesson_path)
        except ModelNotFound:                  # the key all the same: `absence` says why
            return str((lesson_path.parent / Path(spec["file"]).expanduser()).resolve())
    return None


def absence(key: str) -> str | None:
    """Why the GGUF model `key` (an Ollama name or a path) is not on this computer, or None
    if it is there."""
    try:
        if key.startswith(OLLAMA_PREFIX):
            ollama_path(key)
        elif not Path(key).is_file():
            return f"this lesson's model {key} is not on this computer"
    except ModelNotFound as exc:
        return str(exc)
    return None


@lru_cache(maxsize=None)
def _teaching():
    return load_teaching_model()


@lru_cache(maxsize=None)
def _params(path: Path):
    return load_params(path)


@lru_cache(maxsize=None)
def _table(path: Path):
    return load_table_model(path)


@lru_cache(maxsize=64)
def logits_model(pieces: tuple[str, ...], logits: tuple[float, ...]) -> TableModel:
    """A model whose next-token logits are always `logits` (one per piece, shown exactly as
    given); its prompt is the single context token "…", which never wins (logit -inf)."""
    if not pieces or len(pieces) != len(logits):
        raise ExplorerError(f"model: {len(pieces)} pieces but {len(logits)} logits: expected one logit per piece")
    if CONTEXT in pieces or len(set(pieces)) != len(pieces):
        raise ExplorerError(f"model.pieces: expected distinct pieces other than {CONTEXT!r} (the context token)")
    values = np.asarray(logits, dtype=np.float64)                     # [V-1]
    if not np.isfinite(values).all():
        raise ExplorerError("model.logits: expected finite numbers")
    row = np.concatenate([[-np.inf], values])                         # [V]: the context token never wins
    row.flags.writeable = False
    return TableModel(Vocabulary((CONTEXT, *pieces), {"bos": CONTEXT_ID}), {}, row, name="logits")
