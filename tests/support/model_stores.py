"""Fake stores of other tools, in a test's own folder: Ollama's (manifests naming blobs by
digest), LM Studio's folders and the Hugging Face hub cache (snapshots linking into blobs),
each holding tiny GGUF files, with HOME and the tools' variables pointing there."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from gguf_files import llama_tensors, write_llama

MODEL_LAYER = "application/vnd.ollama.image.model"


@dataclass
class Stores:
    home: Path
    ollama: Path                 # OLLAMA_MODELS
    hf: Path                     # HF_HOME
    tiny: Path                   # a tiny GGUF to put anywhere

    def gguf_bytes(self, seed: int = 0) -> bytes:
        return write_llama(self.home / f".w{seed}.gguf", llama_tensors(np.random.default_rng(seed))).read_bytes()

    def ollama_model(self, name: str, data: bytes, namespace: str = "library",
                     host: str = "registry.ollama.ai") -> Path:
        """`ollama pull NAME:TAG` as Ollama stores it: the blob by digest, a manifest naming it."""
        model, tag = name.split(":")
        digest = hashlib.sha256(data).hexdigest()
        blob = self.ollama / "blobs" / f"sha256-{digest}"
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        template = b"{{ .Prompt }}"
        (self.ollama / "blobs" / f"sha256-{hashlib.sha256(template).hexdigest()}").write_bytes(template)
        manifest = self.ollama / "manifests" / host / namespace / model / tag
        manifest.parent.mkdir(parents=True, exist_ok=True)
        manifest.write_text(json.dumps({"schemaVersion": 2, "layers": [
            {"mediaType": MODEL_LAYER, "digest": f"sha256:{digest}", "size": len(data)},
            {"mediaType": "application/vnd.ollama.image.template",
             "digest": f"sha256:{hashlib.sha256(template).hexdigest()}", "size": len(template)}]}))
        return blob

    def lmstudio_model(self, rel: str, data: bytes, old: bool = False) -> Path:
        root = self.home / (".cache/lm-studio/models" if old else ".lmstudio/models")
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path

    def hf_model(self, repo: str, filename: str, data: bytes, revisions=("abc123",)) -> list[Path]:
        """A hub download: the blob once, a link to it in each snapshot."""
        root = self.hf / "hub" / f"models--{repo.replace('/', '--')}"
        blob = root / "blobs" / hashlib.sha256(data).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        links = []
        for rev in revisions:
            link = root / "snapshots" / rev / filename
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(os.path.relpath(blob, link.parent))
            links.append(link)
        return links


def tree_state(root: Path) -> dict:
    """Every path under `root` with its kind, size and modification time (links not followed)."""
    return {str(p): (p.is_symlink(), p.lstat().st_size, p.lstat().st_mtime_ns) for p in sorted(root.rglob("*"))}


@pytest.fixture
def stores(tmp_path, monkeypatch, tiny):
    home = tmp_path / "home"
    home.mkdir()
    s = Stores(home, tmp_path / "ollama", tmp_path / "hf", tiny[0])
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("OLLAMA_MODELS", str(s.ollama))
    monkeypatch.setenv("HF_HOME", str(s.hf))
    for var in ("HF_HUB_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    return s
