"""The tokenizer a GGUF file stores in its `tokenizer.ggml.*` metadata, as a Vocabulary."""

from __future__ import annotations

import numpy as np

from ..gguf.reader import GGUFError, GGUFFile
from .bpe import PRE_TOKENIZERS, BPEVocabulary, template_system_prompt
from .spm import CONTROL, USER_DEFINED, SentencePieceVocabulary
from .vocab import Vocabulary

TOKENIZERS = ("gpt2", "llama")   # tokenizer.ggml.model: byte-level BPE, SentencePiece-style
# control tokens that end a turn, as llama.cpp also stops on them when the file names no
# end-of-turn id (SmolLM2: EOS is <|im_end|>, a plain continuation may end <|endoftext|>)
END_MARKERS = ("<|endoftext|>", "<|im_end|>", "<|eot_id|>", "<|end_of_text|>", "<end_of_turn>", "<|end|>")


def vocabulary_from_gguf(gf: GGUFFile) -> Vocabulary:
    """The tokenizer stored in the file's `tokenizer.ggml.*` metadata: byte-level BPE
    ("gpt2", SmolLM2's) or SentencePiece-style ("llama", Gemma's)."""
    kind = gf.require("tokenizer.ggml.model")
    if kind not in TOKENIZERS:
        raise GGUFError(f"{gf.path}: tokenizer {kind!r} is not supported "
                        f"(supported: {', '.join(TOKENIZERS)})")
    tokens = gf.require("tokenizer.ggml.tokens")
    types = gf.get("tokenizer.ggml.token_type")
    specials = _special_ids(gf, tokens, types)
    if kind == "llama":
        scores = gf.require("tokenizer.ggml.scores")
        if types is None or len(scores) != len(tokens) or len(types) != len(tokens):
            raise GGUFError(f"{gf.path}: tokenizer.ggml.scores and token_type must have one entry "
                            f"per token ({len(tokens)})")
        return SentencePieceVocabulary.build(tokens, scores, types, specials,
                                             add_bos=bool(gf.get("tokenizer.ggml.add_bos_token", True)))
    pre = gf.get("tokenizer.ggml.pre", "gpt-2")
    if pre not in PRE_TOKENIZERS:
        raise GGUFError(f"{gf.path}: pre-tokenizer {pre!r} is not supported "
                        f"(supported: {', '.join(PRE_TOKENIZERS)})")
    merges = gf.require("tokenizer.ggml.merges")
    control = [] if types is None else np.flatnonzero((types == CONTROL) | (types == USER_DEFINED)).tolist()
    return BPEVocabulary.build(tokens, merges, specials, control, split_digits=PRE_TOKENIZERS[pre],
                               chat_system=template_system_prompt(gf.get("tokenizer.chat_template")))


def _special_ids(gf: GGUFFile, tokens, types) -> dict:
    """{role: id} of the tokens the file names (bos, eos, eot, ...), plus an end-of-turn
    control token (END_MARKERS) when it names none."""
    specials = {}
    for role in ("bos", "eos", "eot", "eom", "pad", "unknown"):
        tid = gf.get(f"tokenizer.ggml.{role}_token_id")
        if tid is not None and 0 <= int(tid) < len(tokens):
            specials["unk" if role == "unknown" else role] = int(tid)
    if "eot" not in specials and types is not None:
        marked = [i for i in np.flatnonzero((types == CONTROL) | (types == USER_DEFINED)).tolist()
                  if tokens[i] in END_MARKERS and i != specials.get("eos")]
        if marked:
            specials["eot"] = marked[0]
    return specials
