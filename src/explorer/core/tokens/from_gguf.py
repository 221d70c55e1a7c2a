"""The tokenizer a GGUF file stores in its `tokenizer.ggml.*` metadata, as a Vocabulary."""

from __future__ import annotations

import numpy as np

from ..gguf.reader import GGUFError, GGUFFile
from .bpe import BPEVocabulary, template_system_prompt
from .pretokenize import PRE_TOKENIZERS
from .specials import (CONTROL, END_OF_GENERATION, FIM_ENDING, FIM_MIDDLE, FIM_PREFIX, FIM_SUFFIX,
                       IN_TEXT_TYPES, NORMAL, USER_DEFINED, phi3_rstrip)
from .spm import SentencePieceVocabulary
from .vocab import Vocabulary

TOKENIZERS = ("gpt2", "llama")   # tokenizer.ggml.model: byte-level BPE, SentencePiece-style
# control tokens that end a turn, as llama.cpp also stops on them when the file names no
# end-of-turn id (SmolLM2: EOS is <|im_end|>, a plain continuation may end <|endoftext|>)
END_MARKERS = ("<|endoftext|>", "<|im_end|>", "<|eot_id|>", "<|end_of_text|>", "<end_of_turn>", "<|end|>")


def vocabulary_from_gguf(gf: GGUFFile) -> Vocabulary:
    """The tokenizer stored in the file's `tokenizer.ggml.*` metadata: byte-level BPE
    ("gpt2": SmolLM2's, Qwen's, Llama 3's) or SentencePiece-style ("llama": Gemma's, Phi-3's,
    Mistral's), with llama.cpp's defaults for the keys a file leaves out."""
    kind = gf.require("tokenizer.ggml.model")
    if kind not in TOKENIZERS:
        raise GGUFError(f"{gf.path}: tokenizer {kind!r} is not supported "
                        f"(supported: {', '.join(TOKENIZERS)})")
    tokens = gf.require("tokenizer.ggml.tokens")
    types = gf.get("tokenizer.ggml.token_type")
    if types is not None and len(types) != len(tokens):
        raise GGUFError(f"{gf.path}: tokenizer.ggml.token_type has {len(types)} entries for "
                        f"{len(tokens)} tokens")
    types = np.full(len(tokens), NORMAL) if types is None else np.asarray(types)
    specials = _special_ids(gf, tokens, types)
    by_text, ends = _marked_by_text(tokens, specials)
    add_eos = bool(gf.get("tokenizer.ggml.add_eos_token", False))
    in_text = sorted(set(np.flatnonzero(np.isin(types, IN_TEXT_TYPES)).tolist()) | set(by_text))
    rstrip = phi3_rstrip(gf.get("general.name", ""), tokens, in_text)
    template = gf.get("tokenizer.chat_template")
    template = template if isinstance(template, str) and template.strip() else None
    if kind == "llama":
        scores = gf.require("tokenizer.ggml.scores")
        if len(scores) != len(tokens):
            raise GGUFError(f"{gf.path}: tokenizer.ggml.scores has {len(scores)} entries for "
                            f"{len(tokens)} tokens")
        return SentencePieceVocabulary.build(
            tokens, scores, types, specials, add_bos=bool(gf.get("tokenizer.ggml.add_bos_token", True)),
            add_eos=add_eos, add_space_prefix=bool(gf.get("tokenizer.ggml.add_space_prefix", True)),
            control=by_text, ends=ends, rstrip=rstrip, chat_template=template)
    pre_name = gf.get("tokenizer.ggml.pre") or "default"      # llama.cpp reads an empty name as the default
    pre = PRE_TOKENIZERS.get(pre_name)
    if pre is None:
        raise GGUFError(f"{gf.path}: pre-tokenizer {pre_name!r} (tokenizer.ggml.pre) is not supported "
                        f"(supported: {', '.join(PRE_TOKENIZERS)})")
    merges = gf.require("tokenizer.ggml.merges")
    return BPEVocabulary.build(tokens, merges, specials, in_text, pre=pre,
                               chat_system=template_system_prompt(template),
                               add_bos=bool(gf.get("tokenizer.ggml.add_bos_token", pre.add_bos)), add_eos=add_eos,
                               shown=set(np.flatnonzero(types == USER_DEFINED).tolist()) - set(by_text), ends=ends,
                               rstrip=rstrip, chat_template=template)


def _special_ids(gf: GGUFFile, tokens, types) -> dict:
    """{role: id} of the tokens the file names (bos, eos, eot, ...), plus an end-of-turn
    control token (END_MARKERS) when it names none."""
    specials = {}
    for role in ("bos", "eos", "eot", "eom", "pad", "unknown"):
        tid = gf.get(f"tokenizer.ggml.{role}_token_id")
        if tid is not None and 0 <= int(tid) < len(tokens):
            specials["unk" if role == "unknown" else role] = int(tid)
    if "eot" not in specials:
        marked = [i for i in np.flatnonzero((types == CONTROL) | (types == USER_DEFINED)).tolist()
                  if tokens[i] in END_MARKERS and i != specials.get("eos")]
        if marked:
            specials["eot"] = marked[0]
    return specials


def _marked_by_text(tokens, specials: dict) -> tuple[list[int], list[int]]:
    """(ids llama.cpp makes control tokens by their text, ids that end generation by their
    text): every END_OF_GENERATION token, the fill-in-the-middle markers, and the EOS, EOT
    and EOM ids (llama-vocab.cpp's auto-detection, done whatever type the file gives them)."""
    index = dict(zip(tokens, range(len(tokens))))     # text -> id (llama.cpp's token_to_id: the last)
    ends = {index[t] for t in END_OF_GENERATION if t in index}
    fim = [next((index[t] for t in names if t in index), None)
           for names in (FIM_PREFIX, FIM_SUFFIX, FIM_MIDDLE, *FIM_ENDING.values())]
    ends |= {i for i in fim[3:] if i is not None}
    control = ends | {i for i in fim if i is not None}
    ends |= {specials[role] for role in ("eos", "eot", "eom") if role in specials}
    return sorted(control), sorted(ends)
