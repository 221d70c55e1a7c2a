"""GGUF models already on this computer, found where other tools keep them, without copying
or changing anything: Ollama's store (its manifests name the blobs: `qwen2.5:0.5b`, not a
hash), LM Studio's models folders, the Hugging Face hub cache, and folders the teacher adds.
A file is recognised by the GGUF magic, and only its header is read (`summary`)."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import ExplorerError
from ..core.gguf.reader import MAGIC, SPLIT_NAME
from ..core.gguf.summary import Summary, summarize_file
from ..core.userfile import read_user_text

OLLAMA_ENV = "OLLAMA_MODELS"                    # where Ollama keeps models, if not ~/.ollama/models
OLLAMA_PREFIX = "ollama:"                       # a model named by Ollama: "ollama:qwen2.5:0.5b"
OLLAMA_REGISTRY = "registry.ollama.ai"          # `ollama pull NAME` takes it from here
OLLAMA_LIBRARY = "library"                      # ... in this namespace unless NAME says "user/name"
OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"   # the manifest layer that is the GGUF
MAX_MANIFEST_BYTES = 1 << 20                    # a manifest is a few hundred bytes of JSON
MAX_DEPTH = 8                                   # folders below a root: HF's ORG--NAME/snapshots/REV/sub/
MAX_ENTRIES = 20_000                            # names looked at under one root: a home folder added by
                                                # mistake ends the scan instead of taking minutes

OLLAMA, LMSTUDIO, HUGGINGFACE, FOLDER = "ollama", "lmstudio", "huggingface", "folder"


class ModelNotFound(ExplorerError):
    """A model named by Ollama's name or a path that is not on this machine; the message says
    which name and where it looked."""


@dataclass(frozen=True)
class FoundModel:
    name: str             # as its tool shows it: "qwen2.5:0.5b", "lmstudio-community/Qwen2.5-0.5B-Q4_K_M"
    path: Path            # the file (a split model's first part)
    source: str           # OLLAMA | LMSTUDIO | HUGGINGFACE | FOLDER
    summary: Summary
    ollama: bool = False  # named by an Ollama manifest: opened as "ollama:NAME" (`key`)

    @property
    def key(self) -> str:
        """What `load_model` takes for it."""
        return OLLAMA_PREFIX + self.name if self.ollama else str(self.path)


def is_gguf(path) -> bool:
    """Whether `path` is a regular file starting with the GGUF magic (4 bytes read)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, len(MAGIC)) == MAGIC
    except OSError:
        return False
    finally:
        os.close(fd)


def is_later_part(path: Path) -> bool:
    """Part 2..n of a split model (`NAME-00002-of-00003.gguf`): opened through part 1."""
    m = SPLIT_NAME.match(path.name)
    return m is not None and int(m["no"]) > 1


# ---------------------------------------------------------------- where each tool keeps models


def ollama_root() -> Path:
    env = os.environ.get(OLLAMA_ENV)
    return Path(env).expanduser() if env else Path.home() / ".ollama" / "models"


def lmstudio_roots() -> list[Path]:
    """LM Studio's models folders: the current one and the one older versions used."""
    return [Path.home() / ".lmstudio" / "models", Path.home() / ".cache" / "lm-studio" / "models"]


def hf_hub_root() -> Path:
    """The Hugging Face hub cache, as huggingface_hub finds it."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    cache = os.environ.get("XDG_CACHE_HOME")
    return (Path(cache).expanduser() if cache else Path.home() / ".cache") / "huggingface" / "hub"


def searched_places(folders=()) -> list[tuple[str, Path]]:
    """(source, folder) of every place `find_models` looks, for a list's header."""
    return ([(OLLAMA, ollama_root())] + [(LMSTUDIO, p) for p in lmstudio_roots()]
            + [(HUGGINGFACE, hf_hub_root())] + [(FOLDER, Path(f).expanduser()) for f in folders])


# ---------------------------------------------------------------- Ollama


