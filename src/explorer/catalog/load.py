"""Loading a model by name or path (`load_model`), one copy shared while anything holds it,
and what a model is taught in: its language and the prompt a new session starts from."""

from __future__ import annotations

import weakref
from pathlib import Path

from ..core.errors import ExplorerError
from ..core.gguf.reader import GGUFError
from ..core.gguf.summary import summarize_file
from .local import OLLAMA_PREFIX, ModelNotFound, ollama_name_of, ollama_path
from ..units import byte_size
from .memory import check_memory
from .registry import MODELS, TEACHING, TEACHING_LANGUAGE
from .verdicts import verified_path

# a model without a spec (a .gguf file opened by path, a parameter file) is taught in its
# tokenizer's language (`tokenizer.ggml.model`): byte-level BPE is SmolLM2's family, which
# reads English; SentencePiece is Gemma's, which reads Chinese; no GGUF tokenizer, the teaching model's
TOKENIZER_LANGUAGES = {"gpt2": "en", "llama": "zh"}
# what a new session starts from, by the model's language: the course's 我爱, or a sentence
# with a well-known continuation
DEFAULT_PROMPTS = {"zh": "我爱", "en": "The capital of France is"}

# named real models in use somewhere (a lesson, the window's picker), by "name:file path":
# loaded once and shared while anything holds them
_LOADED: weakref.WeakValueDictionary[str, object] = weakref.WeakValueDictionary()
# where each loaded model came from, as a lesson's [model] table names it (Save as lesson writes it)
_ORIGINS: weakref.WeakKeyDictionary[object, dict] = weakref.WeakKeyDictionary()


def remember_origin(model, table: dict):
    """Note that `model` came from the lesson [model] table `table` (kind and its keys); -> model."""
    _ORIGINS[model] = dict(table)
    return model


def model_origin(model) -> dict | None:
    """The [model] table of where `model` was loaded from (`load_model`, a parameter file
    opened with `load_params_file`), or None for a model built otherwise."""
    table = _ORIGINS.get(model)
    return None if table is None else dict(table)


def load_params_file(path):
    """A parameter file's model (`load_params`), its origin remembered."""
    from ..core.models.params_file import load_params
    return remember_origin(load_params(path), {"kind": "params", "file": str(Path(path).expanduser().resolve())})


def load_model(name_or_path):
    """A LanguageModel: "teaching", a model name from MODELS, an Ollama model
    ("ollama:qwen2.5:0.5b", from Ollama's store), or the path of a GGUF file (with or
    without the .gguf extension: Ollama's blobs have none).
    A named model still held from an earlier call is returned as it is: a lesson and the
    window's model picker share one copy (hundreds of MB) instead of loading a second.

    A real model's file lives in `~/.cache/token-explorer/models/` (or the folder named by
    TOKEN_EXPLORER_CACHE). Loading a named model checks the file against its SHA-256 once per
    size and modification time (the verdicts are kept in verified.json beside the models).
    A GGUF file that holds no language model (an adapter, …) or needs more memory than is
    available is refused before its weights are read."""
    key = str(name_or_path)
    if key == TEACHING:
        from ..core.models.teaching import load_teaching_model
        return remember_origin(load_teaching_model(), {"kind": "teaching"})
    if key in MODELS or key.startswith(OLLAMA_PREFIX):
        path = verified_path(key) if key in MODELS else ollama_path(key)
        model = _LOADED.get(f"{key}:{path}")
        if model is None:
            model = _LOADED[f"{key}:{path}"] = _load_gguf(path, key.removeprefix(OLLAMA_PREFIX))
        return remember_origin(model, {"kind": "installed", "name": key} if key in MODELS
                               else {"kind": "gguf", "name": key})
    path = Path(key).expanduser()
    if path.suffix.lower() == ".gguf" or path.exists():
        if not path.is_file():
            raise ModelNotFound(f"{path}: no such model file")
        return remember_origin(_load_gguf(path, ollama_name_of(path)), {"kind": "gguf", "file": str(path.resolve())})
    raise ExplorerError(f"unknown model {key!r}: expected {TEACHING!r}, one of "
                        f"{', '.join(MODELS)}, an Ollama model ({OLLAMA_PREFIX}NAME:TAG), or the path of a .gguf file")


def _load_gguf(path: Path, name: str | None):
    """load_llama, once the file's header says it is a language model that fits in memory."""
    from ..core.gguf.llama import load_llama
    summary = summarize_file(path)
    if summary.not_a_model:
        raise GGUFError(f"{path}: {summary.problem}")
    in_place = summary.problem is None and check_memory(summary)   # a file it cannot read: the loader says why
    model = load_llama(path, name=name, in_place=in_place)
    if in_place:
        model.load_note = (f"{path.name}: memory is short, so its weights are read in place from the file "
                           f"(about {byte_size(summary.memory_in_place)} instead of {byte_size(summary.memory)}); "
                           f"its Decode steps are slower")
    return model


def teaching_language(key: str | None, model) -> str:
    """The language `model`, loaded from `key` (what `load_model` takes; None: a parameter
    file), is taught in: "zh" or "en"."""
    if key == TEACHING:
        return TEACHING_LANGUAGE
    if key in MODELS:
        return MODELS[key].language
    return TOKENIZER_LANGUAGES.get(model.vocab.gguf_tokenizer, TEACHING_LANGUAGE)


def default_prompt(key: str | None, model) -> str:
    """What a new session on `model`, loaded from `key`, starts from."""
    return DEFAULT_PROMPTS[teaching_language(key, model)]
