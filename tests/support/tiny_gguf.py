"""What the tiny test GGUF files share: their byte-level BPE vocabulary (three ChatML control
tokens, the 256 bytes in GPT-2's spelling and five merges) and the writing of a tensor in a
type (no pytest here: tools/ import it too)."""

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import quants

from explorer.core.tokens.bpe import byte_to_unicode

CONTROL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MERGES = ["Ġ t", "h e", "Ġt he", "Ġ a", "i n"]
TOKENS = CONTROL + [byte_to_unicode()[b] for b in range(256)] + ["Ġt", "he", "Ġthe", "Ġa", "in"]
VOCAB = len(TOKENS)


def add_tensor(writer, name: str, a: np.ndarray, qtype, dequantised: bool = False) -> None:
    """`a` (float32) stored in `qtype`; `dequantised`: rounded to its blocks, then stored
    back as float32 (the same weights for a float computation)."""
    if qtype == Q.F32:
        writer.add_tensor(name, a)
    elif qtype == Q.F16:
        writer.add_tensor(name, a.astype(np.float16))
    elif dequantised:
        writer.add_tensor(name, quants.dequantize(quants.quantize(a, qtype), qtype).astype(np.float32))
    else:
        writer.add_tensor(name, quants.quantize(a, qtype), raw_dtype=qtype)


def write_out(writer, path):
    """The header, metadata and tensors written, the file closed; -> path."""
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
