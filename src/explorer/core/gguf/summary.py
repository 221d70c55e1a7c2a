"""What a GGUF file's header says about the model in it, without reading a weight: its
architecture and family, parameters, quantisation, size, the memory it will need here, and
whether this explorer runs it (and if not, why, in words a teacher understands). The model
pickers list these; the window refuses a model too big for the memory left."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from .architectures import ARCHITECTURES, FAMILIES, supported_families
from .blocks import MAPPED_TYPES, BlockMatrix
from .quant_types import TYPES, type_name
from .checks import check_model_metadata
from .reader import GGUFError, GGUFFile
from ..limits import MAX_NEW_TOKENS, MAX_PROMPT_TOKENS

# general.file_type (llama.cpp's llama_ftype, llama.h): the quantisation a file was made
# with, as download pages name it ("Q4_K_M": mostly Q4_K, some Q6_K)
FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
              11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S",
              17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS",
              23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S",
              29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0"}

UNKNOWN_KEPT_BYTES = 4.0      # a type not read here: as float32, the most a weight can cost
KV_BYTES = 4                  # the K/V cache holds float32
# What a load adds beside the weights, measured (resident memory after load_llama, in a fresh
# process, less the weights above): SmolLM2 (49,152 tokens) 76 MB more, Gemma 3 (262,144) 126 MB:
# the compiled loops the load brings in, and the tokenizer's tables, per token
LOADER_BYTES = 65_000_000
TOKEN_BYTES = 235
# the longest run the window allows: the K/V cache of its last step holds this many positions
CONTEXT = MAX_PROMPT_TOKENS + MAX_NEW_TOKENS

# what else a GGUF file can hold, by what its header says, and the sentence for it
ADAPTER = ("A LoRA adapter: a small set of changes to another model's weights, not a model that runs "
           "on its own; open the base model it was made for")
VOCABULARY = "A vocabulary-only file: a tokenizer without any weights, not a model that runs"
EMBEDDING = ("An embedding model: it turns a whole text into one vector (for search), it does not "
             "predict the next token")
PROJECTOR = ("A vision projector (mmproj): the image part of a vision model, used beside its language "
             "model, not a model that runs on its own")
NOT_MODELS = (ADAPTER, VOCABULARY, EMBEDDING, PROJECTOR)


@dataclass(frozen=True)
class Summary:
    """One GGUF file as a list of models shows it; `problem` None means it runs here."""

    path: Path
    architecture: str | None     # general.architecture
    family: str                  # what the model is called ("Qwen 2.5", else the architecture)
    parameters: int              # weights in all tensors
    quantisation: str            # "Q4_K_M", or the type most weights have
    file_size: int               # bytes, all parts of a split model
    memory: int                  # bytes this explorer needs to run it (`memory_needed`)
    problem: str | None = None   # why it does not run here, as a sentence
    memory_in_place: int = 0     # ... with the matrices of `blocks.MAPPED_TYPES` read in place (their file bytes)

    @property
    def supported(self) -> bool:
        return self.problem is None

    @property
    def not_a_model(self) -> bool:
        """An adapter, a vocabulary, an embedding model or a projector: no language model at all."""
        return self.problem in NOT_MODELS


@lru_cache(maxsize=None)
def kept_bytes(type_name: str) -> float:
    """Bytes the loader keeps per weight of a tensor type (`llama.llama_params`), measured
    on the arrays it builds from one row of blocks: float types become float32; a
    quantised type is rewritten into its layout's blocks (`quant_types.Layout`, with a
    K-quant's unmultiplied scales). A type not read here counts as float32."""
    qtype = TYPES.get(type_name)
    if qtype is None:
        return UNKNOWN_KEPT_BYTES
    cols = 256                                   # a row of whole blocks for every type
    raw = np.zeros(cols // qtype.block * qtype.block_bytes, np.uint8)
    if qtype.layout is None:
        return qtype.dequantise(raw).nbytes / cols
    return BlockMatrix.from_gguf(raw, qtype.ggml_id, (1, cols)).nbytes / cols


def family_name(arch: str) -> str:
    """The name a teacher knows an architecture's models by (else the architecture's own name)."""
    return FAMILIES.get(arch, arch)


def memory_needed(weight_bytes: int, layers: int, kv_heads: int, head_dim: int, context: int,
                  vocab: int) -> int:
    """Bytes to run a model: its weights as the loader keeps them, the K/V cache of
    `context` positions (every layer a K and a V row of kv_heads x head_dim float32s per
    position), the compiled loops and the tokenizer's tables of `vocab` tokens. The
    activations of one step are small beside these and not counted."""
    return int(weight_bytes + layers * 2 * kv_heads * head_dim * KV_BYTES * context
               + LOADER_BYTES + vocab * TOKEN_BYTES)


def summarize(gf: GGUFFile) -> Summary:
    """What `gf`'s metadata and tensor table say (no tensor is read)."""
    arch = gf.get("general.architecture")
    arch = arch if isinstance(arch, str) else None
    infos = list(gf.tensors.values())
    weights = sum(info.n_elements for info in infos)
    kept = sum(info.n_elements * kept_bytes(info.type_name) for info in infos)
    in_place = sum(info.nbytes if info.type_name in MAPPED_TYPES else info.n_elements * kept_bytes(info.type_name)
                   for info in infos)
    layers, kv_heads, head_dim = _cache_shape(gf, arch)
    context = min(CONTEXT, _whole(gf.get(f"{arch}.context_length"), CONTEXT))
    tokens = gf.get("tokenizer.ggml.tokens")
    vocab = len(tokens) if isinstance(tokens, list) else 0
    return Summary(gf.path, arch, family_name(arch) if arch else "unknown", weights, quantisation(gf),
                   gf.file_size, memory_needed(round(kept), layers, kv_heads, head_dim, context, vocab),
                   problem(gf, arch), memory_needed(round(in_place), layers, kv_heads, head_dim, context, vocab))


def summarize_file(path) -> Summary:
    """`summarize` of the file at `path`; a file that cannot be opened (not a GGUF, damaged,
    a split model's part missing) is a Summary whose problem is the reader's message."""
    try:
        gf = GGUFFile(path)
    except GGUFError as exc:
        try:
            size = Path(path).stat().st_size
        except OSError:
            size = 0
        return Summary(Path(path), None, "unknown", 0, "", size, 0, str(exc))
    return summarize(gf)


def quantisation(gf: GGUFFile) -> str:
    """general.file_type's name (what a download page calls it), else the type that holds
    the most weights among the matrices ("" for a file without tensors)."""
    named = FILE_TYPES.get(gf.get("general.file_type"))
    if named:
        return named
    counts = Counter()
    for info in gf.tensors.values():
        if len(info.ne) >= 2:
            counts[info.type_name] += info.n_elements
    return counts.most_common(1)[0][0] if counts else ""


def problem(gf: GGUFFile, arch: str | None) -> str | None:
    """Why this explorer does not run the model in `gf`, as a sentence; None if it does."""
    kind = _what_else(gf, arch)
    if kind:
        return kind
    if arch is None:
        return "It names no architecture (general.architecture): not a model this explorer runs."
    if arch not in ARCHITECTURES:
        family = "" if family_name(arch) == arch else f" ({family_name(arch)})"
        return (f"Architecture {arch!r}{family} is not one this explorer runs; it runs "
                f"{supported_families()}.")
    try:
        check_model_metadata(gf)        # a damaged size or count: the reader's words for it
    except GGUFError as exc:
        return str(exc)
    for info in gf.tensors.values():
        if info.type_name not in TYPES:
            return (f"Tensor {info.name} is stored as {type_name(info.ggml_type)}, which this explorer cannot "
                    f"read (it reads {', '.join(TYPES)}); a download quantised with one of those works.")
    return None


def _what_else(gf: GGUFFile, arch: str | None) -> str | None:
    """The sentence for a file that is not a language model (an adapter, a vocabulary, an
    embedding model, a vision projector), else None."""
    kind = gf.get("general.type")
    if kind == "adapter" or any(key.startswith("adapter.") for key in gf.metadata):
        return ADAPTER
    if kind == "vocab" or not gf.tensors:
        return VOCABULARY
    if kind == "mmproj" or arch == "clip":
        return PROJECTOR
    if kind == "embedding" or (arch and f"{arch}.pooling_type" in gf.metadata):
        return EMBEDDING
    return None


def _cache_shape(gf: GGUFFile, arch: str | None) -> tuple[int, int, int]:
    """(layers, K/V heads, head size) of the K/V cache, from the metadata (0s if absent). A
    file may list K/V heads per layer: the largest counts."""
    layers = _whole(gf.get(f"{arch}.block_count"), 0)
    heads = gf.get(f"{arch}.attention.head_count")
    kv = gf.get(f"{arch}.attention.head_count_kv", heads)
    heads, kv = (int(np.max(x)) if np.size(x) and _numeric(x) else 0 for x in (heads, kv))
    d = _whole(gf.get(f"{arch}.embedding_length"), 0)
    head_dim = _whole(gf.get(f"{arch}.attention.key_length"), d // heads if heads else 0)
    return layers, kv, head_dim


def _numeric(x) -> bool:
    return np.asarray(x).dtype.kind in "iu"


def _whole(value, default: int) -> int:
    """`value` if it is a whole number >= 1, else `default` (a damaged key is the loader's to name)."""
    return int(value) if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= 1 \
        else default