def ollama_manifest_path(ref: str, root: Path | None = None) -> Path:
    """The manifest of an Ollama name ("qwen2.5:0.5b", "qwen2.5" for its latest, "user/m:tag",
    "hf.co/org/repo:tag"), as Ollama lays them out: manifests/HOST/NAMESPACE/MODEL/TAG."""
    name, _, tag = ref.partition(":")
    parts = name.split("/")
    if len(parts) == 1:
        parts = [OLLAMA_REGISTRY, OLLAMA_LIBRARY] + parts
    elif len(parts) == 2:
        parts = [OLLAMA_REGISTRY] + parts
    if not name or len(parts) != 3 or any(p in ("", ".", "..") for p in parts + [tag or "latest"]) \
            or "/" in tag or "\\" in ref:
        raise ModelNotFound(f"{OLLAMA_PREFIX}{ref}: expected an Ollama model name such as "
                            f"{OLLAMA_PREFIX}qwen2.5:0.5b (NAME:TAG, as `ollama list` shows it)")
    return (root or ollama_root()) / "manifests" / Path(*parts) / (tag or "latest")


def ollama_display_name(manifest: Path, root: Path) -> str:
    """How `ollama list` names the model of a manifest: "qwen2.5:0.5b", "user/model:tag"."""
    host, namespace, model, tag = manifest.relative_to(root / "manifests").parts
    if host != OLLAMA_REGISTRY:
        return f"{host}/{namespace}/{model}:{tag}"
    return f"{model}:{tag}" if namespace == OLLAMA_LIBRARY else f"{namespace}/{model}:{tag}"


def _blob_of(manifest: Path, root: Path) -> Path | None:
    """The model blob a manifest names (None: not readable, or no model layer)."""
    try:
        data = json.loads(read_user_text(manifest, MAX_MANIFEST_BYTES, "Ollama manifest"))
    except (ExplorerError, ValueError):
        return None
    layers = data.get("layers") if isinstance(data, dict) else None
    for layer in layers if isinstance(layers, list) else ():
        digest = layer.get("digest") if isinstance(layer, dict) else None
        if layer.get("mediaType") == OLLAMA_MODEL_LAYER and isinstance(digest, str) and digest.startswith("sha256:"):
            hexdigest = digest.removeprefix("sha256:")
            if hexdigest.isalnum():
                return root / "blobs" / f"sha256-{hexdigest}"
    return None


def ollama_path(ref: str) -> Path:
    """The GGUF blob of an Ollama model ("qwen2.5:0.5b", with or without "ollama:");
    ModelNotFound naming the name, the manifest looked for and the folder, if absent."""
    ref = ref.removeprefix(OLLAMA_PREFIX)
    root = ollama_root()
    manifest = ollama_manifest_path(ref, root)
    where = f"Ollama's models folder {root} ({'from ' + OLLAMA_ENV if os.environ.get(OLLAMA_ENV) else 'the default'})"
    if not manifest.is_file():
        raise ModelNotFound(f"{OLLAMA_PREFIX}{ref} is not on this computer: there is no manifest {manifest} "
                            f"in {where}; `ollama pull {ref}` downloads it")
    blob = _blob_of(manifest, root)
    if blob is None:
        raise ModelNotFound(f"{OLLAMA_PREFIX}{ref}: its manifest {manifest} names no model layer "
                            f"({OLLAMA_MODEL_LAYER}) in {where}")
    if not blob.is_file():
        raise ModelNotFound(f"{OLLAMA_PREFIX}{ref}: its manifest names the blob {blob}, which is missing "
                            f"from {where}; `ollama pull {ref}` downloads it again")
    return blob


def ollama_models(root: Path | None = None) -> list[tuple[str | None, Path]]:
    """(name, blob) of every model in Ollama's store; a GGUF blob no manifest names (its
    manifest deleted) comes with name None, openable by its path."""
    root = root or ollama_root()
    out, named = [], set()
    manifests = root / "manifests"
    for manifest in _files(manifests, depth=4):
        if len(manifest.relative_to(manifests).parts) != 4:
            continue
        blob = _blob_of(manifest, root)
        if blob is not None and blob.is_file():
            out.append((ollama_display_name(manifest, root), blob))
            named.add(blob)
    for blob in _files(root / "blobs", depth=1):
        if blob.name.startswith("sha256-") and blob not in named and is_gguf(blob):
            out.append((None, blob))
    return out


