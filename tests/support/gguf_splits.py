"""Split models as llama.cpp's gguf-split writes them (`NAME-00001-of-00003.gguf`: the
metadata in part 1, every part with split.no, split.count and split.tensors.count), made by
the `gguf` package's own writer (its split_max_tensors writes the same layout)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import gguf

import gguf_files


def write_split_llama(path, tensors, max_tensors: int, **kwargs) -> list[Path]:
    """The tiny llama file of `gguf_files.write_llama`, split `max_tensors` tensors a part;
    the parts' paths, part 1 first."""
    real = gguf.GGUFWriter
    gguf.GGUFWriter = partial(real, split_max_tensors=max_tensors)
    try:
        gguf_files.write_llama(path, tensors, **kwargs)
    finally:
        gguf.GGUFWriter = real
    path = Path(path)
    return sorted(path.parent.glob(f"{path.stem}-*-of-*.gguf"))