def ollama_name_of(path) -> str | None:
    """The Ollama name of a blob in Ollama's store ("qwen2.5:0.5b"), None if it is no such blob."""
    path = Path(path)
    if not path.name.startswith("sha256-") or path.parent != ollama_root() / "blobs":
        return None
    return next((name for name, blob in ollama_models() if blob == path and name), None)


# ---------------------------------------------------------------- the others


def lmstudio_models() -> list[tuple[str, Path]]:
    """(publisher/file name, path) in LM Studio's folders (publisher/repo/file.gguf)."""
    out = []
    for root in lmstudio_roots():
        for path in _files(root, depth=4):
            if path.suffix.lower() == ".gguf":
                publisher = path.relative_to(root).parts[0] if len(path.relative_to(root).parts) > 1 else ""
                out.append((f"{publisher}/{path.stem}" if publisher else path.stem, path))
    return out


def hf_models() -> list[tuple[str, Path]]:
    """(ORG/NAME/file name, path) in the Hugging Face hub cache (models--ORG--NAME/snapshots/REV/…;
    the snapshot's files link into blobs/)."""
    out, root = [], hf_hub_root()
    for repo in _dirs(root):
        if not repo.name.startswith("models--"):
            continue
        org_name = repo.name.removeprefix("models--").replace("--", "/")
        for snapshot in _dirs(repo / "snapshots"):
            for path in _files(snapshot, depth=4):
                if path.suffix.lower() == ".gguf":
                    out.append((f"{org_name}/{path.stem}", path))
    return out


def folder_models(folder) -> list[tuple[str, Path]]:
    """(file name, path) of every GGUF file under a folder the teacher added, with or
    without the .gguf extension."""
    folder = Path(folder).expanduser()
    return [(path.stem if path.suffix.lower() == ".gguf" else path.name, path)
            for path in _files(folder, depth=MAX_DEPTH)]


def find_models(folders=()) -> list[FoundModel]:
    """Every GGUF model found, by source (Ollama, LM Studio, Hugging Face, the teacher's
    folders), each file once (a file two tools share, by the first), a split model by its
    first part only."""
    found, seen = [], set()

    def add(name, path, source, ollama=False):
        try:
            real = path.resolve(strict=True)
        except (OSError, RuntimeError):          # gone meanwhile, or a loop of links
            return
        if real in seen or is_later_part(path) or not is_gguf(real):
            return
        seen.add(real)
        found.append(FoundModel(name or path.name, path, source, _summary(path), ollama))

    for name, path in ollama_models():
        add(name, path, OLLAMA, ollama=name is not None)
    for source, models in ((LMSTUDIO, lmstudio_models()), (HUGGINGFACE, hf_models())):
        for name, path in models:
            add(name, path, source)
    for folder in folders:
        for name, path in folder_models(folder):
            add(name, path, FOLDER)
    return found


_SUMMARIES: dict[tuple, Summary] = {}      # (path, size, mtime): a file's header read once


def _summary(path: Path) -> Summary:
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _SUMMARIES:
        _SUMMARIES[key] = summarize_file(path)
    return _SUMMARIES[key]


def _dirs(folder: Path) -> list[Path]:
    """The folders in `folder` (not links to folders), sorted; none if it cannot be read."""
    try:
        with os.scandir(folder) as it:
            return sorted(Path(e.path) for e in it if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def _files(root: Path, depth: int) -> list[Path]:
    """Regular files (or links to them) under `root`, at most `depth` folders down, sorted.
    Links to folders are not followed (no loops) and hidden folders are skipped; at most
    MAX_ENTRIES names are looked at."""
    out, stack, looked = [], [(root, 0)], 0
    while stack and looked < MAX_ENTRIES:
        folder, level = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        for e in entries:
            looked += 1
            try:
                if e.is_dir(follow_symlinks=False):
                    if level + 1 < depth and not e.name.startswith("."):
                        stack.append((Path(e.path), level + 1))
                elif e.is_file():                        # follows a link to a file (HF's snapshots)
                    out.append(Path(e.path))
            except OSError:
                continue
    return sorted(out)
